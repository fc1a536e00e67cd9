// Alibaba block traces (2020): CSV lines
//   device_id,opcode,offset,length,timestamp
// opcode R or W, offset and length in bytes, timestamp in Unix microseconds.
//
// Clock REALTIME. Each device_id becomes a device named after it.
#pragma once

#include <span>

#include "convert/import/importer.h"
#include "convert/import/input.h"

namespace iotape::convert {

// Throws TraceError "FILE:LINE: why" on the first malformed line.
blockevents::ImportReport import_alibaba(std::span<const Input> inputs, const blockevents::ImportOptions& options,
                                         format::TraceWriter& out);

}  // namespace iotape::convert

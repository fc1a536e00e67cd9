// Tencent CBS block traces (SNIA IOTTA): CSV lines
//   Timestamp,Offset,Size,IOType,VolumeID
// Timestamp in Unix seconds, Offset and Size in 512 B sectors, IOType 0 read
// or 1 write. Records are not in time order; they are sorted.
//
// Clock REALTIME. Each VolumeID becomes a device named after it.
#pragma once

#include <span>

#include "convert/import/importer.h"
#include "convert/import/input.h"

namespace iotape::convert {

// Throws TraceError "FILE:LINE: why" on the first malformed line.
blockevents::ImportReport import_tencent(std::span<const Input> inputs, const blockevents::ImportOptions& options,
                                         format::TraceWriter& out);

}  // namespace iotape::convert

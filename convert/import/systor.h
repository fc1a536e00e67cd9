// SNIA SYSTOR '17 traces (Fujitsu VDI): CSV with the header
//   Timestamp,Response,IOType,LUN,Offset,Size
// Timestamp in Unix seconds with decimals, Response in seconds, IOType R or W
// (blank in some records: those are skipped and counted), Offset and Size in
// bytes. Records are not in time order; they are sorted.
//
// Clock REALTIME; completion = issue + response. Each LUN becomes a device
// named after it.
#pragma once

#include <span>

#include "convert/import/importer.h"
#include "convert/import/input.h"

namespace iotape::convert {

// Throws TraceError "FILE:LINE: why" on the first malformed line.
blockevents::ImportReport import_systor(std::span<const Input> inputs, const blockevents::ImportOptions& options,
                                        format::TraceWriter& out);

}  // namespace iotape::convert

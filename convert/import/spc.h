// SPC trace format (UMass Financial and WebSearch traces): CSV lines
//   ASU,LBA,Size,Opcode,Timestamp[,more fields]
// LBA in 512 B blocks, Size in bytes, Opcode r/R or w/W, Timestamp in seconds
// since the trace start. Optional fields after Timestamp are ignored.
//
// Clock RELATIVE. Each ASU becomes a device named after it.
#pragma once

#include <span>

#include "convert/import/importer.h"
#include "convert/import/input.h"

namespace iotape::convert {

// Throws TraceError "FILE:LINE: why" on the first malformed line.
blockevents::ImportReport import_spc(std::span<const Input> inputs, const blockevents::ImportOptions& options,
                                     format::TraceWriter& out);

}  // namespace iotape::convert

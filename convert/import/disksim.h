// DiskSim ASCII traces (also read by MQSim): blank-separated lines
//   arrival_time_ms devno blkno size_in_blocks flags
// with arrival time in milliseconds (decimals allowed), blocks of 512 B and
// flags bit 0 set for a read, clear for a write.
//
// Clock RELATIVE. Each devno becomes a device named after it.
#pragma once

#include <span>

#include "convert/import/importer.h"
#include "convert/import/input.h"

namespace iotape::convert {

// Throws TraceError "FILE:LINE: why" on the first malformed line.
blockevents::ImportReport import_disksim(std::span<const Input> inputs, const blockevents::ImportOptions& options,
                                         format::TraceWriter& out);

}  // namespace iotape::convert

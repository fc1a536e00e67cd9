// Raw blktrace binary traces (struct blk_io_trace, include/uapi/linux/
// blktrace_api.h): the per-CPU PREFIX.blktrace.N files of one run, read
// together and merged by event time, or one merged `blkparse -d` dump. Either
// byte order is accepted (found from each input's first magic).
//
// Events are folded into one IO per completed request by the block IO
// assembler (block_io_assembler.h), which also names the devices "MAJOR,MINOR".
//
// Clock RELATIVE (the kernel's trace clock, unchanged).
#pragma once

#include <span>

#include "convert/import/importer.h"
#include "convert/import/input.h"

namespace iotape::convert {

// Throws TraceError "FILE: byte N: why" on a malformed or truncated record.
blockevents::ImportReport import_blktrace(std::span<const Input> inputs, format::TraceWriter& out);

}  // namespace iotape::convert

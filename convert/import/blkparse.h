// blkparse's default text output (`blkparse -i TRACE`), the form blktrace
// traces are most often shared in. Each event line
//   MAJ,MIN CPU SEQ SECONDS.NANOS PID ACTION RWBS DETAILS
// becomes the event it prints, and the events are folded into IOs by the same
// block IO assembler as raw blktrace input (block_io_assembler.h), so both
// give the same IOs. What the text cannot say: cgroup ids (not printed), the
// sector of zero-length requests such as flushes (taken as 0), and times
// before the first event (blkparse prints times since it).
//
// Accepted besides events: remap lines "A ... <- (M,m) SECTOR", split lines
// "X SECTOR / SECTOR", scheduler messages ("m N ..."), [comm] and [error]
// tails, the "(elapsed)" of `blkparse -t`, the per-CPU and total summary at
// the end, and lines starting with '#' (column headings and rules some tools
// print). RWBS letters of every kernel and blkparse version are read, the B
// (barrier) of old kernels as a preflush. Events need not be in time order
// (text printed CPU by CPU): each input is sorted by time in bounded memory
// (ImportOptions::sort_run_ios, spill_dir). Inputs are read one after another.
//
// Clock RELATIVE: nanoseconds since the first event blkparse printed.
#pragma once

#include <span>

#include "convert/import/importer.h"
#include "convert/import/input.h"

namespace iotape::convert {

// Throws TraceError "FILE:LINE: why" on the first malformed line.
blockevents::ImportReport import_blkparse(std::span<const Input> inputs, const blockevents::ImportOptions& options,
                                          format::TraceWriter& out);

}  // namespace iotape::convert

// Raw blktrace binary traces (struct blk_io_trace, include/uapi/linux/
// blktrace_api.h): the per-CPU PREFIX.blktrace.N files of one run, read
// together and merged by event time, or one merged `blkparse -d` dump. Either
// byte order is accepted (found from each input's first magic).
//
// Events are folded into one IO per completed request:
//   Q (bio queued)    queue time, pid, process name (from notify records), cgroup, cpu
//   I (inserted)      queue time when no Q was seen
//   M / F (merges)    a bio extends a queued request at its back / front
//   X (split)         a queued bio is cut in two
//   A (remap)         a queued bio moves to (device, sector) of a lower layer
//   D (issued)        issue time; op and flags of the request as dispatched
//   R (requeued)      back to the queue, to be issued again
//   C (completed)     completion time and status; the IO is written
// Requests are matched by (device, sector). Events that match nothing are
// counted in the report's notes ("3 C events matched no D"). Passthrough (PC)
// requests are not IOs of the block layer's address space and are skipped.
//
// Clock RELATIVE (the kernel's trace clock, unchanged). Each major:minor with
// an IO becomes a device named "MAJOR,MINOR".
#pragma once

#include <span>

#include "traces/import/importer.h"
#include "traces/import/input.h"

namespace iotape {

// Throws TraceError "FILE: byte N: why" on a malformed or truncated record.
ImportReport import_blktrace(std::span<const Input> inputs, TraceWriter& out);

}  // namespace iotape

// The blktrace back end of `iotape record`: the kernel's ftrace blk tracer,
// read a page at a time from each CPU's trace_pipe_raw, its records folded
// into IOs by the block-event assembler (blockevents). For kernels or
// machines where the eBPF observer cannot load. It selects the global blk
// tracer for its life: one at a time on a machine, and never beside another
// user of the tracer.
#pragma once

#include <memory>

#include "observer/backend.h"

namespace iotape::capture {

// Sets the tracer up for `options`' devices; throws std::runtime_error with
// the reason when it cannot (tracefs missing, tracer busy). The back end is
// used from one thread.
std::unique_ptr<observer::Backend> make_blktrace_backend(const observer::BackendOptions& options);

}  // namespace iotape::capture

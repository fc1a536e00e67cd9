// A capture back end: one way of observing the block IOs of chosen devices.
//
// The recorder creates one, calls poll() until it is told to stop, then
// destroys it. Construction sets the kernel up and throws std::runtime_error
// with the reason when it cannot; the destructor restores every kernel
// setting it changed, whatever happened in between.
//
// Threads: a back end is used by one thread (the recorder's, or the replay's
// device-time joiner); its BPF programs run in the kernel on every CPU.
#pragma once

#include <time.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "format/io.h"
#include "iotape/v1/trace.pb.h"
#include "observer/devices.h"

namespace iotape::observer {

struct BackendOptions {
  std::vector<BlockDevice> devices;  // IOs carry the index into this list
  uint32_t pid = 0;                  // only IOs submitted by this process (0 = all)
  std::string comm;                  // only IOs submitted by a thread of this name ("" = all)
  uint64_t buffer_bytes = 0;         // kernel-to-user buffer; 0 = the back end's default
  bool keep_anonymous = false;       // with pid/comm: also requests without a submitter (kernel flushes)
  // blktrace: only the tracer's issue (D) and completion (C) events, for a
  // third of its cost on the IO path; IOs have no queue time or submitter.
  bool issue_complete_only = false;
};

using IoSink = std::function<void(const format::Io&)>;

class Backend {
 public:
  virtual ~Backend() = default;
  virtual v1::Source source() const = 0;
  // How it captures, for TraceHeader.source_detail: "ebpf:tp_btf", "blktrace:ftrace-raw", ...
  virtual std::string detail() const = 0;
  // Header metadata on what this kernel let it hook: capture.hooks, and
  // capture.unavailable naming what the trace lacks for it (queue times, ...).
  virtual std::map<std::string, std::string> metadata() const { return {}; }
  // Waits up to timeout_ms for IOs and passes each completed IO to `sink`.
  // Returns early (without error) when a signal interrupts the wait.
  virtual void poll(int timeout_ms, const IoSink& sink) = 0;
  // Passes `sink` every IO completed so far, as poll(0) does, and returns a
  // time no IO still to come was issued before, among those issued at or
  // after `floor_ns`: the issue time of the oldest request in flight, or
  // about now (less kStampSlackNs) when none is. Never below `floor_ns`. A
  // request issued before `floor_ns` and still in flight (a retried or stuck
  // one, or a completion the kernel did not deliver) is not waited for: it
  // comes later, if at all, and the caller writes it late. Costs a scan of
  // the in-flight tables: call it when about to flush, not on every poll.
  virtual int64_t oldest_outstanding_ns(int64_t floor_ns, const IoSink& sink) = 0;
  // Events lost so far (buffer overruns): the trace stores the count.
  virtual uint64_t dropped() = 0;
  // Completions that matched no submission (in flight when the capture began,
  // or a submission event the kernel did not deliver), and their bytes: they
  // cannot be placed in time, so they are counted, not passed on as IOs.
  virtual uint64_t unmatched() { return 0; }
  virtual uint64_t unmatched_bytes() { return 0; }
  // Stops capturing and passes `sink` the IOs issued but not completed so far
  // (in flight at the stop, or whose completion the kernel never delivered).
  virtual void finish(const IoSink& /*sink*/) {}
  // IOs recorded without their completion (see finish()).
  virtual uint64_t uncompleted() { return 0; }
};

// The eBPF observer (iotrace.bpf.c): throws std::runtime_error with the
// reason when the program cannot load or attach on this kernel.
std::unique_ptr<Backend> make_ebpf_backend(const BackendOptions& options);

// How long before it can be seen an event may carry its time: the kernel
// reads the clock, then stores the entry or writes the event. A back end that
// sees nothing in flight at time t vouches only for IOs issued before
// t - kStampSlackNs.
inline constexpr int64_t kStampSlackNs = 1'000'000;

}  // namespace iotape::observer

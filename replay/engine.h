// The io_uring engine: issues replay IOs on the targets and reports how each
// ended. Single-threaded: the thread that constructs it is the only one that
// may use it. The caller decides what to issue and when; the engine decides
// what a completion means (Completion::status), the same for every caller.
//
// Submit as soon as an IO may go rather than collecting a batch: the device
// (a loop device's worker above all) starts on it while the next one is
// prepared, where a batch would wait behind the block layer's plug.
//
// Write data comes from one registered buffer prefilled once (random by
// default), read data lands in another; IOs only share them, so memory does
// not grow with the queue depth. Each write starts at a different 4 KiB
// offset in a pool larger than the largest IO, so consecutive writes do not
// carry identical data. Targets are registered files.
//
// RingSetup (replay/options.h) chooses polled completions (IOPOLL: this
// thread polls the device whenever it enters the kernel, and waiting for a
// completion spins) and a kernel thread that submits (SQPOLL). With IOPOLL,
// an operation other than a read or a write completes at once with
// -EOPNOTSUPP: the kernel polls only those.
//
// The ring and the buffers are the engine's own, released when it is
// destroyed (IOs still in flight are abandoned); it moves, it does not copy.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "host/clocks.h"
#include "replay/options.h"
#include "replay/schedule.h"
#include "replay/target.h"

namespace iotape::replay {

// A finished IO as the engine reads it.
struct Completion {
  uint32_t tag;  // the caller's, from prepare()
  // 0: done in full; else a negative errno. A read or write that moved fewer
  // bytes than asked is -EIO: the rest of it was not done.
  int32_t status;
  int64_t complete_ns;  // host::monotonic_ns() when reap() found it
};

class UringEngine {
 public:
  // `max_length`: the largest IO; `max_in_flight`: the most IOs outstanding.
  // REQUIRES: `targets` outlive the engine, their fds open. Throws IoError,
  // naming the flag when the kernel refuses the ring `ring` asks for.
  UringEngine(const std::vector<Target>& targets, uint64_t max_length, uint32_t max_in_flight, DataPattern data,
              RingSetup ring = {});
  ~UringEngine();
  UringEngine(UringEngine&&) noexcept;
  UringEngine& operator=(UringEngine&&) noexcept;

  // Queues `io` under `tag` for the next submit(). Operations the target
  // cannot express complete at once with a negative errno (see reap()).
  // Returns true when `io` was carried out during the call (a discard by
  // ioctl, on kernels before io_uring's discard command): its issue time is
  // before the call returned, not at submit().
  // REQUIRES: io.length <= max_length.
  bool prepare(const ReplayIo& io, uint32_t tag);
  // Whether prepare() carries `io` out during the call.
  bool runs_at_once(const ReplayIo& io) const;
  // Submits everything prepared; returns the time it was handed to the
  // kernel (monotonic_ns()), the IOs' issue time.
  int64_t submit();
  // Appends the completions that are ready (without waiting) to `out`.
  void reap(std::vector<Completion>& out);
  // Blocks until a completion is ready or `deadline_ns` (monotonic) passes:
  // first polls for up to `poll_ns`, then sleeps. Waking a sleeping thread
  // costs more than a fast device's whole service time on a VM (about 10 us
  // here), so a completion expected soon is polled for, yielding the CPU to
  // any thread that waits for it; one that is not (nothing in flight, a slow
  // device) is slept for, on a timer without slack. With IOPOLL it polls the
  // device until either comes, whatever `poll_ns`. Returns whether the poll
  // found a completion.
  bool wait(int64_t deadline_ns, int64_t poll_ns = 0);

 private:
  struct Impl;  // the ring and the buffers: liburing stays out of this header
  std::unique_ptr<Impl> impl_;
};

}  // namespace iotape::replay

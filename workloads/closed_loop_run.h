// Measured closed-loop phases for `iotape bench` and `iotape review`: a fixed
// number of IOs kept in flight on the replay module's engine, every IO written
// to a result trace, the phase's figures counted on the way.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "format/writer.h"
#include "replay/closed_loop.h"
#include "replay/saturation.h"
#include "replay/target.h"
#include "stats/histogram.h"

namespace iotape::workloads {

// The result trace of one measured phase: every IO, times from the phase
// start, in the format `iotape report` and `iotape compare` read. Its
// metadata names the test ("workload", "bench.test") and the phase.
class PhaseTrace {
 public:
  // `label`: the "target" metadata value (the bar label in `compare`).
  PhaseTrace(const std::string& path, const replay::Target& t, const std::string& test, const std::string& phase,
             const std::string& label);
  void add(const replay::ReplayIo& io, int64_t issue, int64_t complete, int32_t status);
  const std::string& path() const { return path_; }
  void close() { writer_.close(); }

 private:
  std::string path_;
  format::TraceWriter writer_;
  int64_t start_;
  uint64_t next_index_ = 0;
};

struct PhaseStats {
  uint64_t ios = 0;
  uint64_t bytes = 0;
  int64_t duration_ns = 0;
  std::vector<uint64_t> ios_per_second;  // completions in each full second of the phase
  stats::LogLinearHistogram latency;     // submission to reap, ns
  uint32_t issue_threads = 1;            // threads the loop ran on, each with a ring of its own
  replay::ThreadUse issue_thread;        // the busiest of them over the phase
  double device_busy = 1;                // the busiest target device's io_ticks share (1: no statistics)
  double host_share() const { return replay::closed_loop_host_share(issue_thread, device_busy); }
  bool host_limited() const { return replay::closed_loop_host_limited(issue_thread, device_busy); }
  double MBps() const { return duration_ns ? bytes * 1e3 / duration_ns : 0; }
  double iops() const { return duration_ns ? ios * 1e9 / duration_ns : 0; }
};

using NextIo = std::function<bool(replay::ReplayIo&)>;

// Keeps `qd` IOs from `next` in flight until it has no more, `max_ns` passed
// or `stop` (when given) is set. Writes carry `data`. Throws IoError when any
// IO failed: the replay engine's rule, so a short transfer fails with EIO here
// as in a replay. On `threads` threads (at most qd), each with a ring of its
// own and its share of the depth (qd / threads, the first qd % threads one
// more), taking IOs from `next` in turn (called under a lock, one thread at a
// time): so the total in flight never exceeds qd, and one thread's ceiling
// (its CPU per IO) is not the phase's. `ring`: each thread's (replay::UringEngine).
PhaseStats run_closed_loop(const std::vector<replay::Target>& targets, uint32_t qd, uint64_t max_length,
                           const NextIo& next, int64_t max_ns, PhaseTrace* trace, replay::DataPattern data = {},
                           const std::atomic<bool>* stop = nullptr, uint32_t threads = 1, replay::RingSetup ring = {});

// Issue threads for a closed loop at `qd`: `requested` (at most qd), or with
// 0 one thread per 8 IOs in flight, up to the CPUs this process may run on.
// A thread costs 1.5-2.5 us of CPU per IO, so it keeps up with 400-650K IOPS:
// at QD8 and below no current drive needs more (each IO takes 10 us or more),
// at QD32 a fast NVMe drive does 1-2.5M.
uint32_t closed_loop_threads(uint32_t requested, uint32_t qd);

// One discard of the first `span` bytes of the (single) target: the state a
// secure erase leaves.
void discard_all(const std::vector<replay::Target>& targets, uint64_t span);

}  // namespace iotape::workloads

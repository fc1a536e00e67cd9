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
  replay::ThreadUse issue_thread;        // the loop's thread over the phase
  bool host_limited() const { return replay::closed_loop_host_limited(issue_thread); }
  double MBps() const { return duration_ns ? bytes * 1e3 / duration_ns : 0; }
  double iops() const { return duration_ns ? ios * 1e9 / duration_ns : 0; }
};

using NextIo = std::function<bool(replay::ReplayIo&)>;

// Keeps `qd` IOs from `next` in flight until it has no more, `max_ns` passed
// or `stop` (when given) is set. Writes carry `data`. Throws IoError when any
// IO failed: the replay engine's rule, so a short transfer fails with EIO here
// as in a replay.
PhaseStats run_closed_loop(const std::vector<replay::Target>& targets, uint32_t qd, uint64_t max_length,
                           const NextIo& next, int64_t max_ns, PhaseTrace* trace,
                           replay::DataPattern data = {}, const std::atomic<bool>* stop = nullptr);

// One discard of the first `span` bytes of the (single) target: the state a
// secure erase leaves.
void discard_all(const std::vector<replay::Target>& targets, uint64_t span);

}  // namespace iotape::workloads

// `iotape bench`: drive-state tests on a block device or file, on the replay
// module's io_uring engine and under its safety rules (nothing is written
// without allow_write; a mounted or in-use device is refused unless force).
//
// Every test writes one result trace per measured phase into the output
// directory (issue and completion of every IO, times from the phase start, in
// the format `iotape report` and `iotape compare` read) and returns a JSON
// summary, also written there as summary.json. A phase in which an IO failed
// fails the test (IoError naming the first errno); an IO that moved fewer
// bytes than asked failed with EIO, as a replay counts it.
#pragma once

#include <atomic>
#include <cstdint>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "workloads/closed_loop_run.h"

namespace iotape::workloads {

struct BenchOptions {
  std::string target;
  std::string out_dir;
  bool allow_write = false;
  bool force = false;
  uint32_t fill_passes = 1;             // sequential 128 KiB fills: 1 or 2 x capacity
  int64_t duration_ns = 60'000'000'000; // random-write time (consistency, trim); the limit for precondition
  int64_t round_ns = 1'000'000'000;     // precondition: one steady-state round
  int64_t window_ns = 0;                // consistency: final window; 0 = the last fifth of the run
  double span_pct = 100;                // consistency: share of the LBA range written (over-provisioning)
  uint32_t qd = 32;
  uint32_t threads = 0;  // issue threads of the closed loops; 0 = closed_loop_threads' choice
  replay::RingSetup ring;  // of each issue thread (replay/options.h)
  uint64_t seed = 1;
  std::string workload = "storage-light";  // fresh-vs-used: a profile (synthesized to fit) or a trace
  uint64_t workload_ios = 100000;          // fresh-vs-used, when a profile
  std::string label;                       // the drive's name in the result traces; empty = the target's
  // When set, ends the test early after the IOs in flight (its figures are
  // then partial). REQUIRES: outlives run_bench().
  const std::atomic<bool>* stop = nullptr;
};

// SNIA PTS steady state over the last `kSteadyRounds` values: max - min <= 20%
// of their mean, and the least-squares line's excursion across the window
// (slope x (rounds - 1)) <= 10% of the mean.
inline constexpr size_t kSteadyRounds = 5;
struct SteadyState {
  bool reached = false;
  double mean = 0, range = 0, excursion = 0;
};
SteadyState steady_state(std::span<const double> window);

// The used state of `precondition`, on a target already filled: rounds of
// `round_ns` of 4 KiB random writes at `qd` over the first `span` bytes until
// the last kSteadyRounds rounds are in steady state, `max_ns` passed or
// `stop` (when given) is set, on `threads` issue threads with rings as
// `ring` sets them up. Every IO goes to `trace`.
struct SteadyStateRun {
  std::vector<double> iops_per_round;
  SteadyState steady;
};
SteadyStateRun random_writes_to_steady_state(const std::vector<replay::Target>& targets, uint64_t span, uint32_t qd,
                                             int64_t round_ns, int64_t max_ns, uint64_t seed, PhaseTrace* trace,
                                             const std::atomic<bool>* stop, uint32_t threads = 1,
                                             replay::RingSetup ring = {});

// "precondition", "consistency", "trim", "fresh-vs-used". Throws TraceError.
nlohmann::ordered_json run_bench(const std::string& test, const BenchOptions& options);

}  // namespace iotape::workloads

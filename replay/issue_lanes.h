// The issue threads of a replay (--threads N): N lanes, each an issue loop
// (issue_loop.h) on a thread and an engine of its own (its own ring,
// registered buffers and registered files), fed by its lane of the schedule's
// feed and handing its finished IOs to its own queue of the result writer,
// which keeps the schedule's order.
//
// The queue-depth rule across lanes: --qd Q is dealt out once, before the
// replay, as shares: lane i may have Q / N IOs in flight, one more for the
// first Q % N lanes. The IOs in flight never exceed Q in total, and no lane
// reads or writes a counter another lane writes: a shared atomic in-flight
// counter would pass one cache line between the issue CPUs on every
// submission and every reap, and a lane that waited for the others' IOs to
// free room would wait on threads it cannot see.
//
// Each lane's thread constructs its engine itself: a ring set up for a
// single issuer accepts submissions from the thread that made it only. The
// replay starts once every lane is set up.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

#include "replay/fidelity.h"
#include "replay/issue_loop.h"
#include "replay/replayer.h"
#include "replay/result_writer.h"

namespace iotape::replay {

// Lane i's share of `qd` IOs in flight among `lanes` (see above).
// REQUIRES: lanes >= 1, qd >= lanes.
uint32_t lane_share(uint32_t qd, uint32_t lanes, uint32_t lane);

// What the issue threads did over the timed replay.
struct LanesRun {
  int64_t start_ns = 0;              // the schedule's start (monotonic)
  int64_t end_ns = 0;                // when the last lane's last IO completed
  std::vector<int64_t> lane_cpu_ns;  // each issue thread's CPU time over its run (RUSAGE_THREAD)
  // Each issue thread's time waiting on the host over its run: for a CPU, or
  // for the decoder or the result's thread.
  std::vector<int64_t> lane_wait_ns;
};

// Runs the timed replay on p.options.threads lanes (at least 1) and returns
// once every lane has drained and handed its IOs to `result`. Merges the
// lanes' interrupted flags and failures into `out`. Throws what setting up a
// lane threw (an engine's IoError), after stopping the others.
// REQUIRES: `feed` has p.options.threads lanes; `fidelity` as many.
LanesRun run_lanes(const Prepared& p, ScheduleFeed& feed, ResultWriter& result, Fidelity& fidelity, Outcome& out,
                   const std::atomic<bool>& stop, const std::function<void(const Progress&)>& progress);

}  // namespace iotape::replay

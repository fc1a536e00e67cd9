// iotape replay: the run from source trace to result trace.
//
// prepare_replay() opens everything and checks it before anything is
// touched: targets (identity, safety), the plan pass (what would be replayed,
// whether it fits, whether it writes). run_replay() then issues the IOs and
// writes the result trace: per IO the replayed issue and completion times,
// status and source index, in the format of any other trace. Its steps:
// the prefill, device times (device_times.h), the result writer
// (result_writer.h) and the issue loop with its schedule decoder
// (issue_loop.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "replay/device_times.h"
#include "replay/fidelity.h"
#include "replay/options.h"
#include "replay/saturation.h"
#include "replay/schedule.h"
#include "replay/target.h"

namespace iotape::replay {

struct Prepared {
  ReplayOptions options;  // --prefill auto settled to what the replay does
  std::vector<Target> targets;
  Plan plan;
  std::vector<std::string> warnings;  // safety problems overridden by --force, traces without completions, ...
  std::string cpu_idle;               // how this host's idle CPUs wait (host/cpu_idle.h), for the result
  // Damage the plan pass met in the source: the replay covers the IOs before
  // it. Damage is the caller's to report (the CLI exits 2 after the replay).
  format::ReadStatus source_status;
};

// Throws TraceError, naming the reason, when the replay must not start: a
// target that is unsafe without --force, writes without --allow-write, IOs
// that do not fit under --fit fail, trace devices without a target or
// sharing one unasked (see DeviceMap), nothing to replay. A damaged source
// with no IO before the damage is not refused here: plan.ios is 0 and
// source_status says where and why.
Prepared prepare_replay(const ReplayOptions& o);

// Text of --dry-run: IOs, bytes, span, estimated duration, targets, which
// trace device goes onto which target, the prefill.
std::string describe_plan(const Prepared& p);

struct Progress {
  uint64_t issued = 0, completed = 0, errors = 0, planned = 0;
  int64_t elapsed_ns = 0;
  uint64_t prefill_done = 0, prefill_total = 0;  // bytes, while --prefill runs (then nothing else is set)
};

// A replayed IO that failed, as the result records it.
struct IoFailure {
  uint64_t source_index = 0;  // the IO's position in the source trace
  uint32_t target = 0;
  format::Op op = format::Op::kRead;
  uint64_t offset = 0, length = 0;  // on the target
  int32_t status = 0;               // a negative errno
};

// "IO #12 (read of 16384 bytes at byte 8388608 of /dev/loop3): ERANGE,
// Numerical result out of range"
std::string describe_failure(const IoFailure& f, const std::vector<Target>& targets);

struct Outcome {
  uint64_t ios = 0;          // IOs replayed (written to the result)
  uint64_t errors = 0;       // of them with a non-zero status
  static constexpr size_t kKeptFailures = 10;
  std::vector<IoFailure> failures;  // the first kKeptFailures of them, in completion order
  int64_t duration_ns = 0;
  bool interrupted = false;  // `stop` was set or --stop-on-error hit an error
  FidelitySummary fidelity;
  bool device_times = false;       // the result's times are the device's (else the replayer's)
  std::string user_times_reason;   // why not, when Times::kAuto fell back
  DeviceTimesStats device;
  uint64_t prefilled_bytes = 0;    // --prefill, before the timed replay
  int64_t cpu_ns = 0;              // the replay's own CPU time (all its threads, user + system)
  double host_cpu_busy = 0;        // share of all CPUs' time that was busy during the replay
  int64_t issue_cpu_ns = 0;        // the issue threads' own CPU time (RUSAGE_THREAD), summed
  // The issue threads' polls for a completion before sleeping that found
  // one, and that ran out (completion_poll.h).
  uint64_t completion_polls_hit = 0, completion_polls_missed = 0;
  std::vector<ThreadUse> issue_threads;        // how each issue thread spent the replay
  std::vector<DeviceBusy::Share> device_busy;  // the targets' devices' busy shares (io_ticks)
  // Why the figures measure this host rather than the drive, when they do
  // (saturation.h); empty otherwise.
  std::string host_limit;
};

// Replays; `stop` ends the run cleanly (no new IOs, in-flight ones drain, the
// result is closed). `progress`, when set, is called about once a second.
Outcome run_replay(Prepared& p, const std::atomic<bool>& stop,
                   const std::function<void(const Progress&)>& progress = {});

}  // namespace iotape::replay

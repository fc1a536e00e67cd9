#include "replay/replayer.h"

#include <fmt/format.h>
#include <sys/prctl.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>

#include "format/error.h"
#include "format/reader.h"
#include "host/clocks.h"
#include "host/cpu_idle.h"
#include "replay/cpu_load.h"
#include "replay/device_times.h"
#include "replay/engine.h"
#include "replay/issue_lanes.h"
#include "replay/issue_loop.h"
#include "replay/prefill.h"
#include "replay/result_writer.h"

namespace iotape::replay {
namespace {

std::string bytes_text(uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  return fmt::format("{:.1f} {}", v, units[u]);
}

// --prefill auto settled: a replay that may write onto block devices fills
// what it reads first, as reviews play their traces on a drive holding data.
Prefill settle_prefill(const ReplayOptions& o, const std::vector<Target>& targets) {
  if (o.prefill != Prefill::kAuto) return o.prefill;
  const bool all_block = std::all_of(targets.begin(), targets.end(), [](const Target& t) { return t.block; });
  return o.allow_write && all_block ? Prefill::kReads : Prefill::kNone;
}

// --threads: lanes that share nothing while the replay runs. Afap only (an
// original schedule is one timeline), a fixed --qd (the recorded one follows
// completions of every IO before), at least one IO in flight per lane, and
// no idle gaps (a gap starts when the whole replay drains, which no lane
// sees alone): they are left out, as --max-idle 0 leaves them out.
void check_threads(ReplayOptions& o) {
  if (o.threads == 0 || o.threads > 64) throw format::UsageError("--threads must be from 1 to 64");
  if (o.threads == 1) return;
  if (o.timing != Timing::kAfap) throw format::UsageError("--threads above 1 needs --timing afap");
  if (o.qd == 0)
    throw format::UsageError("--threads above 1 needs --qd N: the recorded queue depth follows every IO's completion");
  if (o.qd < o.threads)
    throw format::UsageError(fmt::format("--qd {} leaves some of the {} threads no IO in flight", o.qd, o.threads));
  if (o.max_idle_ns.value_or(0) != 0)
    throw format::UsageError("--threads above 1 replays no idle gaps: leave --max-idle out or give 0");
  o.max_idle_ns = 0;
}

// IOPOLL (RingSetup::iopoll): the kernel polls O_DIRECT reads and writes on
// devices with poll queues, and nothing else.
void check_iopoll(const Prepared& p) {
  if (!p.options.ring.iopoll) return;
  const auto& n = p.plan.by_op;
  const uint64_t others = p.plan.ios - n[static_cast<int>(format::Op::kRead)] - n[static_cast<int>(format::Op::kWrite)];
  if (others || p.plan.preflush_writes)
    throw format::UsageError(fmt::format(
        "--iopoll replays only reads and writes, the IOs the kernel polls: the trace has {} flushes, {} discards, "
        "{} write-zeroes, {} other IOs and {} writes with a flush before them",
        n[static_cast<int>(format::Op::kFlush)], n[static_cast<int>(format::Op::kDiscard)],
        n[static_cast<int>(format::Op::kWriteZeroes)], n[static_cast<int>(format::Op::kOther)],
        p.plan.preflush_writes));
  require_poll_queues(p.targets);
}

}  // namespace

Prepared prepare_replay(const ReplayOptions& o) {
  if (o.targets.empty()) throw format::UsageError("no --target given");
  if (o.speed <= 0) throw format::UsageError("--speed must be positive");
  Prepared p;
  p.options = o;
  check_threads(p.options);
  // Read-only until the plan says the replay writes and that is allowed.
  for (const auto& t : o.targets) p.targets.push_back(open_target(t, false, true));
  p.options.prefill = settle_prefill(o, p.targets);
  const Prefill prefill = p.options.prefill;
  {
    format::TraceReader reader(o.traces);
    p.plan = make_plan(reader, p.targets, p.options);
    const auto& meta = reader.header().metadata();
    const auto recorded_idle = meta.find("host.cpu_idle");
    p.cpu_idle = host::describe_cpu_idle();
    if (recorded_idle != meta.end() && recorded_idle->second != p.cpu_idle)
      p.warnings.push_back(fmt::format("the trace was recorded where idle CPUs were set as \"{}\", here as \"{}\": "
                                       "device latency at low queue depth is not comparable (README: Low queue "
                                       "depth on a VM)",
                                       recorded_idle->second, p.cpu_idle.empty() ? "no cpuidle" : p.cpu_idle));
    p.source_status = reader.status();
  }
  if (p.plan.ios == 0 && !p.source_status.damaged) {
    if (p.plan.source_ios == 0)
      throw format::InputError(fmt::format("{}: the trace holds no IOs: nothing to replay", fmt::join(o.traces, " ")));
    throw format::UsageError(
        fmt::format("nothing to replay: of the trace's {} IOs, {} are inside the window and none of "
                    "them goes to a target ({} of unmapped devices, {} flushes the kernel made for "
                    "fsyncs)",
                    p.plan.source_ios, p.plan.skipped + p.plan.kernel_flushes, p.plan.skipped, p.plan.kernel_flushes));
  }
  if (p.source_status.damaged)
    p.warnings.push_back("the source trace is damaged; only the IOs before the damage are replayed: " +
                         p.source_status.message);
  check_iopoll(p);
  if (!p.plan.unfit.empty())
    throw format::UsageError(fmt::format("the trace does not fit the target (--fit wrap or scale to map it): {}",
                                         fmt::join(p.plan.unfit, "; ")));
  for (const auto& t : p.targets) {
    const auto problems = safety_problems(t);
    if (problems.empty()) continue;
    if (!o.force)
      throw format::DeviceRefused(
          fmt::format("refusing to replay onto {}: {} (--force to override)", t.path, fmt::join(problems, "; ")));
    for (const auto& pr : problems) p.warnings.push_back(fmt::format("{}: {} (--force)", t.path, pr));
  }
  if (prefill != Prefill::kNone && !o.allow_write && !o.dry_run)
    throw format::UsageError(fmt::format("--prefill writes to {}: give --allow-write", fmt::join(o.targets, ", ")));
  const bool writes = p.plan.writes() || prefill != Prefill::kNone;
  if (p.plan.writes() && !o.allow_write && !o.dry_run)
    throw format::UsageError(fmt::format(
        "the trace writes ({} writes, {} discards, {} write-zeroes): give --allow-write "
        "to let it change the contents of {}",
        p.plan.by_op[static_cast<int>(format::Op::kWrite)], p.plan.by_op[static_cast<int>(format::Op::kDiscard)],
        p.plan.by_op[static_cast<int>(format::Op::kWriteZeroes)], fmt::join(o.targets, ", ")));
  if (prefill == Prefill::kNone && p.plan.by_op[static_cast<int>(format::Op::kRead)])
    p.warnings.push_back(fmt::format(
        "nothing is prefilled: the {} reads may read ranges never written, which a drive answers without reading "
        "its media (measuring nothing); {}",
        p.plan.by_op[static_cast<int>(format::Op::kRead)],
        o.allow_write ? "--prefill reads writes them first" : "--allow-write with --prefill reads writes them first"));
  if (o.qd == 0 && p.plan.with_completion < p.plan.ios)
    p.warnings.push_back(fmt::format("{} of {} IOs have no recorded completion; --qd recorded treats them as "
                                     "completing when issued (use --qd N for such traces)",
                                     p.plan.ios - p.plan.with_completion, p.plan.ios));
  if (p.plan.skipped) p.warnings.push_back(fmt::format("{} IOs of unmapped trace devices are skipped", p.plan.skipped));
  for (size_t t = 0; t < p.targets.size(); ++t)
    if (std::none_of(p.plan.routes.begin(), p.plan.routes.end(),
                     [&](const DeviceRoute& r) { return r.target == static_cast<int>(t); }))
      p.warnings.push_back(fmt::format("{} receives no IOs: no trace device with IOs goes onto it", p.targets[t].path));
  if (writes && !o.dry_run) {
    std::vector<Target> rw;
    for (const auto& t : o.targets) rw.push_back(open_target(t, true, o.force));
    p.targets = std::move(rw);
  }
  for (const auto& t : p.targets)
    if (!t.direct) p.warnings.push_back(t.path + ": the filesystem refuses O_DIRECT; replaying buffered");
  return p;
}

std::string describe_failure(const IoFailure& f, const std::vector<Target>& targets) {
  const int err = -f.status;
  const char* name = ::strerrorname_np(err);
  return fmt::format("IO #{} ({} of {} bytes at byte {} of {}): {}{}", f.source_index, format::op_name(f.op), f.length,
                     f.offset, f.target < targets.size() ? targets[f.target].path : fmt::format("target {}", f.target),
                     name ? fmt::format("{}, ", name) : fmt::format("error {}, ", err), std::strerror(err));
}

std::string describe_plan(const Prepared& p) {
  const Plan& pl = p.plan;
  std::string s = fmt::format("plan       {} IOs over {:.6f} s recorded ({} skipped)\n", pl.ios, pl.span_ns / 1e9,
                              pl.skipped);
  if (pl.kernel_flushes)
    s += fmt::format("           {} flush requests the kernel made for recorded fsyncs are made again by the "
                     "replayed fsyncs, not replayed themselves\n",
                     pl.kernel_flushes);
  for (int op = 0; op < format::kOpCount; ++op)
    if (pl.by_op[op])
      s += fmt::format("           {:<13}{:>12} IOs {:>12}\n", format::op_name(static_cast<format::Op>(op)),
                       pl.by_op[op], bytes_text(pl.bytes_by_op[op]));
  if (p.options.timing == Timing::kOriginal)
    s += fmt::format("duration   about {:.6f} s (original timing, speed {})\n", pl.last_due_ns / 1e9,
                     p.options.speed);
  else
    s += "duration   as fast as the target allows (afap)\n";
  s += fmt::format("options    {}\n", describe(p.options));
  for (const auto& t : p.targets)
    s += fmt::format("target     {} ({}) {} bytes, {} B blocks, model '{}' serial '{}'\n", t.path,
                     t.block ? "block device" : "file", t.size, t.logical_block, t.model, t.serial);
  for (const auto& r : pl.routes)
    s += fmt::format("map        trace device {} ({} IOs) -> {}\n", r.label, r.ios,
                     r.target >= 0 ? p.targets[static_cast<size_t>(r.target)].path : std::string("not replayed"));
  s += fmt::format("prefill    {}\n", prefill_name(p.options.prefill));
  return s;
}

namespace {

// Sleeps in the replay loop end on time instead of up to the timer slack
// (50 us by default) late; restored when the replay ends. Threads started
// meanwhile inherit it.
class PreciseTimers {
 public:
  PreciseTimers() : old_(::prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0)) { ::prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0); }
  ~PreciseTimers() {
    if (old_ > 0) ::prctl(PR_SET_TIMERSLACK, old_, 0, 0, 0);
  }

 private:
  int old_;
};

// The size of each source trace device, for --fit: the header's, else the
// end of the plan's IOs on it.
std::vector<uint64_t> source_sizes(const Plan& plan, const v1::TraceHeader& header) {
  std::vector<uint64_t> sizes(plan.device_end.size());
  for (size_t d = 0; d < sizes.size(); ++d) {
    const uint64_t header_size =
        d < static_cast<size_t>(header.devices_size()) ? header.devices(static_cast<int>(d)).size_bytes() : 0;
    sizes[d] = header_size ? header_size : plan.device_end[d];
  }
  return sizes;
}

// The bytes the replay will read: its schedule, made once without issuing it.
ReadFootprint read_footprint(const Prepared& p, const std::vector<uint64_t>& source_size) {
  const ReplayOptions& o = p.options;
  ReadFootprint footprint(p.targets);
  format::TraceReader source(o.traces);
  DeviceMap source_map(source.header(), p.targets.size(), o);
  Placement source_placement(source_map, p.targets, o.fit, source_size);
  Schedule reads(source, source_placement, o);
  ReplayIo io;
  while (reads.next(io))
    if (io.op == format::Op::kRead) footprint.add(io.target, io.offset, io.length);
  return footprint;
}

// The prefill step (--prefill reads or full): returns the bytes written.
// It comes before anything is timed or observed: it is not part of the result.
uint64_t prefill_targets(const Prepared& p, const std::vector<uint64_t>& source_size, const std::atomic<bool>& stop,
                         const std::function<void(const Progress&)>& progress) {
  std::optional<ReadFootprint> footprint;
  if (p.options.prefill == Prefill::kReads) footprint.emplace(read_footprint(p, source_size));
  std::function<void(const PrefillProgress&)> shown;
  if (progress)
    shown = [&](const PrefillProgress& pp) {
      Progress pr;
      pr.prefill_done = pp.done_bytes;
      pr.prefill_total = pp.total_bytes;
      progress(pr);
    };
  return prefill(p.targets, footprint ? &*footprint : nullptr, p.options.data, stop, shown);
}

// The device-time step: starts watching the targets' devices (--times auto
// or device), or says in out.user_times_reason why the result carries the
// replayer's times (null).
std::unique_ptr<DeviceTimes> start_device_times(const Prepared& p, Outcome& out) {
  std::unique_ptr<DeviceTimes> device;
  if (p.options.times != Times::kUser) {
    try {
      device = std::make_unique<DeviceTimes>(p.targets);
    } catch (const std::exception& e) {
      if (p.options.times == Times::kDevice)
        throw format::TraceError(std::string("cannot time the replay at the device: ") + e.what());
      out.user_times_reason = e.what();
    }
  }
  out.device_times = device != nullptr;
  return device;
}

}  // namespace

// The replay's steps: prefill, the schedule, device times, the result (its
// header and writer thread), the schedule's decoder thread, the timed issue
// threads (each with its engine), then how busy they and the devices were and
// the result's metadata.
Outcome run_replay(Prepared& p, const std::atomic<bool>& stop, const std::function<void(const Progress&)>& progress) {
  const ReplayOptions& o = p.options;
  format::TraceReader reader(o.traces);
  DeviceMap map(reader.header(), p.targets.size(), o);
  std::vector<uint64_t> source_size = source_sizes(p.plan, reader.header());
  Outcome out;
  if (o.prefill != Prefill::kNone) {
    out.prefilled_bytes = prefill_targets(p, source_size, stop, progress);
    if (stop.load()) {
      out.interrupted = true;
      return out;
    }
  }
  Placement placement(map, p.targets, o.fit, std::move(source_size));
  Schedule schedule(reader, placement, o);

  const uint32_t lanes = std::max<uint32_t>(o.threads, 1);
  Fidelity fidelity(o.timing == Timing::kOriginal, lanes);
  const std::string sha = sha256_files(o.traces);
  const std::unique_ptr<DeviceTimes> device = start_device_times(p, out);
  // Decoding the source and encoding the result run on their own threads.
  ResultWriter result(p, reader.header(), sha, device.get(), out.user_times_reason, fidelity);
  ScheduleFeed feed(schedule, lanes);
  PreciseTimers precise;  // before the issue threads start: they inherit it
  const CpuLoad cpu;
  const DeviceBusy device_busy(p.targets);
  const LanesRun run = run_lanes(p, feed, result, fidelity, out, stop, progress);

  // The replay lasted until its last completion; encoding what is left of the
  // result is not part of it.
  out.duration_ns = run.end_ns - run.start_ns;
  out.cpu_ns = cpu.process_cpu_ns();
  out.host_cpu_busy = cpu.host_busy();
  out.device_busy = device_busy.shares(out.duration_ns);
  const auto share = [&](int64_t ns) {
    return out.duration_ns > 0 ? std::min(1.0, static_cast<double>(ns) / static_cast<double>(out.duration_ns)) : 0.0;
  };
  for (size_t i = 0; i < run.lane_cpu_ns.size(); ++i) {
    out.issue_cpu_ns += run.lane_cpu_ns[i];
    out.issue_threads.push_back({.busy = share(run.lane_cpu_ns[i]), .waiting = share(run.lane_wait_ns[i])});
  }
  out.host_limit = host_limit_warning(out.issue_threads, out.device_busy);
  result.finish();
  feed.rethrow_error();
  out.fidelity = fidelity.summary();
  out.ios = out.fidelity.ios;
  out.errors = out.fidelity.errors;
  if (device) {
    device->finish();
    out.device = device->stats();
  }
  result.write_outcome(out, o.prefill != Prefill::kNone);
  return out;
}

}  // namespace iotape::replay

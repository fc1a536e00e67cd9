// iotape replay: replays a trace onto block devices or files.
#include <unistd.h>

#include <fmt/format.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "cli/commands.h"
#include "cli/stop_signals.h"
#include "format/error.h"
#include "format/reader.h"
#include "replay/replayer.h"
#include "units/units.h"

namespace iotape::cli {
namespace {

struct ReplayArgs {
  replay::ReplayOptions o;
  std::string timing = "original", qd = "recorded", max_idle, events = "issue", device_map, fit = "fail",
              data = "random", window, times = "auto", prefill = "auto";
};

// The options as the engine takes them, from the command line's words.
void apply_words(ReplayArgs& a) {
  auto& o = a.o;
  o.timing = a.timing == "afap" ? replay::Timing::kAfap : replay::Timing::kOriginal;
  if (a.qd != "recorded") {
    char* end = nullptr;
    const unsigned long qd = std::strtoul(a.qd.c_str(), &end, 10);
    if (end == a.qd.c_str() || *end != '\0' || qd == 0 || qd > 65536)
      throw format::UsageError("--qd must be 'recorded' or a number from 1 to 65536, not '" + a.qd + "'");
    o.qd = static_cast<uint32_t>(qd);
  }
  if (!a.max_idle.empty()) o.max_idle_ns = units::parse_duration(a.max_idle, "--max-idle");
  o.events = a.events == "queue" ? replay::EventTime::kQueue : replay::EventTime::kIssue;
  if (!a.device_map.empty()) o.device_map = replay::parse_device_map(a.device_map, o.targets);
  o.fit = a.fit == "wrap" ? replay::Fit::kWrap : a.fit == "scale" ? replay::Fit::kScale : replay::Fit::kFail;
  o.data = replay::parse_data(a.data);
  if (!a.window.empty()) o.window = units::parse_window(a.window, "--window");
  o.times = a.times == "device" ? replay::Times::kDevice : a.times == "user" ? replay::Times::kUser : replay::Times::kAuto;
  o.prefill = a.prefill == "reads"  ? replay::Prefill::kReads
              : a.prefill == "full" ? replay::Prefill::kFull
              : a.prefill == "none" ? replay::Prefill::kNone
                                    : replay::Prefill::kAuto;
}

// A line on the terminal that follows the prefill, then the replay.
void show_progress(const replay::Progress& pr) {
  if (pr.prefill_total) {
    fmt::print(stderr, "\rprefill {}/{} MiB ({:.1f}%)   ", pr.prefill_done >> 20, pr.prefill_total >> 20,
               100.0 * static_cast<double>(pr.prefill_done) / static_cast<double>(pr.prefill_total));
    std::fflush(stderr);
    return;
  }
  fmt::print(stderr, "\r{:.0f} s  {}/{} IOs ({:.1f}%)  {}   ", pr.elapsed_ns / 1e9, pr.completed,
             pr.planned, pr.planned ? 100.0 * static_cast<double>(pr.completed) / static_cast<double>(pr.planned) : 0.0,
             replay::count_of(pr.errors, "error"));
  std::fflush(stderr);
}

// What was replayed and how: the lines after the replay.
void print_summary(const replay::Prepared& p, const replay::Outcome& out, const replay::ReplayOptions& o) {
  const replay::Prefill prefill = p.options.prefill;
  if (prefill == replay::Prefill::kNone)
    fmt::print("prefill    none{}\n",
               p.plan.by_op[static_cast<int>(format::Op::kRead)] ? " (reads may have read ranges never written)" : "");
  else
    fmt::print("prefill    {}: {} bytes written before the replay\n", replay::prefill_name(prefill),
               out.prefilled_bytes);
  fmt::print("{}", out.fidelity.text());
  fmt::print("times      {}\n", out.device_times ? "device (block layer: issue to completion)"
                                                  : "user (replayer: submission to reap)");
  if (out.ios)
    fmt::print("cpu        replayer {:.0f} ns per IO, of which its issue threads {:.0f}; host {:.1f}% busy\n",
               static_cast<double>(out.cpu_ns) / static_cast<double>(out.ios),
               static_cast<double>(out.issue_cpu_ns) / static_cast<double>(out.ios), 100.0 * out.host_cpu_busy);
  std::string busy;
  for (const auto& t : out.issue_threads)
    busy += fmt::format("{}{:.0f}% (and {:.0f}% waiting on the host)", busy.empty() ? "" : ", ", 100 * t.busy,
                        100 * t.waiting);
  fmt::print("busy       issue threads {}", busy);
  for (const auto& d : out.device_busy) fmt::print("; {} {:.0f}%", d.device, 100 * d.busy);
  fmt::print("\n");
  fmt::print("result     {} ({:.6f} s){}\n", o.result, out.duration_ns / 1e9,
             out.interrupted ? ", stopped early" : "");
}

// Every IO that failed, by name, up to the ones the outcome kept.
void print_failures(const replay::Prepared& p, const replay::Outcome& out, const replay::ReplayOptions& o,
                    bool signalled) {
  const bool stopped = o.stop_on_error && out.interrupted && !signalled;
  fmt::print(stderr, "iotape: {}{}:\n", stopped ? "stopped at the first IO error, " : "",
             replay::count_of(out.errors, "IO") + " failed");
  for (const auto& f : out.failures) fmt::print(stderr, "  {}\n", replay::describe_failure(f, p.targets));
  if (out.errors > out.failures.size())
    fmt::print(stderr, "  and {} more (their status is in the result)\n", out.errors - out.failures.size());
}

void run(ReplayArgs& a) {
  apply_words(a);
  const auto& o = a.o;
  const bool tty = ::isatty(STDERR_FILENO);
  // Before the plan pass, which reads the whole trace.
  if (o.result.empty() && !o.dry_run) throw format::UsageError("-o RESULT is required (except with --dry-run)");

  replay::Prepared p = replay::prepare_replay(o);
  for (const auto& w : p.warnings) fmt::print(stderr, "iotape: warning: {}\n", w);
  const format::ReadStatus& damage = p.source_status;
  if (damage.damaged && p.plan.ios == 0) {
    fmt::print(stderr, "iotape: {}: no IO before the damage; nothing replayed\n", damage.message);
    throw ExitCode{kExitDamaged};
  }
  if (o.dry_run) {
    fmt::print("{}", replay::describe_plan(p));
    return;
  }

  const StopSignals signals;
  const replay::Outcome out = replay::run_replay(p, signals.flag(), tty ? show_progress : nullptr);
  if (tty) fmt::print(stderr, "\n");
  if (!out.device_times && o.times == replay::Times::kAuto)
    fmt::print(stderr, "iotape: warning: the result carries the replayer's times (submission to reap, host "
                       "overhead included), not the device's: {}\n", out.user_times_reason);
  print_summary(p, out, o);
  if (!out.host_limit.empty()) fmt::print(stderr, "iotape: warning: {}\n", out.host_limit);
  if (!out.failures.empty()) print_failures(p, out, o, signals.stopped());
  if (out.interrupted) throw ExitCode{signals.stopped() ? kExitInterrupted : kExitStopped};
  if (damage.damaged) {
    fmt::print(stderr, "iotape: {}: the replay stops there; the result covers the {} before it\n", damage.message,
               replay::count_of(out.ios, "IO"));
    throw ExitCode{kExitDamaged};
  }
}

}  // namespace

void add_replay_command(CLI::App& app) {
  auto a = std::make_shared<ReplayArgs>();
  auto* sub = app.add_subcommand("replay", "Replay a trace onto block devices or files (io_uring, O_DIRECT)");
  sub->add_option("TRACE", a->o.traces, "Source trace file(s); several are read as one trace (rotated parts)")
      ->required()
      ->check(CLI::ExistingFile);
  sub->add_option("--target", a->o.targets, "Block device or regular file to replay onto; repeat for several")
      ->required();
  sub->add_option("-o,--output", a->o.result, "Result trace (required unless --dry-run): per IO the replayed "
                                              "issue/completion time and status");
  sub->add_option("--timing", a->timing, "original: recorded times on an absolute schedule; afap: as fast as the "
                                         "queue-depth rule allows")
      ->check(CLI::IsMember({"original", "afap"}))
      ->capture_default_str();
  sub->add_option("--speed", a->o.speed, "Time scale: 2 replays twice as fast")->capture_default_str();
  sub->add_option("--qd", a->qd, "recorded: an IO waits for the IOs that completed before its recorded issue "
                                 "(keeps the recorded queue depth); N: at most N IOs in flight")
      ->capture_default_str();
  sub->add_option("--max-idle", a->max_idle, "Recorded idle gaps (nothing outstanding) are cut to this, e.g. 5ms, "
                                             "1s: with original timing the schedule shrinks (default: no cap); "
                                             "with afap the replay pauses that long after draining (default 25ms, "
                                             "0: never)");
  sub->add_option("--threads", a->o.threads,
                  "Issue threads, each with an io_uring of its own, for drives faster than one thread can drive "
                  "(afap with --qd N only: each thread keeps N/threads IOs in flight, the total never above N; "
                  "idle gaps are not replayed). The result holds every IO once, in issue order, with the "
                  "times --times chooses, as with 1 thread. "
                  "Every replay prints and records its CPU per IO, each issue thread's utilisation and each "
                  "device's busy share, and warns when the threads, not the devices, were saturated")
      ->capture_default_str();
  sub->add_flag("--iopoll", a->o.ring.iopoll,
                "Polled completions (io_uring IOPOLL): each issue thread polls the device for its completions "
                "instead of waiting for an interrupt, spinning while IOs are in flight. Reads and writes only, "
                "onto devices with poll queues (queue/io_poll is 1: NVMe with the nvme module's poll_queues); "
                "anything else is refused before the replay starts");
  sub->add_flag("--sqpoll", a->o.ring.sqpoll,
                "A kernel thread per issue thread (io_uring SQPOLL, named iou-sqp-PID) takes the IOs off the "
                "ring; it spins on a CPU of its own while IOs are submitted");
  sub->add_option("--events", a->events, "Which recorded time to follow where the trace has both")
      ->check(CLI::IsMember({"issue", "queue"}))
      ->capture_default_str();
  sub->add_option("--device-map", a->device_map, "SRC=DST,...: trace device (index, MAJ:MIN or name, as `iotape "
                                                 "info` lists them) onto target (--target path or index, from 0); "
                                                 "unmapped devices are skipped, several may share a target. Without "
                                                 "it, trace device i goes onto target i (one target: the trace's "
                                                 "one device), and a trace with more devices than targets is "
                                                 "refused; --dry-run prints the map");
  sub->add_option("--fit", a->fit, "Offsets beyond a target: fail before starting, wrap modulo its size, or scale "
                                   "proportionally")
      ->check(CLI::IsMember({"fail", "wrap", "scale"}))
      ->capture_default_str();
  sub->add_option("--data", a->data, "Write data: random (incompressible), zero, compress:PCT (PCT% zeroes)")
      ->capture_default_str();
  sub->add_option("--times", a->times, "Clock of the result's IO times. device: the block layer's issue and "
                                       "completion, as a recording has them (needs BPF: root); user: the "
                                       "replayer's submission and reap; auto: device where possible, else user "
                                       "with a warning")
      ->check(CLI::IsMember({"auto", "device", "user"}))
      ->capture_default_str();
  sub->add_option("--prefill", a->prefill, "Before the timed replay, write what it will read (reads) or every "
                                           "byte of the targets (full) with the --data pattern, so that reads "
                                           "find data; needs --allow-write. auto: reads with --allow-write "
                                           "onto block devices, else none (with a warning that reads may find "
                                           "ranges never written). The result's replay.prefill key says which")
      ->check(CLI::IsMember({"auto", "none", "reads", "full"}))
      ->capture_default_str();
  sub->add_flag("--allow-write", a->o.allow_write, "Let writes, discards and write-zeroes change the target");
  sub->add_flag("--force", a->o.force, "Replay onto a device that is mounted, swap, holds / or is held");
  sub->add_flag("--dry-run", a->o.dry_run, "Print the plan (IOs, bytes, span, estimated duration, each trace device's "
                                            "target, the prefill); touch nothing");
  sub->add_flag("--stop-on-error", a->o.stop_on_error, "Stop at the first IO error (default: record it, go on)");
  sub->add_option("--window", a->window,
                  "START..END: only the IOs in this part of the trace (e.g. 10s..70s, 1h.., ..90s)");
  sub->footer("Exit status: 0 done, 2 the source trace is damaged (the result covers the IOs before the damage; "
              "nothing replayed when there are none), 3 stopped by --stop-on-error, 64 a bad option or target "
              "(a --target that does not exist, devices without --device-map, a --window or --device-map that leaves no IO), 77 a target "
              "refused (mounted, swap, held; nothing replayed), 130 interrupted; the result trace is valid in "
              "every case where the replay started. Other errors (nothing replayed): iotape --help.");
  sub->callback([a] { run(*a); });
}

}  // namespace iotape::cli

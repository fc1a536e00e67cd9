// iotape cut: heavy, light or explicit windows of a long capture, as a new trace.
#include <fmt/format.h>

#include "cli/commands.h"
#include "format/error.h"
#include "units/units.h"
#include "workloads/cut.h"

namespace iotape::cli {
namespace {

struct CutArgs {
  std::vector<std::string> traces;
  std::string out;
  bool heavy = false, light = false;
  std::vector<std::string> windows;
  std::string device, comm, length = "60s", max_idle = "1s";
  std::optional<uint32_t> pid;
  uint32_t count = 1;
  bool score_discards = false;
  bool include_self = false;
};

void run_cut(const CutArgs& a) {
  workloads::CutOptions o;
  o.traces = a.traces;
  o.out = a.out;
  o.mode = a.heavy ? workloads::CutMode::kHeavy : a.light ? workloads::CutMode::kLight : workloads::CutMode::kWindows;
  for (const auto& w : a.windows) o.windows.push_back(units::parse_window(w, "--window"));
  if (!a.device.empty()) o.filter.device = format::parse_device_filter(a.device);
  if (!a.comm.empty()) o.filter.comm = a.comm;
  o.filter.pid = a.pid;
  o.filter.include_self = a.include_self;
  o.length_ns = units::parse_duration(a.length, "--length");
  o.count = a.count;
  o.max_idle_ns = units::parse_duration(a.max_idle, "--max-idle");
  o.score_discards = a.score_discards;
  const auto r = workloads::cut(o);
  if (r.windows_measured) {
    fmt::print("measured {} windows of {:.3f} s over the trace's {:.3f} s, scored by {}\n", r.windows_measured,
               o.length_ns / 1e9, r.span_ns / 1e9, r.score_basis);
    if (r.windows_within < r.windows_measured)
      fmt::print("the last {:.3f} s of the trace are shorter than a window: not a candidate\n",
                 (r.span_ns - static_cast<int64_t>(r.windows_within) * o.length_ns) / 1e9);
  }
  for (const auto& c : r.chosen) {
    const auto& w = c.activity;
    if (o.mode == workloads::CutMode::kWindows)
      fmt::print("window {:.3f}..{}: {}\n", w.start_ns / 1e9,
                 w.end_ns == INT64_MAX ? std::string("end") : fmt::format("{:.3f}", w.end_ns / 1e9), c.why);
    else
      fmt::print("window {:.3f}..{:.3f} s: busy {:.3f} s, {:.1f} MB {}, {:.1f} MB discarded, {:.1f} MB write-zeroes, "
                 "{} IOs; {}\n",
                 w.start_ns / 1e9, w.end_ns / 1e9, w.busy_ns / 1e9, w.bytes / 1e6,
                 o.score_discards ? "all ops" : "read+written", w.discard_bytes / 1e6, w.write_zeroes_bytes / 1e6,
                 w.ios, c.why);
  }
  if (!r.note.empty()) fmt::print("{} windows asked for, {} taken: {}\n", o.count, r.chosen.size(), r.note);
  fmt::print("{}: {} IOs, {:.3f} s of idle time removed (idle gaps capped at {})", a.out, r.ios,
             r.removed_idle_ns / 1e9, a.max_idle);
  if (r.between_ns > 0)
    fmt::print("; the {:.3f} s of trace between the windows are left out (each window follows the one before "
               "after its idle time, capped likewise)",
               r.between_ns / 1e9);
  fmt::print("\n");
}

}  // namespace

void add_cut_command(CLI::App& app) {
  auto a = std::make_shared<CutArgs>();
  auto* sub = app.add_subcommand("cut", "Cut the heavy or light periods (or given windows) out of a long trace");
  sub->add_option("TRACE", a->traces, "The trace (several files: rotated parts, in order)")
      ->required()
      ->check(CLI::ExistingFile);
  sub->add_option("-o,--output", a->out, "Trace file to write")->required();
  auto* heavy = sub->add_flag("--heavy", a->heavy, "Take the busiest windows (busy time and bytes read and written)");
  auto* light = sub->add_flag("--light", a->light,
                              "Take the least busy windows that hold IOs, leaving out those --heavy takes");
  auto* window = sub->add_option("--window", a->windows,
                                 "Take this window, START..END from the first IO, e.g. 1h..2h, 10..20 (seconds), "
                                 "90s.. (repeatable)");
  heavy->excludes(light)->excludes(window);
  light->excludes(window);
  sub->add_option("--device", a->device, "Only IOs of this device, MAJ:MIN");
  sub->add_option("--comm", a->comm, "Only IOs of processes with this name");
  sub->add_option("--pid", a->pid, "Only IOs of this process id");
  sub->add_flag("--include-self", a->include_self,
                "Keep the IOs a capture flagged as caused by the recording itself (record --include-self); "
                "left out by default");
  sub->add_option("--length", a->length, "Window length for --heavy/--light, e.g. 90s, 10m, 1h")->capture_default_str();
  sub->add_option("--count", a->count, "Windows to take for --heavy/--light")->capture_default_str();
  sub->add_flag("--score-discards", a->score_discards,
                "Score discarded and write-zeroes bytes like bytes read and written (by default they are shown, "
                "not scored: they move no data)");
  sub->add_option("--max-idle", a->max_idle,
                  "Idle gaps (nothing outstanding) longer than this are shortened to it, e.g. 250ms, 1s")
      ->capture_default_str();
  sub->footer(
      "Windows are measured on a grid of --length from the first IO; only windows within the trace (not the\n"
      "shorter rest at its end) are taken. Score = mean of busy time (IO count when the trace has no completion\n"
      "times) and bytes read and written (discarded and write-zeroes too with --score-discards), each relative to\n"
      "the highest window's. --heavy takes the --count highest scores; --light the --count lowest among the\n"
      "windows with IOs, leaving out the --count a heavy cut takes (an error when none is left). Idle gaps (no IO\n"
      "outstanding) longer than --max-idle are shortened to it, within a window and where one window joins the\n"
      "next (the idle end of the one plus the idle start of the other); the trace time between windows is\n"
      "reported apart. The chosen windows and why are printed and stored in the header metadata (cut.windows).\n"
      "Phases of the input (iotape synth) that have IOs in the cut are kept, clipped to them.");
  sub->callback([a] {
    if (!a->heavy && !a->light && a->windows.empty()) throw format::UsageError("give --heavy, --light or --window");
    run_cut(*a);
  });
}

}  // namespace iotape::cli

// iotape report: the metrics storage reviews publish, from one trace.
#include <fmt/format.h>

#include <cerrno>
#include <fstream>
#include <memory>
#include <optional>
#include <span>

#include "analysis/offset_map.h"
#include "analysis/report.h"
#include "analysis/report_output.h"
#include "analysis/timeline.h"
#include "analysis/week_page.h"
#include "cli/capture_end.h"
#include "cli/commands.h"
#include "format/error.h"
#include "units/units.h"
#include "workloads/cut.h"

namespace iotape::cli {
namespace {

struct ReportCommandOptions {
  std::vector<std::string> traces;
  bool json = false;
  bool csv = false;
  std::string device;
  std::string window;
  std::string by;
  size_t top = 10;
  std::string series_csv;
  std::string html;
  bool include_self = false;
};

// A word of a command line as a POSIX shell reads it back.
std::string shell_word(const std::string& w) {
  static constexpr const char* kPlain = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:=+,@";
  if (!w.empty() && w.find_first_not_of(kPlain) == std::string::npos) return w;
  std::string q = "'";
  for (char c : w) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The week page's accumulators that run as the reader's stage
// (ReaderOptions::each_batch), on the reading thread when it has time while
// this one counts: the window grid of `iotape cut --heavy/--light` (its
// defaults: 60 s windows, one each) over every IO, as cut measures it, and
// the offset map of the IOs the report counts. In an allocation of its own,
// as the other thread writes it.
struct alignas(64) StagedAccumulators {
  static constexpr int64_t kLength = 60'000'000'000;
  StagedAccumulators(const ReportCommandOptions& o, const analysis::ReportOptions& ro)
      : meter(filter(o), kLength), selection(ro) {}
  static workloads::IoFilter filter(const ReportCommandOptions& o) {
    workloads::IoFilter f;
    if (!o.device.empty()) f.device = format::parse_device_filter(o.device);
    f.include_self = o.include_self;
    return f;
  }
  auto stage() {
    return [this](std::span<const format::Io> ios, const v1::TraceHeader& h) {
      if (ios.empty()) return;
      if (!origin_known) {
        origin_known = true;
        selection.set_origin(ios.front().issue_ns);
        offsets.set_origin(ios.front().issue_ns);
      }
      selection.update(h);
      // Two loops: with no call in it, the offset map's keeps its state in
      // registers (report_bench's 10M IOs, the page: 1.26-1.29 CPU-s against
      // 1.36-1.37 with one loop).
      for (const format::Io& io : ios)
        if (selection.keeps(io)) offsets.add(io, h);
      for (const format::Io& io : ios) meter.add(io, h);
    };
  }
  workloads::WindowMeter meter;
  analysis::IoSelection selection;
  analysis::OffsetMap offsets;
  bool origin_known = false;
};

// The week page's accumulators on the analysing thread, fed by the report's
// own pass with the IOs it counts.
struct PageAccumulators {
  explicit PageAccumulators(const format::TraceReader& reader) : timeline(reader.header()) {}
  void hook(analysis::ReportOptions& ro) { ro.timeline = &timeline; }
  analysis::Timeline timeline;
};

// The windows cut --heavy and --light take, each with its command line.
std::vector<analysis::MarkedWindow> cut_windows(const ReportCommandOptions& o, const workloads::Activity& activity,
                                                std::string& note) {
  std::vector<analysis::MarkedWindow> out;
  for (const char* kind : {"heavy", "light"}) {
    std::vector<workloads::ChosenWindow> chosen;
    try {
      chosen = kind == std::string("heavy") ? workloads::pick_heavy(activity, 1) : workloads::pick_light(activity, 1);
    } catch (const format::UsageError& e) {
      if (note.find(e.what()) == std::string::npos) note += (note.empty() ? "" : "; ") + std::string(e.what());
    }
    std::string command = "iotape cut";
    for (const auto& t : o.traces) command += " " + shell_word(t);
    command += fmt::format(" --{} -o {}.iot", kind, kind);
    if (!o.device.empty()) command += " --device " + shell_word(o.device);
    if (o.include_self) command += " --include-self";
    for (const auto& c : chosen)
      out.push_back({kind, c.activity.start_ns, c.activity.end_ns, c.activity.busy_ns, c.activity.bytes, c.activity.ios,
                     c.why, command});
  }
  if (out.empty() && note.empty()) note = "no window of the trace holds selected IOs";
  return out;
}

void write_page(const ReportCommandOptions& o, const analysis::Report& r, const format::TraceReader& reader,
                PageAccumulators& acc, StagedAccumulators& staged) {
  acc.timeline.finish();
  analysis::WeekPage page;
  page.traces = o.traces;
  page.report = &r;
  page.header = &reader.header();
  const auto json = analysis::report_json(r, reader.header(), {o.traces, true, o.top, false});
  page.json = &json;
  page.timeline = &acc.timeline;
  page.offsets = &staged.offsets;
  page.end_keys = capture_end_keys(o.traces, reader);
  try {
    page.windows = cut_windows(o, staged.meter.finish(), page.windows_note);
  } catch (const format::UsageError& e) {
    page.windows_note = e.what();  // no windows to mark: the page says why
  }
  page.top = o.top;
  std::ofstream f(o.html);
  f << analysis::week_page_html(page);
  if (!f) throw format::error_errno(o.html, "cannot write the page", errno);
}

void run_report(const ReportCommandOptions& o) {
  analysis::ReportOptions ro;
  if (!o.device.empty()) ro.device = format::parse_device_filter(o.device);
  if (!o.window.empty()) ro.window = units::parse_window(o.window, "--window");
  ro.by_phase = o.by == "phase";
  ro.include_self = o.include_self;
  std::unique_ptr<StagedAccumulators> staged;
  if (!o.html.empty()) staged = std::make_unique<StagedAccumulators>(o, ro);
  // With the page, fewer batches ahead: the reading thread does more per
  // batch, and the rows it decoded are still in cache when they are read
  // (10M IOs of storage-heavy: 0.68-0.71 s against 0.71-0.77 s with 4).
  format::TraceReader reader(o.traces, {.decode_ahead = staged ? 2u : format::kToolDecodeAhead,
                                        .each_batch = staged ? staged->stage() : format::ReaderStage()});
  std::optional<PageAccumulators> page;
  if (staged) page.emplace(reader).hook(ro);
  ro.source = fmt::format("{}", fmt::join(o.traces, " "));
  const analysis::Report r = analysis::analyse(reader, ro);
  if (page) write_page(o, r, reader, *page, *staged);
  const analysis::OutputOptions out{o.traces, o.by == "process", o.top, ro.by_phase};
  if (o.json) {
    // Process names need not be UTF-8: replace what JSON cannot hold.
    fmt::print("{}\n", analysis::report_json(r, reader.header(), out)
                          .dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
  } else if (o.csv && ro.by_phase) {
    fmt::print("{}", analysis::phases_csv(analysis::phases_json(r, reader.header())));
  } else if (o.csv) {
    fmt::print("{}", analysis::report_csv(analysis::report_json(r, reader.header(), out)));
  } else {
    fmt::print("{}", analysis::report_text(r, reader.header(), out));
  }
  if (!o.series_csv.empty()) {
    std::ofstream f(o.series_csv);
    f << analysis::series_csv(r);
    if (!f) throw format::error_errno(o.series_csv, "cannot write the series", errno);
  }
  if (r.status.damaged) {
    fmt::print(stderr, "iotape: warning: {} (the report covers the IOs before it)\n", r.status.message);
    throw ExitCode{kExitDamaged};
  }
}

}  // namespace

void add_report_command(CLI::App& app) {
  auto o = std::make_shared<ReportCommandOptions>();
  auto* sub = app.add_subcommand("report", "Disk busy time, data rates, latency percentiles, IO sizes, queue depth");
  sub->add_option("TRACE", o->traces, "Trace file(s); several are read as one trace (rotated parts)")
      ->required()
      ->check(CLI::ExistingFile);
  auto* json = sub->add_flag("--json", o->json, "One JSON object (see below)");
  sub->add_flag("--csv", o->csv, "A flat metric,value table (the JSON keys joined with '.')")->excludes(json);
  sub->add_option("--device", o->device, "Only the IOs of this device (MAJ:MIN)");
  sub->add_flag("--include-self", o->include_self,
                "Count the IOs a capture flagged as caused by the recording itself (record --include-self); "
                "left out by default");
  auto* window = sub->add_option("--window", o->window,
                                 "START..END: only IOs issued in this range from the trace's first IO, e.g. 1m..2m, "
                                 "10..20 (seconds), 10s.. (either end may be left out); busy time is clipped to END. "
                                 "A START after the trace's last IO is an error");
  sub->add_option("--by", o->by,
                  "'process': add per-process totals (top N by bytes); 'phase': add a row per phase of a "
                  "synthesized trace or of its replay (with --csv: the phase rows only)")
      ->check(CLI::IsMember({"process", "phase"}));
  sub->add_option("--top", o->top, "Processes shown with --by process")->capture_default_str();
  sub->add_option("--html", o->html,
                  "Also write the week page to FILE: one HTML page (inline SVG, no scripts) of what was recorded, the "
                  "totals, busy %, MB/s, IOPS, latency and queue depth over time, busy % by hour of the day, offset "
                  "against time per device, the top processes, and the windows cut --heavy and --light take "
                  "(see below)")
      ->excludes(window);
  sub->add_option("--series-csv", o->series_csv, "Write IOPS and MB/s per interval (1 s, coarser on long traces) to FILE");
  sub->footer(
      "Definitions:\n"
      "  busy time      time with at least one IO outstanding (union of [issue, completion]); idle excluded.\n"
      "                 Read/write busy time count only time with a read/write in flight.\n"
      "  bytes          read, written, and apart from them discarded and write-zeroes (ranges a device frees or\n"
      "                 zeroes: no data moves, so they are in no data rate and no MB/s series).\n"
      "  data rate      bytes read/written / busy time, in MB/s with MB = 10^6 bytes (GB = 10^9 bytes).\n"
      "  service time   busy time / completed IOs.\n"
      "  latency        completion - issue (D2C), per operation; with queue times also Q2D and Q2C.\n"
      "                 Percentiles are nearest-rank, from a log-linear histogram: within 0.4% (1/256)\n"
      "                 of the exact value.\n"
      "  IO size        reads and writes in <4K 4K 8K 16K 32K 64K 128K >128K; a size between two buckets\n"
      "                 counts in the lower one (6K -> 4K); 128K is exactly 128 KiB.\n"
      "  sequential     an IO starting where the previous IO of the same direction on the same device ended.\n"
      "  queue depth    IOs outstanding at an IO's issue, counting the IO itself (QD1 = nothing else in flight).\n"
      "  series         IOs by issue time per 1 s; traces longer than 4096 s get coarser (2 s, 4 s, ...).\n"
      "  processes      top N by bytes (read, written, discarded, write-zeroes; each also shown apart), with\n"
      "                 their IOs and busy time (the union of the process's own IOs). At\n"
      "                 most 1024 tracked; with more, the least busy are replaced and figures become\n"
      "                 upper bounds (error_bytes in JSON).\n"
      "  phases         the phases in the trace header (iotape synth writes them; replay and cut keep them).\n"
      "                 An IO belongs to a phase by its position in the trace, in a replay result by the\n"
      "                 source IO it replayed. Per phase: IOPS = IOs / duration, MB/s = bytes / duration,\n"
      "                 duration = the phase's first issue to its last completion; latency of reads and\n"
      "                 writes; busy time as above.\n"
      "JSON keys: ios, reads, writes, discards, write_zeroes, bytes_read, bytes_written, bytes_discarded,\n"
      "  bytes_write_zeroes, GB_read, GB_written, GB_discarded, GB_write_zeroes, busy_time_ns, read_busy_time_ns,\n"
      "  write_busy_time_ns, idle_ns, avg_data_rate_MBps {read, write, combined}, latency_ns {OP: count, mean,\n"
      "  p50, p90, p99, p99_9, max}, q2d_ns/d2c_ns/q2c_ns, io_size_pct, io_size_histogram, sequential_pct,\n"
      "  qd_pct, avg_qd, series {interval_ns, iops, MBps}, processes [{pid, comm, ios, bytes, bytes_read,\n"
      "  bytes_written, bytes_discarded, bytes_write_zeroes, busy_time_ns, error_bytes}], metadata (the header's\n"
      "  keys and those written at the end), phases [{index, name, pattern,\n"
      "  block_size, queue_depth, read_pct, sequential_pct, alignment, data, threads, ios, reads, writes,\n"
      "  bytes_read, bytes_written, duration_ns, busy_time_ns, iops, MBps, mean_latency_ns, p99_latency_ns}]\n"
      "  (block_size or queue_depth 0: a mix; --csv --by phase prints these keys as columns).\n"
      "Week page (--html): the figures printed in its totals and process tables are those of --json (with\n"
      "  --by process); charts over time use bins from 1 s that double (up to 2048 bins: a day gets 64 s, a\n"
      "  week 512 s), latency per bin from a histogram within 12%; hours of the day are UTC when the trace has\n"
      "  a wall clock, else count from the first IO. The marked windows are those `iotape cut --heavy` and\n"
      "  `--light` take with their defaults (one 60 s window each, with --device and --include-self as given),\n"
      "  each with its command line. One pass over the trace; memory does not grow with its length.\n"
      "Exit status: 0 clean, 2 the trace is damaged (the report stops at the damage), 64 a --window that starts\n"
      "after the trace's last IO; other errors: iotape --help.");
  sub->callback([o] { run_report(*o); });
}

}  // namespace iotape::cli

// iotape record: capture the block IOs of this machine into a trace.
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>

#include "capture/recorder.h"
#include "cli/commands.h"
#include "cli/stop_signals.h"
#include "format/error.h"
#include "units/units.h"

namespace iotape::cli {
namespace {

struct RecordCli {
  capture::RecordOptions o;
  std::string duration, rotate_size, rotate_time, keep, max_total, buffer, flush_interval = "1s", blk_events = "all";
  bool no_sync = false;
  int zstd_level = 1;
};

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int i = 0;
  while (b >= 1024 && i < 4) b /= 1024, ++i;
  return fmt::format("{:.1f} {}", b, units[i]);
}

void run_record(RecordCli& c) {
  auto& o = c.o;
  if (!c.duration.empty()) o.duration_ns = units::parse_duration(c.duration, "--duration");
  if (!c.rotate_size.empty()) o.output.rotate_bytes = units::parse_size(c.rotate_size, "--rotate-size");
  if (!c.rotate_time.empty()) o.output.rotate_ns = units::parse_duration(c.rotate_time, "--rotate-time");
  if (!c.keep.empty()) o.output.keep_ns = units::parse_duration(c.keep, "--keep");
  if (!c.max_total.empty()) o.output.max_total_bytes = units::parse_size(c.max_total, "--max-total");
  if ((o.output.keep_ns || o.output.max_total_bytes) && !o.output.rotate_bytes && !o.output.rotate_ns)
    throw format::UsageError("--keep and --max-total remove whole parts: give --rotate-size or --rotate-time too");
  o.output.on_remove = [](const std::string& path, uint64_t bytes, const std::string& why) {
    fmt::print(stderr, "iotape: removed {} ({}): {}\n", path, human_bytes(static_cast<double>(bytes)), why);
  };
  o.issue_complete_only = c.blk_events == "issue-complete";
  if (!c.buffer.empty()) o.buffer_bytes = units::parse_size(c.buffer, "--buffer");
  o.output.writer.flush_interval_ns = units::parse_duration(c.flush_interval, "--flush-interval");
  o.output.writer.durability = c.no_sync ? format::Durability::kWrite : format::Durability::kFdatasync;
  o.output.writer.file_mode = 0600;
  o.output.writer.zstd_level = c.zstd_level;
  const bool tty = ::isatty(STDERR_FILENO);

  const StopSignals signals;
  capture::RecordCallbacks cb;
  cb.note = [](const std::string& line) { fmt::print(stderr, "iotape: {}\n", line); };
  uint64_t last_ios = 0, last_bytes = 0;
  int64_t last_ns = 0;
  if (tty)
    cb.progress = [&](const capture::RecordProgress& p) {
      const double secs = static_cast<double>(p.elapsed_ns - last_ns) / 1e9;
      fmt::print(stderr, "\r{} IOs  {:.0f} IOPS  {:.1f} MB/s  {} dropped  trace {}   ", p.ios,
                 static_cast<double>(p.ios - last_ios) / secs, static_cast<double>(p.bytes - last_bytes) / secs / 1e6,
                 p.dropped, human_bytes(static_cast<double>(p.file_bytes)));
      std::fflush(stderr);
      last_ios = p.ios;
      last_bytes = p.bytes;
      last_ns = p.elapsed_ns;
    };
  const capture::RecordResult r = capture::record(o, signals.flag(), cb);
  if (tty) fmt::print(stderr, "\n");
  fmt::print(stderr, "iotape: {} IOs, {} dropped events, {} bytes in {}\n", r.ios, r.dropped, r.file_bytes,
             fmt::join(r.paths, " "));
  if (r.self_ios)
    fmt::print(stderr, "iotape: {} {} IOs ({}) the recording caused itself (its trace writes, their flushes and "
               "journal commits): {}\n",
               o.include_self ? "kept, flagged," : "left out", r.self_ios,
               human_bytes(static_cast<double>(r.self_bytes)), r.self_detail);
  if (r.removed_parts)
    fmt::print(stderr, "iotape: {} old parts ({}) removed by --keep/--max-total\n", r.removed_parts,
               human_bytes(static_cast<double>(r.removed_bytes)));
  if (r.unmatched)
    fmt::print(stderr,
               "iotape: {} completions ({} bytes) matched no submission (in flight when the capture began): "
               "counted in the metadata, not recorded as IOs\n",
               r.unmatched, r.unmatched_bytes);
  if (r.uncompleted)
    fmt::print(stderr, "iotape: {} IOs issued without a completion in the capture (kept without one)\n",
               r.uncompleted);
  if (r.write_failed) {
    fmt::print(stderr, "iotape: stopped: {}\n", r.stop_reason);
    throw ExitCode{kExitStopped};
  }
}

}  // namespace

void add_record_command(CLI::App& app) {
  auto c = std::make_shared<RecordCli>();
  auto* sub = app.add_subcommand("record", "Record the block IOs of this machine into a trace (needs root)");
  sub->add_option("-d,--device", c->o.devices,
                  "Device to record (path or MAJ:MIN; a partition means its disk); repeatable. "
                  "Default: every request-based whole disk");
  sub->add_option("-o,--output", c->o.output.path, "Trace file (with rotation: the stem of OUT.NNNN.iot parts)")
      ->required();
  sub->add_option("--backend", c->o.backend,
                  "auto (default: ebpf where this kernel loads it, else blktrace, saying why), ebpf, "
                  "or blktrace (the ftrace blk tracer)")
      ->check(CLI::IsMember({"auto", "ebpf", "blktrace"}));
  sub->add_option("--blk-events", c->blk_events,
                  "With --backend blktrace: all (default), or issue-complete: only the tracer's D and C events, "
                  "at about a third of its cost on the IO path; IOs keep issue and completion times, op, "
                  "flags, offset and size, without queue time or submitter")
      ->check(CLI::IsMember({"all", "issue-complete"}));
  sub->add_option("--duration", c->duration, "Stop after this long (e.g. 30s, 10m, 7d); default: until SIGINT/SIGTERM");
  sub->add_option("--rotate-size", c->rotate_size, "Start a new part file at this size (e.g. 512M, 1GiB, 1GB)");
  sub->add_option("--rotate-time", c->rotate_time, "Start a new part file after this long (e.g. 90m, 1h, 1d)");
  sub->add_option("--keep", c->keep,
                  "With rotation: when a part starts, remove the parts that ended longer ago than this (e.g. 7d)");
  sub->add_option("--max-total", c->max_total,
                  "With rotation: when a part starts, remove the oldest parts while the closed ones exceed this "
                  "(e.g. 20G); the disk holds at most this plus the open part");
  sub->add_flag("--include-self", c->o.include_self,
                "Keep the IOs the recording causes itself (its trace writes, the flushes and journal commits its "
                "fdatasync makes), flagged 'self'; by default they are left out and counted (capture.self_ios)");
  sub->add_option("--pid", c->o.pid, "Only IOs submitted by this process");
  sub->add_option("--comm", c->o.comm, "Only IOs submitted by threads of this name");
  sub->add_flag("--anonymize", c->o.output.anonymize, "Replace process names by stable hashes; omit host and serials");
  sub->add_option("--buffer", c->buffer, "Kernel-to-user buffer size, shared out among the CPUs, e.g. 64M, 64MiB (default 16M)");
  sub->add_option("--flush-interval", c->flush_interval,
                  "Write and fdatasync each IO at most this long after it completed, e.g. 100ms (default 1s): "
                  "a kill or power loss keeps every IO that completed more than this plus 0.1s before it. "
                  "IOs are written in issue order; one in flight longer than this is written late, and counted");
  sub->add_flag("--no-sync", c->no_sync, "Write at the flush interval but skip fdatasync: a kill keeps the bound above, a power loss does not");
  sub->add_option("--zstd-level", c->zstd_level,
                  "zstd level of the chunks (default 1; 9 makes them about 10% smaller for 3 times the CPU, "
                  "which the traced machine pays)")
      ->check(CLI::Range(1, 22));
  sub->footer(
      "Timestamps are CLOCK_BOOTTIME ns (they keep counting across suspend); the header anchors them to Unix time.\n"
      "Rotation parts OUT.0000.iot, OUT.0001.iot, ... share one trace_id: `iotape info OUT.*.iot` reads them as one;\n"
      "parts removed by --keep/--max-total (each one printed) leave the rest readable as one trace.\n"
      "Exit status: 0 stopped by signal or --duration, 3 the output could not be written (disk full): the trace\n"
      "is then valid up to its last complete chunk; 77 a device that cannot be recorded; other errors: iotape --help.");
  sub->callback([c] { run_record(*c); });
}

}  // namespace iotape::cli

// iotape info: totals of a trace.
#include <fmt/format.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>
#include <optional>

#include "cli/capture_end.h"
#include "cli/commands.h"
#include "format/summary.h"
#include "format/summary_json.h"

namespace iotape::cli {
namespace {

struct InfoOptions {
  std::vector<std::string> traces;
  bool json = false;
  std::string device;
};

uint64_t file_bytes(const std::vector<std::string>& paths) {
  uint64_t total = 0;
  for (const auto& p : paths) {
    struct stat st;
    if (::stat(p.c_str(), &st) == 0) total += static_cast<uint64_t>(st.st_size);
  }
  return total;
}

// What a capture left out of itself and removed, from its closing keys.
void print_capture_end(const std::vector<std::string>& traces, const format::TraceReader& reader) {
  const auto end_keys = capture_end_keys(traces, reader);
  if (const auto& m = end_keys; m.count("capture.self_ios")) {
    const auto bytes_it = m.find("capture.self_bytes");
    const bool kept = m.count("capture.include_self") && m.at("capture.include_self") == "1";
    fmt::print("self IO    {} IOs, {} bytes the recording caused itself: {}\n", m.at("capture.self_ios"),
               bytes_it == m.end() ? std::string("?") : bytes_it->second,
               kept ? "in the trace, flagged self (record --include-self)" : "left out");
  }
  if (const auto& m = end_keys; m.count("capture.removed_parts") && m.at("capture.removed_parts") != "0")
    fmt::print("removed    {} older parts, {} bytes (record --keep/--max-total)\n", m.at("capture.removed_parts"),
               m.count("capture.removed_bytes") ? m.at("capture.removed_bytes") : std::string("?"));
}

void run_info(const InfoOptions& o) {
  format::TraceReader reader(o.traces, {.decode_ahead = format::kToolDecodeAhead});
  std::optional<format::DeviceFilter> only;
  if (!o.device.empty()) only = format::parse_device_filter(o.device);
  const format::TraceSummary s = format::summarize(reader, only);
  const auto& h = reader.header();
  const uint64_t bytes = file_bytes(o.traces);
  const double per_io = s.ios ? static_cast<double>(bytes) / static_cast<double>(s.ios) : 0.0;

  nlohmann::ordered_json j;
  format::put_op_counts(j, s);
  format::put_time_span(j, s);
  j["dropped_events"] = s.dropped_events;
  j["late_ios"] = s.late_ios;
  j["errors"] = s.errors;
  j["with_queue_time"] = s.with_queue_time;
  j["with_completion"] = s.with_completion;
  j["file_bytes"] = bytes;
  j["bytes_per_io"] = std::round(per_io * 1000) / 1000;
  j["source"] = v1::Source_Name(h.source());
  j["source_detail"] = h.source_detail();
  j["clock"] = v1::ClockDomain_Name(h.clock());
  const auto idle = h.metadata().find("host.cpu_idle");
  if (idle != h.metadata().end()) j["cpu_idle"] = idle->second;
  auto devs = nlohmann::json::array();
  for (int i = 0; i < h.devices_size(); ++i) {
    const auto& d = h.devices(i);
    if (only && (d.major() != only->major || d.minor() != only->minor)) continue;
    devs.push_back({{"index", i},
                    {"dev", fmt::format("{}:{}", d.major(), d.minor())},
                    {"name", d.name()},
                    {"model", d.model()},
                    {"size_bytes", d.size_bytes()},
                    {"ios", i < static_cast<int>(s.ios_per_device.size()) ? s.ios_per_device[i] : 0}});
  }
  j["devices"] = devs;
  nlohmann::ordered_json meta = nlohmann::ordered_json::object();
  for (const auto& [k, v] : reader.metadata()) meta[k] = v;  // end keys included, sorted
  j["metadata"] = meta;
  j["damaged"] = s.status.damaged;
  if (s.status.damaged) j["damage"] = s.status.message;

  if (o.json) {
    fmt::print("{}\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
  } else {
    fmt::print("trace      {}\n", fmt::join(o.traces, " "));
    fmt::print("source     {} {}  clock {}  host {}  kernel {}\n", v1::Source_Name(h.source()),
               h.source_detail(), v1::ClockDomain_Name(h.clock()), h.host(), h.kernel());
    if (idle != h.metadata().end()) fmt::print("cpu idle   {}\n", idle->second);
    fmt::print("IOs        {}  (reads {}, writes {}, flushes {}, discards {}, write-zeroes {}, other {})\n", s.ios,
               s.op(format::Op::kRead).ios, s.op(format::Op::kWrite).ios, s.op(format::Op::kFlush).ios,
               s.op(format::Op::kDiscard).ios, s.op(format::Op::kWriteZeroes).ios, s.op(format::Op::kOther).ios);
    fmt::print("bytes      read {}  written {}  discarded {}\n", s.op(format::Op::kRead).bytes,
               s.op(format::Op::kWrite).bytes, s.op(format::Op::kDiscard).bytes);
    if (s.ios)
      fmt::print("time       {:.6f} s  (first {} ns, last {} ns)\n", s.duration_ns() / 1e9, s.first_ns,
                 s.last_ns);
    fmt::print("lost       {} dropped events, {} late IOs, {} IOs with errors\n", s.dropped_events, s.late_ios,
               s.errors);
    print_capture_end(o.traces, reader);
    // A capture keeps IOs it saw only in part (see capture.* in the header): say how many lack which time.
    fmt::print("times      {} IOs with a queue time, {} with a completion time\n", s.with_queue_time,
               s.with_completion);
    fmt::print("size       {} bytes, {:.3f} bytes per IO\n", bytes, per_io);
    for (const auto& d : devs)
      fmt::print("device     #{} {} {} {} {} bytes: {} IOs\n", d["index"].get<int>(), d["dev"].get<std::string>(),
                 d["name"].get<std::string>(), d["model"].get<std::string>(), d["size_bytes"].get<uint64_t>(),
                 d["ios"].get<uint64_t>());
    for (const auto& [k, v] : reader.metadata()) fmt::print("metadata   {} = {}\n", k, v);
  }
  if (s.status.damaged) {
    fmt::print(stderr, "iotape: warning: {} (totals cover the IOs before it)\n", s.status.message);
    throw ExitCode{kExitDamaged};
  }
}

}  // namespace

void add_info_command(CLI::App& app) {
  auto o = std::make_shared<InfoOptions>();
  auto* sub = app.add_subcommand("info", "Totals of a trace: IOs, bytes, time span, losses, size per IO");
  sub->add_option("TRACE", o->traces, "Trace file(s); several are read as one trace (rotated parts)")
      ->required()
      ->check(CLI::ExistingFile);
  sub->add_flag("--json", o->json, "One JSON object (keys: ios, reads, writes, flushes, discards, bytes_read, "
                                   "bytes_written, first_ns, last_ns, dropped_events, file_bytes, bytes_per_io, "
                                   "devices, metadata, ...)");
  sub->add_option("--device", o->device, "Count only the IOs of this device (MAJ:MIN)");
  sub->footer("metadata: the header's keys and those the producer wrote at the end (fidelity.*, replay.device_*,\n"
              "capture.unmatched_completions, ...).\n"
              "Exit status: 0 clean, 2 the trace is damaged (totals stop at the damage); other errors: iotape --help.");
  sub->callback([o] { run_info(*o); });
}

}  // namespace iotape::cli

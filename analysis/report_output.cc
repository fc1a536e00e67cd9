#include "analysis/report_output.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "format/summary_json.h"
#include "units/units.h"

namespace iotape::analysis {

namespace {

using nlohmann::ordered_json;

double rounded(double v, double scale = 1e4) { return std::round(v * scale) / scale; }
double pct(uint64_t part, uint64_t whole) { return whole ? rounded(100.0 * part / whole) : 0.0; }

ordered_json latency_json(const stats::LogLinearHistogram& h) {
  ordered_json j;
  j["count"] = h.count();
  j["mean"] = rounded(h.mean(), 1);
  j["min"] = h.min();
  j["p50"] = h.percentile(50);
  j["p90"] = h.percentile(90);
  j["p99"] = h.percentile(99);
  j["p99_9"] = h.percentile(99.9);
  j["max"] = h.max();
  return j;
}

// Per operation, only the operations that have values.
ordered_json per_op(const Report& r, stats::LogLinearHistogram OpLatency::*which, bool with_all) {
  ordered_json j = ordered_json::object();
  for (int op = 0; op < format::kOpCount; ++op) {
    const stats::LogLinearHistogram& h = r.latency[op].*which;
    if (h.count()) j[std::string(format::op_name(static_cast<format::Op>(op)))] = latency_json(h);
  }
  if (with_all) j["all"] = latency_json(r.data_latency());
  return j;
}

template <size_t N>
ordered_json bucket_pct(const std::array<std::string_view, N>& names, const std::array<uint64_t, N>& counts,
                        uint64_t total) {
  ordered_json j;
  for (size_t i = 0; i < N; ++i) j[std::string(names[i])] = pct(counts[i], total);
  return j;
}

std::string scalar(const ordered_json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  return v.dump();
}

// A CSV field: quoted when it holds a comma, a quote or a line break.
std::string csv_field(const ordered_json& j) {
  std::string value = scalar(j);
  if (value.find_first_of(",\"\n") == std::string::npos) return value;
  std::string quoted = "\"";
  for (char c : value) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

void flatten(const ordered_json& j, const std::string& prefix, std::string& out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) flatten(v, prefix.empty() ? k : prefix + "." + k, out);
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) flatten(j[i], prefix + "." + std::to_string(i), out);
  } else {
    out += prefix + "," + csv_field(j) + "\n";
  }
}

// Rows of cells, first column left-aligned, the others right-aligned.
std::string table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size(); ++c) {
      if (c >= width.size()) width.push_back(0);
      width[c] = std::max(width[c], row[c].size());
    }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c)
      line += c == 0 ? fmt::format("{:<{}}", row[c], width[c]) : fmt::format("  {:>{}}", row[c], width[c]);
    out += line + "\n";
  }
  return out;
}

std::string us(uint64_t ns) { return fmt::format("{:.1f}", ns / 1e3); }
std::string seconds(int64_t ns) { return fmt::format("{:.3f} s", ns / 1e9); }

}  // namespace

ordered_json report_json(const Report& r, const v1::TraceHeader& header, const OutputOptions& o) {
  ordered_json j;
  j["traces"] = o.traces;
  format::put_op_counts(j, r);
  j["GB_read"] = rounded(r.op(format::Op::kRead).bytes / 1e9, 1e6);
  j["GB_written"] = rounded(r.op(format::Op::kWrite).bytes / 1e9, 1e6);
  j["GB_discarded"] = rounded(r.op(format::Op::kDiscard).bytes / 1e9, 1e6);
  j["GB_write_zeroes"] = rounded(r.op(format::Op::kWriteZeroes).bytes / 1e9, 1e6);
  format::put_time_span(j, r);
  j["busy_time_ns"] = r.busy_ns;
  j["read_busy_time_ns"] = r.read_busy_ns;
  j["write_busy_time_ns"] = r.write_busy_ns;
  j["idle_ns"] = r.idle_ns();
  const uint64_t rd = r.op(format::Op::kRead).bytes, wr = r.op(format::Op::kWrite).bytes;
  j["avg_data_rate_MBps"] = {{"read", rounded(data_rate_MBps(rd, r.read_busy_ns))},
                             {"write", rounded(data_rate_MBps(wr, r.write_busy_ns))},
                             {"combined", rounded(data_rate_MBps(rd + wr, r.busy_ns))}};
  j["avg_service_time_ns"] =
      r.with_completion ? rounded(static_cast<double>(r.busy_ns) / r.with_completion, 1) : 0.0;
  j["latency_ns"] = per_op(r, &OpLatency::d2c, true);
  if (r.with_queue_time) {
    j["q2d_ns"] = per_op(r, &OpLatency::q2d, false);
    j["d2c_ns"] = j["latency_ns"];
    j["q2c_ns"] = per_op(r, &OpLatency::q2c, false);
  }
  j["io_size_pct"] = bucket_pct(SizeMix::kBucketNames, r.sizes.buckets(), r.sizes.ios());
  auto sizes = ordered_json::array();
  for (const auto& b : r.sizes.histogram().buckets()) sizes.push_back({{"low", b.low}, {"high", b.high}, {"count", b.count}});
  j["io_size_histogram"] = sizes;
  j["sequential_pct"] = pct(r.sequential.sequential(), r.sequential.ios());
  j["qd_pct"] = bucket_pct(stats::QueueDepth::kBucketNames, r.queue_depth.buckets(), r.queue_depth.ios());
  j["avg_qd"] = rounded(r.queue_depth.mean());
  j["max_qd"] = r.queue_depth.max();
  ordered_json series;
  const double interval_s = r.series.interval_ns() / 1e9;
  series["interval_ns"] = r.series.interval_ns();
  auto iops = ordered_json::array(), mbps = ordered_json::array();
  for (const auto& p : r.series.points()) {
    iops.push_back(rounded(p.ios / interval_s, 1e3));
    mbps.push_back(rounded((p.bytes_read + p.bytes_written) / 1e6 / interval_s, 1e3));
  }
  series["iops"] = iops;
  series["MBps"] = mbps;
  j["series"] = series;
  if (o.by_process) {
    auto procs = ordered_json::array();
    for (const auto& e : r.processes.top(o.top))
      procs.push_back({{"pid", e.pid},
                       {"comm", e.comm},
                       {"ios", e.ios},
                       {"bytes", e.bytes},
                       {"bytes_read", e.bytes_read},
                       {"bytes_written", e.bytes_written},
                       {"bytes_discarded", e.bytes_discarded},
                       {"bytes_write_zeroes", e.bytes_write_zeroes},
                       {"busy_time_ns", e.busy_ns},
                       {"error_bytes", e.error_bytes}});
    j["processes"] = procs;
    j["processes_approximate"] = r.processes.approximate();
  }
  j["devices"] = r.devices;
  j["with_completion"] = r.with_completion;
  j["with_queue_time"] = r.with_queue_time;
  j["errors"] = r.errors;
  j["dropped_events"] = r.dropped_events;
  j["late_ios"] = r.late_ios;
  j["damaged"] = r.status.damaged;
  ordered_json meta = ordered_json::object();
  for (const auto& [k, v] : r.metadata) meta[k] = v;  // sorted by key
  j["metadata"] = meta;
  if (o.by_phase) j["phases"] = phases_json(r, header);
  return j;
}

ordered_json phases_json(const Report& r, const v1::TraceHeader& header) {
  auto out = ordered_json::array();
  for (int k = 0; k < header.phases_size() && static_cast<size_t>(k) < r.phases.size(); ++k) {
    const v1::Phase& p = header.phases(k);
    const auto& f = r.phases[static_cast<size_t>(k)];
    const double seconds = f.duration_ns() / 1e9;
    const uint64_t bytes = f.op(format::Op::kRead).bytes + f.op(format::Op::kWrite).bytes;
    ordered_json j;
    j["index"] = k;
    j["name"] = p.name();
    j["pattern"] = p.pattern();
    j["block_size"] = p.block_size();
    j["queue_depth"] = p.queue_depth();
    j["read_pct"] = rounded(100 * p.read_share());
    j["sequential_pct"] = rounded(100 * p.sequential());
    j["alignment"] = p.alignment();
    j["data"] = p.data();
    j["threads"] = p.threads();
    j["ios"] = f.ios;
    j["reads"] = f.op(format::Op::kRead).ios;
    j["writes"] = f.op(format::Op::kWrite).ios;
    j["bytes_read"] = f.op(format::Op::kRead).bytes;
    j["bytes_written"] = f.op(format::Op::kWrite).bytes;
    j["duration_ns"] = f.duration_ns();
    j["busy_time_ns"] = f.busy_ns;
    j["iops"] = seconds > 0 ? rounded(f.ios / seconds, 1e3) : 0.0;
    j["MBps"] = seconds > 0 ? rounded(bytes / 1e6 / seconds, 1e3) : 0.0;
    j["mean_latency_ns"] = rounded(f.latency.mean(), 1);
    j["p99_latency_ns"] = f.latency.percentile(99);
    out.push_back(std::move(j));
  }
  return out;
}

std::string phases_csv(const ordered_json& phases) {
  std::string out;
  for (const auto& p : phases) {
    if (out.empty()) {
      std::string head;
      for (const auto& [k, v] : p.items()) head += (head.empty() ? "" : ",") + k;
      out = head + "\n";
    }
    std::string row;
    bool first = true;
    for (const auto& [k, v] : p.items()) {
      row += (first ? "" : ",") + csv_field(v);
      first = false;
    }
    out += row + "\n";
  }
  return out;
}

std::string report_csv(const ordered_json& j) {
  ordered_json flat = j;
  flat.erase("series");
  flat.erase("io_size_histogram");
  std::string out = "metric,value\n";
  flatten(flat, "", out);
  return out;
}

std::string series_csv(const Report& r) {
  std::string out = "t_s,ios,iops,read_MBps,write_MBps,MBps\n";
  const double s = r.series.interval_ns() / 1e9;
  const auto& pts = r.series.points();
  for (size_t i = 0; i < pts.size(); ++i) {
    const auto& p = pts[i];
    out += fmt::format("{:g},{},{:.3f},{:.3f},{:.3f},{:.3f}\n", i * s, p.ios, p.ios / s, p.bytes_read / 1e6 / s,
                       p.bytes_written / 1e6 / s, (p.bytes_read + p.bytes_written) / 1e6 / s);
  }
  return out;
}

namespace {

// The clock of a replay result's times (docs/format.md, "Replay results").
std::string replay_times(const v1::TraceHeader& header) {
  const auto it = header.metadata().find("replay.times");
  return it == header.metadata().end() ? std::string() : it->second;
}

// The summary lines: what the trace is and its totals.
std::string summary_text(const Report& r, const v1::TraceHeader& header, const OutputOptions& o) {
  std::string out;
  const uint64_t rd = r.op(format::Op::kRead).bytes, wr = r.op(format::Op::kWrite).bytes;
  std::vector<std::vector<std::string>> head = {
      {"trace", fmt::format("{}", fmt::join(o.traces, " "))},
      {"source", fmt::format("{} {}, {} device(s){}", v1::Source_Name(header.source()), header.source_detail(),
                             r.devices, r.devices > 1 ? " combined (pick one with --device)" : "")},
      {"times", header.source() != v1::SOURCE_REPLAY ? std::string()
                : replay_times(header) == "device"   ? std::string("device (block layer: issue to completion)")
                : replay_times(header) == "user"
                    ? std::string("user (the replayer's submission to reap, host overhead included)")
                    : std::string("unknown")},
      {"IOs",
       fmt::format("{}  (reads {}, writes {}, flushes {}, discards {}, write-zeroes {}, other {})", r.ios,
                   r.op(format::Op::kRead).ios, r.op(format::Op::kWrite).ios, r.op(format::Op::kFlush).ios,
                   r.op(format::Op::kDiscard).ios, r.op(format::Op::kWriteZeroes).ios, r.op(format::Op::kOther).ios)},
      {"bytes",
       fmt::format("read {:.3f} GB, written {:.3f} GB, discarded {:.3f} GB, write-zeroes {:.3f} GB", rd / 1e9, wr / 1e9,
                   r.op(format::Op::kDiscard).bytes / 1e9, r.op(format::Op::kWriteZeroes).bytes / 1e9)},
      {"duration",
       fmt::format("{}  (first issue to last completion; idle {})", seconds(r.duration_ns()), seconds(r.idle_ns()))},
      {"busy", fmt::format("{} ({:.1f}% of the duration); reads {}, writes {}", seconds(r.busy_ns),
                           r.duration_ns() ? 100.0 * r.busy_ns / r.duration_ns() : 0.0, seconds(r.read_busy_ns),
                           seconds(r.write_busy_ns))},
      {"data rate", fmt::format("read {:.2f} MB/s, write {:.2f} MB/s, combined {:.2f} MB/s  (bytes / busy time)",
                                data_rate_MBps(rd, r.read_busy_ns), data_rate_MBps(wr, r.write_busy_ns),
                                data_rate_MBps(rd + wr, r.busy_ns))},
      {"service", fmt::format("{} us average (busy time / completed IOs)",
                              r.with_completion ? us(r.busy_ns / r.with_completion) : "-")},
      {"sequential", fmt::format("{:.1f}% of reads and writes", pct(r.sequential.sequential(), r.sequential.ios()))},
      {"queue depth",
       fmt::format("mean {:.2f}, max {} (at issue, counting the IO)", r.queue_depth.mean(), r.queue_depth.max())},
  };
  // The header rows are label + free text: left-align both.
  for (const auto& row : head)
    if (!row[1].empty()) out += fmt::format("{:<13}{}\n", row[0], row[1]);
  if (r.late_ios || r.dropped_events || r.status.damaged)
    out += fmt::format("{:<13}{} dropped events, {} late IOs{}\n", "warning", r.dropped_events, r.late_ios,
                       r.status.damaged ? ", damaged: " + r.status.message : "");
  return out;
}

// Latency tables: device time per op, and the queue's when the trace has it.
std::string latency_text(const Report& r) {
  std::string out;
  auto latency_rows = [&](const std::string& title, stats::LogLinearHistogram OpLatency::*which, bool with_all) {
    std::vector<std::vector<std::string>> rows = {{title, "IOs", "mean", "p50", "p90", "p99", "p99.9", "max"}};
    auto add = [&](const std::string& name, const stats::LogLinearHistogram& h) {
      if (h.count())
        rows.push_back({name, std::to_string(h.count()), us(static_cast<uint64_t>(h.mean())), us(h.percentile(50)),
                        us(h.percentile(90)), us(h.percentile(99)), us(h.percentile(99.9)), us(h.max())});
    };
    for (int op = 0; op < format::kOpCount; ++op)
      add(std::string(format::op_name(static_cast<format::Op>(op))), r.latency[op].*which);
    if (with_all) add("read+write", r.data_latency());
    out += "\n" + table(rows);
  };
  latency_rows("latency (us)", &OpLatency::d2c, true);
  if (r.with_queue_time) {
    latency_rows("Q2D (us)", &OpLatency::q2d, false);
    latency_rows("Q2C (us)", &OpLatency::q2c, false);
  }
  return out;
}

// IO sizes and queue depths as shares of the IOs.
std::string bucket_text(const Report& r) {
  std::string out;
  auto bucket_rows = [&](const std::string& title, const auto& names, const auto& counts, uint64_t total) {
    std::vector<std::string> top = {title}, bottom = {"%"};
    for (size_t i = 0; i < names.size(); ++i) {
      top.emplace_back(names[i]);
      bottom.push_back(fmt::format("{:.1f}", pct(counts[i], total)));
    }
    out += "\n" + table({top, bottom});
  };
  bucket_rows("IO size", SizeMix::kBucketNames, r.sizes.buckets(), r.sizes.ios());
  bucket_rows("queue depth", stats::QueueDepth::kBucketNames, r.queue_depth.buckets(), r.queue_depth.ios());
  return out;
}

// The processes that moved the most bytes (--by process).
std::string process_text(const Report& r, const OutputOptions& o) {
  std::string out;
  std::vector<std::vector<std::string>> rows = {
      {"process", "pid", "IOs", "MB", "MB read", "MB written", "MB discarded", "MB write-zeroes", "busy (s)"}};
  auto mb = [](uint64_t bytes) { return fmt::format("{:.3f}", bytes / 1e6); };
  for (const auto& e : r.processes.top(o.top))
    rows.push_back({e.comm.empty() ? "?" : e.comm, e.pid ? std::to_string(e.pid) : "?", std::to_string(e.ios),
                    mb(e.bytes), mb(e.bytes_read), mb(e.bytes_written), mb(e.bytes_discarded), mb(e.bytes_write_zeroes),
                    fmt::format("{:.3f}", e.busy_ns / 1e9)});
  out += "\n" + table(rows);
  if (r.processes.approximate())
    out += "(more processes than tracked: the figures are upper bounds, see --help)\n";
  return out;
}

// One row per phase of a generated trace (--by phase).
std::string phase_text(const Report& r, const v1::TraceHeader& header) {
  if (header.phases_size() == 0) return "\nphases       none (the trace was not generated in phases)\n";
  std::vector<std::vector<std::string>> rows = {
      {"phase", "size", "QD", "read %", "IOs", "IOPS", "MB/s", "mean (us)", "p99 (us)", "busy (s)"}};
  for (const auto& p : phases_json(r, header))
    rows.push_back({p["name"].get<std::string>(),
                    p["block_size"] == 0 ? "mix" : units::format_size(p["block_size"].get<uint64_t>()),
                    p["queue_depth"] == 0 ? "mix" : std::to_string(p["queue_depth"].get<uint32_t>()),
                    fmt::format("{:g}", p["read_pct"].get<double>()), std::to_string(p["ios"].get<uint64_t>()),
                    fmt::format("{:.1f}", p["iops"].get<double>()), fmt::format("{:.2f}", p["MBps"].get<double>()),
                    us(static_cast<uint64_t>(p["mean_latency_ns"].get<double>())),
                    us(p["p99_latency_ns"].get<uint64_t>()),
                    fmt::format("{:.3f}", p["busy_time_ns"].get<int64_t>() / 1e9)});
  return "\n" + table(rows);
}

}  // namespace

std::string report_text(const Report& r, const v1::TraceHeader& header, const OutputOptions& o) {
  std::string out = summary_text(r, header, o) + latency_text(r) + bucket_text(r);
  if (o.by_process) out += process_text(r, o);
  if (o.by_phase) out += phase_text(r, header);
  return out;
}

}  // namespace iotape::analysis

#include "analysis/compare.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>

#include "analysis/report.h"
#include "analysis/report_output.h"
#include "analysis/svg_chart.h"
#include "traces/error.h"

namespace iotape::analysis {

namespace {

double number(const nlohmann::json& j, std::initializer_list<const char*> path) {
  const nlohmann::json* at = &j;
  for (const char* key : path) {
    if (!at->is_object() || !at->contains(key)) return 0;
    at = &(*at)[key];
  }
  return at->is_number() ? at->get<double>() : 0;
}

std::string text(const nlohmann::json& j, const char* key) {
  return j.contains("metadata") && j["metadata"].contains(key) && j["metadata"][key].is_string()
             ? j["metadata"][key].get<std::string>()
             : "";
}

// Workloads and drives in order of first appearance; drives keep one colour.
struct Layout {
  std::vector<std::string> workloads;
  std::vector<std::string> drives;
  explicit Layout(const std::vector<CompareEntry>& entries) {
    for (const auto& e : entries) {
      if (std::find(workloads.begin(), workloads.end(), e.workload) == workloads.end()) workloads.push_back(e.workload);
      if (std::find(drives.begin(), drives.end(), e.drive) == drives.end()) drives.push_back(e.drive);
    }
  }
  size_t colour(const std::string& drive) const {
    return static_cast<size_t>(std::find(drives.begin(), drives.end(), drive) - drives.begin());
  }
};

BarChart bars(const std::vector<CompareEntry>& entries, const Layout& layout, std::string title, std::string unit,
              bool higher_is_better, double CompareEntry::*value) {
  BarChart c{std::move(title), std::move(unit), higher_is_better, {}};
  for (const auto& w : layout.workloads) {
    BarChart::Group g{w, {}};
    for (const auto& e : entries)
      if (e.workload == w) g.bars.push_back({e.drive, e.*value, layout.colour(e.drive)});
    c.groups.push_back(std::move(g));
  }
  return c;
}

std::string file_safe(const std::string& name) {
  std::string out;
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) || c == '-' ? c : '_';
  return out.empty() ? "all" : out;
}

std::string cell(double v, int decimals) { return std::isnan(v) ? "n/a" : fmt::format("{:.{}f}", v, decimals); }

}  // namespace

CompareEntry entry_from_report(const nlohmann::json& j, const std::string& path) {
  CompareEntry e;
  e.path = path;
  e.workload = text(j, "workload");
  e.drive = text(j, "target");
  if (e.drive.empty()) e.drive = std::filesystem::path(path).stem().string();
  if (j.contains("metadata") && j["metadata"].contains("replay.times") && j["metadata"]["replay.times"].is_string())
    e.times = j["metadata"]["replay.times"].get<std::string>();
  e.ios = static_cast<uint64_t>(number(j, {"ios"}));
  e.busy_s = number(j, {"busy_time_ns"}) / 1e9;
  e.read_MBps = number(j, {"avg_data_rate_MBps", "read"});
  e.write_MBps = number(j, {"avg_data_rate_MBps", "write"});
  e.combined_MBps = number(j, {"avg_data_rate_MBps", "combined"});
  e.mean_latency_us = number(j, {"latency_ns", "all", "mean"}) / 1e3;
  e.p99_latency_us = number(j, {"latency_ns", "all", "p99"}) / 1e3;
  if (number(j, {"with_completion"}) == 0) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    e.busy_s = e.read_MBps = e.write_MBps = e.combined_MBps = e.mean_latency_us = e.p99_latency_us = nan;
  }
  const double interval_ns = number(j, {"series", "interval_ns"});
  e.series_interval_s = interval_ns > 0 ? interval_ns / 1e9 : 1;
  if (j.contains("series") && j["series"].contains("iops"))
    for (const auto& v : j["series"]["iops"]) e.iops.push_back(v.get<double>());
  return e;
}

CompareEntry load_entry(const std::string& path, const std::string& label) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw error_errno(path, "cannot open", errno);
  char first = 0;
  while (in.get(first) && std::isspace(static_cast<unsigned char>(first))) {
  }
  CompareEntry e;
  if (first == '{') {
    in.seekg(0);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(std::string(std::istreambuf_iterator<char>(in), {}));
    } catch (const nlohmann::json::exception& x) {
      throw InputError(path + ": not a report JSON: " + x.what());
    }
    e = entry_from_report(j, path);
  } else {
    TraceReader reader(path);
    const Report r = analyse(reader);
    e = entry_from_report(report_json(r, reader.header(), OutputOptions{{path}}), path);
  }
  if (!label.empty()) {
    const auto slash = label.rfind('/');
    if (slash == std::string::npos) {
      e.drive = label;
    } else {
      e.workload = label.substr(0, slash);
      e.drive = label.substr(slash + 1);
    }
  }
  return e;
}

nlohmann::ordered_json compare_json(const std::vector<CompareEntry>& entries) {
  auto out = nlohmann::ordered_json::array();
  for (const auto& e : entries)
    out.push_back({{"path", e.path},
                   {"workload", e.workload},
                   {"drive", e.drive},
                   {"ios", e.ios},
                   {"busy_time_s", e.busy_s},
                   {"avg_data_rate_MBps", {{"read", e.read_MBps}, {"write", e.write_MBps}, {"combined", e.combined_MBps}}},
                   {"mean_latency_us", e.mean_latency_us},
                   {"p99_latency_us", e.p99_latency_us},
                   {"series_interval_s", e.series_interval_s},
                   {"iops", e.iops}});
  return out;
}

std::vector<std::pair<std::string, std::string>> compare_svgs(const std::vector<CompareEntry>& entries) {
  const Layout layout(entries);
  std::vector<std::pair<std::string, std::string>> out;
  out.emplace_back("busy_time.svg", bar_chart_svg(bars(entries, layout, "Disk busy time", "s", false, &CompareEntry::busy_s)));
  out.emplace_back("data_rate.svg", bar_chart_svg(bars(entries, layout, "Average data rate, reads and writes", "MB/s",
                                                       true, &CompareEntry::combined_MBps)));
  out.emplace_back("data_rate_read.svg", bar_chart_svg(bars(entries, layout, "Average data rate, reads", "MB/s", true,
                                                            &CompareEntry::read_MBps)));
  out.emplace_back("data_rate_write.svg", bar_chart_svg(bars(entries, layout, "Average data rate, writes", "MB/s",
                                                             true, &CompareEntry::write_MBps)));
  out.emplace_back("latency_mean.svg", bar_chart_svg(bars(entries, layout, "Average latency, reads and writes",
                                                          "\xc2\xb5s", false, &CompareEntry::mean_latency_us)));
  out.emplace_back("latency_p99.svg", bar_chart_svg(bars(entries, layout, "99th percentile latency, reads and writes",
                                                         "\xc2\xb5s", false, &CompareEntry::p99_latency_us)));
  for (const auto& w : layout.workloads) {
    LineChart c{w.empty() ? "IOPS over time" : "IOPS over time: " + w, "seconds from the first IO", "IOPS", {}};
    for (const auto& e : entries)
      if (e.workload == w) c.lines.push_back({e.drive, e.series_interval_s, e.iops, layout.colour(e.drive)});
    out.emplace_back("iops_" + file_safe(w) + ".svg", line_chart_svg(c));
    // Performance consistency (iotape bench consistency): drops span decades, so also a log scale.
    if (w == "consistency") {
      c.title += " (log scale)";
      c.log_y = true;
      out.emplace_back("iops_" + file_safe(w) + "_log.svg", line_chart_svg(c));
    }
  }
  return out;
}

std::string compare_html(const std::vector<CompareEntry>& entries) {
  std::string h =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>iotape compare</title>\n"
      "<style>\n"
      "body { font-family: \"DejaVu Sans\", Arial, Helvetica, sans-serif; margin: 24px; color: #111111; max-width: 980px; }\n"
      "table { border-collapse: collapse; font-size: 13px; margin-bottom: 24px; }\n"
      "th, td { border: 1px solid #cccccc; padding: 4px 8px; text-align: right; white-space: nowrap; }\n"
      "th:nth-child(-n+2), td:nth-child(-n+2) { text-align: left; }\n"
      "figure { margin: 0 0 24px 0; break-inside: avoid; page-break-inside: avoid; }\n"
      "svg { max-width: 100%; height: auto; }\n"
      "p.note { font-size: 12px; color: #444444; }\n"
      "</style>\n</head>\n<body>\n<h1>iotape compare</h1>\n";
  h += "<table>\n<tr><th>workload</th><th>drive</th><th>IOs</th><th>busy time (s)</th><th>read MB/s</th>"
       "<th>write MB/s</th><th>combined MB/s</th><th>mean latency (\xc2\xb5s)</th><th>p99 latency (\xc2\xb5s)</th></tr>\n";
  for (const auto& e : entries)
    h += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
                     "<td>{}</td></tr>\n",
                     xml_escape(e.workload.empty() ? "-" : e.workload), xml_escape(e.drive), e.ios, cell(e.busy_s, 3),
                     cell(e.read_MBps, 2), cell(e.write_MBps, 2), cell(e.combined_MBps, 2), cell(e.mean_latency_us, 1),
                     cell(e.p99_latency_us, 1));
  h += "</table>\n<p class=\"note\">Busy time: time with at least one IO outstanding, idle excluded. Average data "
       "rate: bytes / busy time (MB = 10<sup>6</sup> bytes). Latency: issue to completion. n/a: the result has "
       "no completion times. Sources: ";
  for (size_t i = 0; i < entries.size(); ++i) {
    h += (i ? ", " : "") + xml_escape(entries[i].path);
    if (entries[i].times == "device") h += " (replay timed at the device: block-layer issue to completion)";
    if (entries[i].times == "user") h += " (replay timed by the replayer: submission to reap, host overhead included)";
  }
  h += ".</p>\n";
  for (const auto& [name, svg] : compare_svgs(entries)) h += "<figure id=\"" + name + "\">\n" + svg + "</figure>\n";
  h += "</body>\n</html>\n";
  return h;
}

}  // namespace iotape::analysis

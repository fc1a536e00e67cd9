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
#include "units/units.h"

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

// A chart of a figure against one phase parameter, and its values as a table.
struct PhaseChart {
  std::string name;  // file name
  XyChart chart;
};

// The phase parameters charted on the x axis; a figure against block size is
// a data rate, against queue depth or read share an IO rate.
struct Axis {
  const char* key;
  const char* label;
  XyChart::XFormat format;
  bool log2;
  double (*x)(const CompareEntry::Phase&);  // NaN: the phase has no single value
  bool iops;
};
const Axis kAxes[] = {
    {"qd", "queue depth", XyChart::XFormat::kNumber, true,
     [](const CompareEntry::Phase& p) { return p.queue_depth ? double(p.queue_depth) : NAN; }, true},
    {"bs", "block size", XyChart::XFormat::kSize, true,
     [](const CompareEntry::Phase& p) { return p.block_size ? double(p.block_size) : NAN; }, false},
    {"read", "read share", XyChart::XFormat::kPercent, false, [](const CompareEntry::Phase& p) { return p.read_pct; },
     true},
};

// Per workload and axis, one chart per combination of the other parameters
// whose phases take at least two values on the axis; a line per drive.
std::vector<PhaseChart> phase_charts(const std::vector<CompareEntry>& entries, const Layout& layout) {
  std::vector<PhaseChart> out;
  for (const auto& w : layout.workloads)
    for (const Axis& axis : kAxes) {
      // The fixed parameters of a chart, as a readable title, in order of first appearance.
      auto fixed = [&](const CompareEntry::Phase& p) {
        std::vector<std::string> parts;
        if (std::string(axis.key) != "read") parts.push_back(fmt::format("read {:g}%", p.read_pct));
        if (std::string(axis.key) != "qd") parts.push_back(p.queue_depth ? fmt::format("QD{}", p.queue_depth) : "QD mix");
        if (std::string(axis.key) != "bs")
          parts.push_back(p.block_size ? units::format_size(p.block_size) : std::string("size mix"));
        return fmt::format("{}", fmt::join(parts, ", "));
      };
      std::vector<std::pair<std::string, std::string>> groups;  // (key, title)
      for (const auto& e : entries)
        if (e.workload == w)
          for (const auto& p : e.phases) {
            if (std::isnan(axis.x(p))) continue;
            const std::string key = fixed(p) + "|" + p.other;
            if (std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == key; }) == groups.end())
              groups.emplace_back(key, fixed(p));
          }
      for (const auto& [key, title] : groups) {
        XyChart c;
        c.title = fmt::format("{} vs {}{}: {}", axis.iops ? "IOPS" : "Data rate", axis.label,
                              w.empty() ? "" : ", " + w, title);
        c.x_label = axis.label;
        c.y_unit = axis.iops ? "IOPS" : "MB/s";
        c.log2_x = axis.log2;
        c.x_format = axis.format;
        std::vector<double> xs;
        for (const auto& e : entries) {
          if (e.workload != w) continue;
          XyChart::Line line{e.drive, {}, layout.colour(e.drive)};
          for (const auto& p : e.phases) {
            const double x = axis.x(p);
            if (std::isnan(x) || fixed(p) + "|" + p.other != key) continue;
            if (std::find_if(line.points.begin(), line.points.end(), [&](const auto& pt) { return pt.first == x; }) !=
                line.points.end())
              continue;  // a repeated phase: its first run is charted
            line.points.emplace_back(x, axis.iops ? p.iops : p.MBps);
            if (std::find(xs.begin(), xs.end(), x) == xs.end()) xs.push_back(x);
          }
          std::sort(line.points.begin(), line.points.end());
          if (!line.points.empty()) c.lines.push_back(std::move(line));
        }
        if (xs.size() < 2) continue;
        out.push_back({fmt::format("phases_{}_{}_{}.svg", file_safe(w), axis.key, file_safe(title)), std::move(c)});
      }
    }
  return out;
}

// The values of a phase chart: a row per drive, a column per x value.
std::string phase_table(const XyChart& c) {
  std::vector<double> xs;
  for (const auto& l : c.lines)
    for (const auto& [x, y] : l.points)
      if (std::find(xs.begin(), xs.end(), x) == xs.end()) xs.push_back(x);
  std::sort(xs.begin(), xs.end());
  std::string h = "<table class=\"values\">\n<tr><th>" + xml_escape(c.y_unit) + "</th>";
  for (double x : xs) h += "<th>" + xml_escape(c.x_label + " " + x_label(x, c.x_format)) + "</th>";
  h += "</tr>\n";
  for (const auto& l : c.lines) {
    h += "<tr><td>" + xml_escape(l.label) + "</td>";
    for (double x : xs) {
      auto it = std::find_if(l.points.begin(), l.points.end(), [&](const auto& pt) { return pt.first == x; });
      h += "<td>" + (it == l.points.end() ? std::string("-") : cell(it->second, c.y_unit == "IOPS" ? 0 : 1)) + "</td>";
    }
    h += "</tr>\n";
  }
  return h + "</table>\n";
}

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
  if (j.contains("phases") && j["phases"].is_array())
    for (const auto& p : j["phases"]) {
      CompareEntry::Phase f;
      f.name = p.value("name", "");
      f.block_size = static_cast<uint64_t>(number(p, {"block_size"}));
      f.queue_depth = static_cast<uint32_t>(number(p, {"queue_depth"}));
      f.read_pct = number(p, {"read_pct"});
      f.other = fmt::format("{}|{}|{}|{}", p.value("pattern", ""), number(p, {"sequential_pct"}),
                            number(p, {"alignment"}), number(p, {"threads"}));
      f.iops = number(p, {"iops"});
      f.MBps = number(p, {"MBps"});
      e.phases.push_back(std::move(f));
    }
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
    ReportOptions ro;
    ro.by_phase = true;
    const Report r = analyse(reader, ro);
    OutputOptions oo{{path}};
    oo.by_phase = true;
    e = entry_from_report(report_json(r, reader.header(), oo), path);
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
  for (const auto& e : entries) {
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
    if (!e.phases.empty()) {
      auto phases = nlohmann::ordered_json::array();
      for (const auto& p : e.phases)
        phases.push_back({{"name", p.name}, {"block_size", p.block_size}, {"queue_depth", p.queue_depth},
                          {"read_pct", p.read_pct}, {"iops", p.iops}, {"MBps", p.MBps}});
      out.back()["phases"] = phases;
    }
  }
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
  for (const auto& p : phase_charts(entries, layout)) out.emplace_back(p.name, xy_chart_svg(p.chart));
  return out;
}

std::string compare_html(const std::vector<CompareEntry>& entries) {
  std::string h = html_page_head("iotape compare");
  h += "<h1>iotape compare</h1>\n";
  const Layout layout(entries);
  const auto phases = phase_charts(entries, layout);
  if (!phases.empty())
    h.insert(h.find("</style>"), "table.values { font-size: 12px; margin: 4px 0 0 0; }\n"
                                 "table.values th:nth-child(2), table.values td:nth-child(2) { text-align: right; }\n");
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
  for (const auto& [name, svg] : compare_svgs(entries)) {
    h += "<figure id=\"" + name + "\">\n" + svg;
    for (const auto& p : phases)
      if (p.name == name) h += phase_table(p.chart);
    h += "</figure>\n";
  }
  h += "</body>\n</html>\n";
  return h;
}

}  // namespace iotape::analysis

#include "analysis/compare.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <sstream>

#include "analysis/report.h"
#include "analysis/report_output.h"
#include "analysis/svg_chart.h"
#include "format/error.h"
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

// Per axis, one chart of workload `w` per combination of the other parameters
// whose phases take at least two values on the axis; a line per drive.
std::vector<PhaseChart> phase_charts(const Comparison& cmp, const std::string& w, const std::string& file_key) {
  const auto& entries = cmp.entries;
  std::vector<PhaseChart> out;
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
        XyChart::Line line{e.drive, {}, cmp.colour(e.drive)};
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
      out.push_back({fmt::format("phases_{}_{}_{}.svg", file_key, axis.key, file_safe(title)), std::move(c)});
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


// The metrics every workload gets a table row and a bar chart for.
struct Metric {
  const char* file;   // chart file name, before the workload
  const char* title;
  const char* unit;
  bool higher_is_better;
  double CompareEntry::*value;
  int decimals;       // in the table
};
const Metric kMetrics[] = {
    {"busy_time", "Disk busy time", "s", false, &CompareEntry::busy_s, 3},
    {"data_rate", "Average data rate, reads and writes", "MB/s", true, &CompareEntry::combined_MBps, 2},
    {"data_rate_read", "Average data rate, reads", "MB/s", true, &CompareEntry::read_MBps, 2},
    {"data_rate_write", "Average data rate, writes", "MB/s", true, &CompareEntry::write_MBps, 2},
    {"latency_mean", "Average latency, reads and writes", "\xc2\xb5s", false, &CompareEntry::mean_latency_us, 1},
    {"latency_p99", "99th percentile latency, reads and writes", "\xc2\xb5s", false, &CompareEntry::p99_latency_us, 1},
};

// The entry a workload's ratios are to.
const CompareEntry* baseline_entry(const Comparison& c, const std::string& w) {
  for (const auto& e : c.entries)
    if (e.workload == w && e.drive == c.baseline(w)) return &e;
  return nullptr;
}

std::string ratio_note(const CompareEntry& e, const CompareEntry* base, double CompareEntry::*value) {
  if (!base) return "";
  return ratio_text(ratio(e.*value, base->*value)) + (&e == base ? " (baseline)" : "");
}

BarChart bars(const Comparison& c, const std::string& w, const Metric& m) {
  BarChart chart{w.empty() ? m.title : fmt::format("{}: {}", m.title, w), m.unit, m.higher_is_better, {{"", {}}}};
  const CompareEntry* base = baseline_entry(c, w);
  for (const auto& e : c.entries)
    if (e.workload == w) chart.groups[0].bars.push_back({e.drive, e.*(m.value), c.colour(e.drive), ratio_note(e, base, m.value)});
  return chart;
}

// File-name keys of the workloads, unique even where file_safe is not.
std::vector<std::string> workload_keys(const Comparison& c) {
  std::vector<std::string> keys;
  for (const auto& w : c.workloads) {
    std::string k = file_safe(w);
    for (int n = 2; std::find(keys.begin(), keys.end(), k) != keys.end(); ++n) k = file_safe(w) + "_" + std::to_string(n);
    keys.push_back(k);
  }
  return keys;
}

// The IOPS-over-time chart of a workload: its series share the interval
// make_comparison chose; the x axis is in ms for runs under 2 s.
LineChart iops_chart(const Comparison& c, const std::string& w) {
  double interval = 0, length = 0;
  for (const auto& e : c.entries)
    if (e.workload == w) {
      interval = std::max(interval, e.series_interval_s);
      length = std::max(length, e.series_interval_s * static_cast<double>(e.iops.size()));
    }
  const bool ms = length < 2;
  const double unit = ms ? 1e3 : 1;
  LineChart chart{w.empty() ? "IOPS over time" : "IOPS over time: " + w,
                  fmt::format("{} from the first IO (IOs issued per {} bin / the bin)", ms ? "ms" : "seconds",
                              interval < 1 ? fmt::format("{:g} ms", interval * 1e3) : fmt::format("{:g} s", interval)),
                  "IOPS", {}};
  for (const auto& e : c.entries)
    if (e.workload == w) chart.lines.push_back({e.drive, e.series_interval_s * unit, e.iops, c.colour(e.drive)});
  // The legend in drive order, as on every chart.
  std::stable_sort(chart.lines.begin(), chart.lines.end(), [](const auto& a, const auto& b) { return a.colour < b.colour; });
  return chart;
}

// Bin widths a short run's IOPS are charted in: 1, 2, 5 steps from 100 us.
constexpr int64_t kBinsNs[] = {100'000,    200'000,    500'000,     1'000'000,   2'000'000,  5'000'000,
                               10'000'000, 20'000'000, 50'000'000, 100'000'000, 200'000'000, 500'000'000};
constexpr double kMaxBins = 200;  // enough to see a run's shape, few enough to read each bin

// The series of a workload whose longest run is `longest_ns`: the widest
// bins a trace gave for long runs, else the narrowest of kBinsNs that
// covers the run in at most kMaxBins.
void rebin(CompareEntry& e, int64_t longest_ns) {
  if (e.fine_ios.empty()) return;  // from a saved report: its own series
  int64_t bin = 1'000'000'000;
  if (longest_ns < CompareEntry::kFineRunNs)
    for (int64_t b : kBinsNs)
      if (static_cast<double>(longest_ns) / static_cast<double>(b) <= kMaxBins) {
        bin = b;
        break;
      }
  const size_t per = static_cast<size_t>(bin / CompareEntry::kFineBinNs);
  e.series_interval_s = static_cast<double>(bin) / 1e9;
  e.iops.assign((e.fine_ios.size() + per - 1) / per, 0);
  for (size_t i = 0; i < e.fine_ios.size(); ++i) e.iops[i / per] += static_cast<double>(e.fine_ios[i]);
  for (double& v : e.iops) v /= e.series_interval_s;
}

// "a (x, y), b (z)": the values of one setting under a workload, with the drives that have each.
std::string spread(const std::vector<const CompareEntry*>& es, std::string (*of)(const CompareEntry&)) {
  std::vector<std::pair<std::string, std::vector<std::string>>> values;
  for (const CompareEntry* e : es) {
    const std::string v = of(*e);
    auto it = std::find_if(values.begin(), values.end(), [&](const auto& p) { return p.first == v; });
    if (it == values.end()) it = values.insert(values.end(), {v, {}});
    it->second.push_back(e->drive);
  }
  if (values.size() < 2) return "";
  std::vector<std::string> parts;
  for (const auto& [v, drives] : values) parts.push_back(fmt::format("{} ({})", v, fmt::join(drives, ", ")));
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string or_not_recorded(const std::string& s) { return s.empty() ? "not recorded" : s; }
std::string timing_of(const CompareEntry& e) { return e.timing.empty() ? "not a replay" : e.timing; }
std::string times_of(const CompareEntry& e) { return e.times.empty() ? "not recorded" : e.times; }
std::string prefill_of(const CompareEntry& e) { return or_not_recorded(e.prefill); }
std::string speed_of(const CompareEntry& e) { return or_not_recorded(e.speed); }

std::string base_name(const std::string& paths) {
  std::vector<std::string> names;
  size_t at = 0;
  while (at < paths.size()) {
    size_t end = paths.find(' ', at);
    if (end == std::string::npos) end = paths.size();
    if (end > at) names.push_back(std::filesystem::path(paths.substr(at, end - at)).filename().string());
    at = end + 1;
  }
  return fmt::format("{}", fmt::join(names, " "));
}

// The word=value of a replay.options line ("" when absent).
std::string option(const std::string& options, const std::string& word) {
  const std::string key = word + "=";
  for (size_t at = options.find(key); at != std::string::npos; at = options.find(key, at + 1))
    if (at == 0 || options[at - 1] == ' ') {
      const size_t end = options.find(' ', at);
      return options.substr(at + key.size(), end == std::string::npos ? std::string::npos : end - at - key.size());
    }
  return "";
}

}  // namespace

double ratio(double value, double baseline) {
  return value >= 0 && baseline > 0 && std::isfinite(value) && std::isfinite(baseline)
             ? value / baseline
             : std::numeric_limits<double>::quiet_NaN();
}

std::string ratio_text(double r) {
  if (std::isnan(r)) return "n/a";
  return r >= 10 || r < 0.01 ? short_number(r) + "x" : fmt::format("{:.2f}x", r);
}

size_t Comparison::colour(const std::string& drive) const {
  return static_cast<size_t>(std::find(drives.begin(), drives.end(), drive) - drives.begin());
}

const std::string& Comparison::baseline(const std::string& workload) const {
  return baselines[static_cast<size_t>(std::find(workloads.begin(), workloads.end(), workload) - workloads.begin())];
}

CompareEntry entry_from_report(const nlohmann::json& j, const std::string& path, const v1::TraceHeader* header) {
  CompareEntry e;
  e.path = path;
  e.source = text(j, "replay.source");
  e.source_sha256 = text(j, "replay.source_sha256");
  e.options = text(j, "replay.options");
  e.times = text(j, "replay.times");
  e.prefill = text(j, "replay.prefill");
  if (e.prefill.empty()) e.prefill = option(e.options, "prefill");  // replay.options names it when not none
  e.speed = option(e.options, "speed");
  e.timing = option(e.options, "timing");
  if (header) {
    e.host = header->host();
    e.kernel = header->kernel();
    const std::string& detail = header->source_detail();
    if (detail.rfind("replay:", 0) == 0) e.timing = detail.substr(7);
  }
  e.workload = text(j, "workload");
  if (e.workload.empty()) e.workload = base_name(e.source);
  e.drive = text(j, "target");
  if (e.drive.empty()) e.drive = text(j, "replay.targets");
  if (e.drive.empty()) e.drive = std::filesystem::path(path).stem().string();
  e.ios = static_cast<uint64_t>(number(j, {"ios"}));
  e.duration_s = number(j, {"duration_ns"}) / 1e9;
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
  if (!in) throw format::error_errno(path, "cannot open", errno);
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
      throw format::InputError(path + ": not a report JSON: " + x.what());
    }
    e = entry_from_report(j, path);
  } else {
    format::TraceReader reader(path);
    ReportOptions ro;
    ro.by_phase = true;
    ro.source = path;
    const Report r = analyse(reader, ro);
    OutputOptions oo{{path}};
    oo.by_phase = true;
    e = entry_from_report(report_json(r, reader.header(), oo), path, &reader.header());
    // A short run: its IOs per 100 us, from a second pass (cheap: the run is short).
    if (r.ios && r.duration_ns() < CompareEntry::kFineRunNs) {
      format::TraceReader again(path);
      bool origin_known = false;
      int64_t origin = 0;
      for (auto batch = again.next_batch(); !batch.empty(); batch = again.next_batch())
        for (const format::Io& io : batch) {
          if (!origin_known) origin = io.issue_ns, origin_known = true;  // as analyse: the trace's first IO
          const auto bin = static_cast<size_t>(std::max<int64_t>(0, io.issue_ns - origin) / CompareEntry::kFineBinNs);
          if (bin >= e.fine_ios.size()) e.fine_ios.resize(bin + 1);
          ++e.fine_ios[bin];
        }
    }
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

// Whether `e`, a trace that is no replay result, is the very file a replay
// result among `entries` replayed (the recording beside its replays).
bool replayed_here(const std::vector<CompareEntry>& entries, const CompareEntry& e) {
  std::error_code ec;
  for (const auto& r : entries) {
    if (r.source_sha256.empty()) continue;
    std::istringstream sources(r.source);  // replay.source: the paths, separated by spaces
    for (std::string p; sources >> p;)
      if (std::filesystem::equivalent(p, e.path, ec)) return true;
  }
  return false;
}

namespace {

// Different source traces under one label: one workload per source, each
// labelled by its source; results that name no source are warned of.
void split_by_source(Comparison& c) {
  std::vector<std::string> labels;  // as given, in order of first appearance
  for (const auto& e : c.entries)
    if (std::find(labels.begin(), labels.end(), e.workload) == labels.end()) labels.push_back(e.workload);
  for (const auto& w : labels) {
    std::vector<std::string> shas, unknown;
    for (const auto& e : c.entries)
      if (e.workload == w) {
        if (e.source_sha256.empty() && !replayed_here(c.entries, e)) unknown.push_back(e.drive);
        else if (!e.source_sha256.empty() && std::find(shas.begin(), shas.end(), e.source_sha256) == shas.end())
          shas.push_back(e.source_sha256);
      }
    if (!unknown.empty() && !shas.empty())
      c.warnings.push_back(fmt::format("workload \"{}\": {} record no source trace (not replay results): cannot "
                                       "check that they ran the IOs the replays ran",
                                       w, fmt::join(unknown, ", ")));
    if (shas.size() < 2) continue;
    // Named by the source's file name; by its hash too where names repeat.
    std::vector<std::string> names;
    for (const auto& sha : shas) {
      const auto it = std::find_if(c.entries.begin(), c.entries.end(),
                                   [&](const auto& e) { return e.workload == w && e.source_sha256 == sha; });
      names.push_back(base_name(it->source));
    }
    std::vector<std::string> new_labels;
    for (size_t i = 0; i < shas.size(); ++i) {
      const bool repeated = std::count(names.begin(), names.end(), names[i]) > 1;
      const std::string src = repeated ? fmt::format("{} sha256 {}", names[i], shas[i].substr(0, 12)) : names[i];
      new_labels.push_back(w.empty() ? fmt::format("[source {}]", src) : fmt::format("{} [source {}]", w, src));
    }
    for (auto& e : c.entries)
      if (e.workload == w && !e.source_sha256.empty())
        e.workload = new_labels[static_cast<size_t>(std::find(shas.begin(), shas.end(), e.source_sha256) - shas.begin())];
    c.warnings.push_back(fmt::format("workload \"{}\" holds replays of {} different source traces (replay.source_sha256): "
                                     "not compared with each other, charted apart as \"{}\"",
                                     w, shas.size(), fmt::join(new_labels, "\", \"")));
  }
}

}  // namespace

Comparison make_comparison(std::vector<CompareEntry> entries, const std::string& baseline) {
  Comparison c;
  c.entries = std::move(entries);
  split_by_source(c);

  for (const auto& e : c.entries) {
    if (std::find(c.workloads.begin(), c.workloads.end(), e.workload) == c.workloads.end()) c.workloads.push_back(e.workload);
    if (std::find(c.drives.begin(), c.drives.end(), e.drive) == c.drives.end()) c.drives.push_back(e.drive);
  }
  if (!baseline.empty() && std::find(c.drives.begin(), c.drives.end(), baseline) == c.drives.end())
    throw format::UsageError(
        fmt::format("--baseline {}: no result has that drive (drives: {})", baseline, fmt::join(c.drives, ", ")));

  for (const auto& w : c.workloads) {
    std::vector<const CompareEntry*> es;
    int64_t longest_ns = 0;
    for (const auto& e : c.entries)
      if (e.workload == w) {
        es.push_back(&e);
        longest_ns = std::max(longest_ns, static_cast<int64_t>(std::llround(e.duration_s * 1e9)));
      }
    // The first drive by default: the same in every workload that has it.
    const std::string& wanted = baseline.empty() ? c.drives.front() : baseline;
    const bool has_baseline = std::any_of(es.begin(), es.end(), [&](const CompareEntry* e) { return e->drive == wanted; });
    c.baselines.push_back(has_baseline ? wanted : es.front()->drive);
    if (!baseline.empty() && !has_baseline)
      c.warnings.push_back(fmt::format("workload \"{}\" has no result of drive \"{}\": its ratios are to \"{}\"", w,
                                       baseline, es.front()->drive));
    // Settings that change what a replay measures: a recording or a model has none.
    std::vector<const CompareEntry*> replays;
    for (const CompareEntry* e : es)
      if (!e->timing.empty()) replays.push_back(e);
    const std::pair<const char*, std::string (*)(const CompareEntry&)> settings[] = {
        {"timing", timing_of}, {"clock (replay.times)", times_of}, {"prefill", prefill_of}};
    for (const auto& [name, of] : settings)
      if (const std::string s = spread(replays, of); !s.empty())
        c.warnings.push_back(fmt::format("workload \"{}\": results differ in {}: {}", w, name, s));
    std::vector<const CompareEntry*> original;  // speed matters only at the recorded times
    for (const CompareEntry* e : es)
      if (e->timing == "original") original.push_back(e);
    if (const std::string s = spread(original, speed_of); !s.empty())
      c.warnings.push_back(fmt::format("workload \"{}\": results differ in replay speed: {}", w, s));
    for (auto& e : c.entries)
      if (e.workload == w) rebin(e, longest_ns);
  }
  return c;
}

nlohmann::ordered_json compare_json(const Comparison& c) {
  auto out = nlohmann::ordered_json::array();
  for (const auto& e : c.entries) {
    const CompareEntry* base = baseline_entry(c, e.workload);
    auto ratios = nlohmann::ordered_json::object();
    ratios["baseline"] = c.baseline(e.workload);
    for (const Metric& m : kMetrics) ratios[m.file] = ratio(e.*(m.value), base->*(m.value));
    out.push_back({{"path", e.path},
                   {"workload", e.workload},
                   {"drive", e.drive},
                   {"settings",
                    {{"source", e.source}, {"source_sha256", e.source_sha256}, {"timing", e.timing},
                     {"times", e.times}, {"prefill", e.prefill}, {"speed", e.speed}, {"options", e.options},
                     {"host", e.host}, {"kernel", e.kernel}}},
                   {"ios", e.ios},
                   {"duration_s", e.duration_s},
                   {"busy_time_s", e.busy_s},
                   {"avg_data_rate_MBps", {{"read", e.read_MBps}, {"write", e.write_MBps}, {"combined", e.combined_MBps}}},
                   {"mean_latency_us", e.mean_latency_us},
                   {"p99_latency_us", e.p99_latency_us},
                   {"ratios", ratios},
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

namespace {

// One workload's charts, in page order; `phases` receives its phase charts.
std::vector<std::pair<std::string, std::string>> workload_svgs(const Comparison& c, const std::string& w,
                                                              const std::string& key, std::vector<PhaseChart>* phases) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const Metric& m : kMetrics) out.emplace_back(fmt::format("{}_{}.svg", m.file, key), bar_chart_svg(bars(c, w, m)));
  LineChart t = iops_chart(c, w);
  out.emplace_back("iops_" + key + ".svg", line_chart_svg(t));
  // Performance consistency (iotape bench consistency): drops span decades, so also a log scale.
  if (w == "consistency") {
    t.title += " (log scale)";
    t.log_y = true;
    out.emplace_back("iops_" + key + "_log.svg", line_chart_svg(t));
  }
  auto ph = phase_charts(c, w, key);
  for (const auto& p : ph) out.emplace_back(p.name, xy_chart_svg(p.chart));
  if (phases) *phases = std::move(ph);
  return out;
}

std::string swatch(const Comparison& c, const std::string& drive) {
  return fmt::format("<span style=\"color:{}\">\xe2\x96\xa0</span> {}", series_colour(c.colour(drive)), xml_escape(drive));
}

// How each result was made: what a reader must know to trust a comparison.
std::string settings_table(const Comparison& c) {
  std::string h =
      "<h2>Results and how they were made</h2>\n<table class=\"settings\">\n<tr><th>workload</th><th>drive</th>"
      "<th>source trace</th><th>timing</th><th>clock</th><th>prefill</th><th>speed</th><th>host</th><th>kernel</th></tr>\n";
  for (const auto& e : c.entries) {
    const std::string source =
        e.source.empty() ? std::string("not a replay")
                         : e.source + (e.source_sha256.empty() ? "" : " (sha256 " + e.source_sha256.substr(0, 12) + "\xe2\x80\xa6)");
    h += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
                     "<td>{}</td></tr>\n",
                     xml_escape(e.workload.empty() ? "-" : e.workload), swatch(c, e.drive), xml_escape(source),
                     xml_escape(timing_of(e)), xml_escape(times_of(e)), xml_escape(prefill_of(e)),
                     xml_escape(speed_of(e)), xml_escape(or_not_recorded(e.host)), xml_escape(or_not_recorded(e.kernel)));
  }
  h += "</table>\n<table class=\"settings\">\n<tr><th>result file</th><th>replay options (replay.options)</th></tr>\n";
  for (const auto& e : c.entries)
    h += fmt::format("<tr><td>{}</td><td class=\"wrap\">{}</td></tr>\n", xml_escape(e.path),
                     xml_escape(e.options.empty() ? "not a replay result" : e.options));
  return h + "</table>\n<p class=\"note\">Timing: afap = as fast as possible at the recorded queue depth, original = "
             "at the recorded times (scaled by speed). Clock: device = block-layer issue to completion, user = the "
             "replayer's submission to reap (host overhead included). Prefill: what was written before the timed "
             "replay. A saved report JSON does not carry host and kernel.</p>\n";
}

// A workload's figures: a row per metric, a column per result, each value with its ratio.
std::string figures_table(const Comparison& c, const std::string& w) {
  const CompareEntry* base = baseline_entry(c, w);
  std::vector<const CompareEntry*> es;
  for (const auto& e : c.entries)
    if (e.workload == w) es.push_back(&e);
  // Drives in one order in every workload's table.
  std::stable_sort(es.begin(), es.end(), [&](auto* a, auto* b) { return c.colour(a->drive) < c.colour(b->drive); });
  std::string h = "<table class=\"figures\">\n<tr><th>metric</th>";
  for (const CompareEntry* e : es) h += "<th>" + swatch(c, e->drive) + "</th>";
  h += "</tr>\n<tr><td>IOs</td>";
  for (const CompareEntry* e : es) h += fmt::format("<td>{}</td>", e->ios);
  h += "</tr>\n<tr><td>duration, s (first issue to last completion)</td>";
  for (const CompareEntry* e : es) h += "<td>" + cell(e->duration_s, 3) + "</td>";
  h += "</tr>\n";
  for (const Metric& m : kMetrics) {
    h += fmt::format("<tr><td>{}, {} ({} is better)</td>", m.title, m.unit, m.higher_is_better ? "higher" : "lower");
    for (const CompareEntry* e : es)
      h += fmt::format("<td>{} <b>{}</b></td>", cell(e->*(m.value), m.decimals), ratio_note(*e, base, m.value));
    h += "</tr>\n";
  }
  return h + "</table>\n";
}

}  // namespace

std::vector<std::pair<std::string, std::string>> compare_svgs(const Comparison& c) {
  std::vector<std::pair<std::string, std::string>> out;
  const auto keys = workload_keys(c);
  for (size_t i = 0; i < c.workloads.size(); ++i)
    for (auto& svg : workload_svgs(c, c.workloads[i], keys[i], nullptr)) out.push_back(std::move(svg));
  return out;
}

std::string compare_html(const Comparison& c) {
  std::string h = html_page_head("iotape compare");
  h.insert(h.find("</style>"),
           "table.values { font-size: 12px; margin: 4px 0 0 0; }\n"
           "table.values th:nth-child(2), table.values td:nth-child(2) { text-align: right; }\n"
           "table.settings th, table.settings td { text-align: left; }\n"
           "table.settings td.wrap { white-space: normal; font-family: monospace; }\n"
           "table.figures th, table.figures td { text-align: right; }\n"
           "table.figures th:first-child, table.figures td:first-child { text-align: left; }\n"
           "div.warning { border: 2px solid #D55E00; background: #fff3ec; padding: 8px 12px; margin-bottom: 16px; }\n"
           "h2 { font-size: 20px; margin-top: 32px; }\n");
  h += "<h1>iotape compare</h1>\n";
  if (!c.warnings.empty()) {
    h += "<div class=\"warning\"><b>Warning: these results do not all compare.</b>\n<ul>\n";
    for (const auto& w : c.warnings) h += "<li>" + xml_escape(w) + "</li>\n";
    h += "</ul>\n</div>\n";
  }
  h += settings_table(c);
  h += "<p class=\"note\">Busy time: time with at least one IO outstanding, idle excluded. Average data rate: "
       "bytes / busy time (MB = 10<sup>6</sup> bytes). Latency: issue to completion. n/a: the result has no "
       "completion times. Ratios (in bold, and on the bars): a drive's figure / the baseline drive's figure in "
       "the same workload; read each with its metric's direction (busy time 0.50x = half the busy time, better; "
       "MB/s 0.50x = half the rate, worse). Every workload has its own table and charts: figures of different "
       "workloads are not comparable. Each drive has one colour on every chart.</p>\n";
  const auto keys = workload_keys(c);
  for (size_t i = 0; i < c.workloads.size(); ++i) {
    const std::string& w = c.workloads[i];
    h += "<h2>Workload: " + xml_escape(w.empty() ? "(no workload name)" : w) + "</h2>\n";
    h += "<p class=\"note\">Ratios are to " + xml_escape(c.baselines[i]) + ".</p>\n";
    h += figures_table(c, w);
    std::vector<PhaseChart> phases;
    for (const auto& [name, svg] : workload_svgs(c, w, keys[i], &phases)) {
      h += "<figure id=\"" + xml_escape(name) + "\">\n" + svg;
      for (const auto& p : phases)
        if (p.name == name) h += phase_table(p.chart);
      h += "</figure>\n";
    }
  }
  h += "</body>\n</html>\n";
  return h;
}

}  // namespace iotape::analysis

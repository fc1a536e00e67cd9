#include "analysis/review_page.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <functional>
#include <optional>

#include "analysis/svg_chart.h"
#include "format/error.h"

namespace iotape::analysis {
namespace {

using json = nlohmann::ordered_json;

// A figure as the page prints it in tables: IOPS whole, seconds to the
// millisecond, everything else to one decimal.
std::string value_text(double v, const std::string& unit) {
  if (std::isnan(v)) return "n/a";
  if (unit == "IOPS") return fmt::format("{:.0f}", v);
  if (unit == "s") return fmt::format("{:.3f}", v);
  return fmt::format("{:.1f}", v);
}

double num(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_number() ? j[key].get<double>() : NAN;
}

// The mark of a figure a closed loop measured while limited by the host, and
// what it means, under a table with such figures.
constexpr const char* kHostLimitedMark = "<sup class=\"host-limited\">\xe2\x80\xa0</sup>";
constexpr const char* kHostLimitedNote =
    "<p class=\"note host-limited\">\xe2\x80\xa0 limited by the host: iotape's issue thread ran or waited for a CPU "
    "at least 90% of the measurement, so finished IOs waited for iotape to issue the next; the drive may be faster "
    "than this figure.</p>\n";

struct Drive {
  std::string label;
  const ReviewDocument* doc;
  size_t colour;
  const ReviewTestResult* test(const std::string& name) const { return doc->test(name); }
};

std::string escape(const std::string& s) { return xml_escape(s); }

// A line per drive through the phases `keep` selects: `y_key` against `x_key`.
XyChart phase_chart(const std::vector<Drive>& drives, const std::string& test, std::string title, std::string x_label,
                    const char* x_key, XyChart::XFormat format, bool log2, const char* y_key, std::string y_unit,
                    const std::function<bool(const json&)>& keep) {
  XyChart c;
  c.title = std::move(title);
  c.x_label = std::move(x_label);
  c.y_unit = std::move(y_unit);
  c.log2_x = log2;
  c.x_format = format;
  for (const auto& d : drives) {
    const ReviewTestResult* t = d.test(test);
    if (!t) continue;
    XyChart::Line line{d.label, {}, d.colour};
    for (const auto& p : t->figures["phases"])
      if (keep(p)) line.points.emplace_back(num(p, x_key), num(p, y_key));
    std::sort(line.points.begin(), line.points.end());
    if (!line.points.empty()) c.lines.push_back(std::move(line));
  }
  return c;
}

// Per phase, each drive's IOPS, MB/s and mean latency.
std::string phase_table(const std::vector<Drive>& drives, const std::string& test) {
  std::vector<std::string> names;
  for (const auto& d : drives)
    if (const ReviewTestResult* t = d.test(test))
      for (const auto& p : t->figures["phases"])
        if (std::find(names.begin(), names.end(), p["name"].get<std::string>()) == names.end())
          names.push_back(p["name"]);
  std::string h = "<table class=\"values\">\n<tr><th>phase</th>";
  for (const auto& d : drives)
    h += fmt::format("<th>{0} IOPS</th><th>{0} MB/s</th><th>{0} mean \xc2\xb5s</th>", escape(d.label));
  h += "</tr>\n";
  bool marked = false;
  for (const auto& n : names) {
    h += "<tr><td>" + escape(n) + "</td>";
    for (const auto& d : drives) {
      const ReviewTestResult* t = d.test(test);
      const json* p = nullptr;
      if (t)
        for (const auto& x : t->figures["phases"])
          if (x["name"] == n) p = &x;
      if (!p) {
        h += "<td>-</td><td>-</td><td>-</td>";
        continue;
      }
      const bool limited = p->value("host_limited", false);
      marked |= limited;
      const std::string mark = limited ? kHostLimitedMark : "";
      h += fmt::format("<td>{1}{0}</td><td>{2}{0}</td><td>{3}{0}</td>", mark, value_text(num(*p, "iops"), "IOPS"),
                       value_text(num(*p, "MBps"), "MB/s"), value_text(num(*p, "mean_latency_us"), "\xc2\xb5s"));
    }
    h += "</tr>\n";
  }
  return h + "</table>\n" + (marked ? kHostLimitedNote : "");
}

// Bars of the phases' `key`, grouped by phase, a bar per drive.
BarChart phase_bars(const std::vector<Drive>& drives, const std::string& test, std::string title, const char* key,
                    std::string unit, bool higher_is_better) {
  BarChart c{std::move(title), std::move(unit), higher_is_better, {}};
  for (const auto& d : drives) {
    const ReviewTestResult* t = d.test(test);
    if (!t) continue;
    for (const auto& p : t->figures["phases"]) {
      const std::string name = p["name"];
      auto g = std::find_if(c.groups.begin(), c.groups.end(), [&](const auto& x) { return x.title == name; });
      if (g == c.groups.end()) g = c.groups.insert(c.groups.end(), BarChart::Group{name, {}});
      g->bars.push_back({d.label, num(p, key), d.colour});
    }
  }
  return c;
}

std::vector<double> set_of(const std::vector<Drive>& drives, const std::string& test, const char* key) {
  std::vector<double> v;
  for (const auto& d : drives)
    if (const ReviewTestResult* t = d.test(test))
      for (const auto& p : t->figures["phases"])
        if (std::find(v.begin(), v.end(), num(p, key)) == v.end()) v.push_back(num(p, key));
  std::sort(v.begin(), v.end());
  return v;
}

// The charts of a closed-loop sweep's section, then its phase table.
std::string sweep_section(const std::vector<Drive>& drives, const std::string& test, ReviewSection section) {
  std::string h;
  auto read_is = [](double pct) { return [pct](const json& p) { return num(p, "read_pct") == pct; }; };
  auto qd_is = [](double qd) { return [qd](const json& p) { return num(p, "queue_depth") == qd; }; };
  if (section == ReviewSection::kSequentialBlockSizes || section == ReviewSection::kRandomBlockSizes) {
    const char* kind = section == ReviewSection::kSequentialBlockSizes ? "Sequential" : "Random";
    for (const auto& [pct, dir] : {std::pair{100.0, "read"}, std::pair{0.0, "write"}})
      h += html_figure(
          test + "-" + dir,
          xy_chart_svg(phase_chart(drives, test, fmt::format("{} {} vs block size, QD4", kind, dir), "block size",
                                   "block_size", XyChart::XFormat::kSize, true, "MBps", "MB/s", read_is(pct))));
  } else if (section == ReviewSection::kResponseTime) {
    h += html_figure(test, bar_chart_svg(phase_bars(drives, test, "Response time, 512 B random at QD1 (mean)",
                                                    "mean_latency_us", "\xc2\xb5s", false)));
  } else if (section == ReviewSection::kDatabase) {
    const auto reads = set_of(drives, test, "read_pct");
    const auto qds = set_of(drives, test, "queue_depth");
    for (double pct : {0.0, 50.0, 100.0})
      if (std::find(reads.begin(), reads.end(), pct) != reads.end())
        h +=
            html_figure(fmt::format("{}-qd-read{:g}", test, pct),
                        xy_chart_svg(phase_chart(
                            drives, test, fmt::format("Database: IOPS vs queue depth, {:g}% reads", pct), "queue depth",
                            "queue_depth", XyChart::XFormat::kNumber, true, "iops", "IOPS", read_is(pct))));
    for (double qd : {1.0, 16.0, 256.0})
      if (std::find(qds.begin(), qds.end(), qd) != qds.end())
        h += html_figure(fmt::format("{}-read-qd{:g}", test, qd),
                         xy_chart_svg(phase_chart(drives, test, fmt::format("Database: IOPS vs read share, QD{:g}", qd),
                                                  "read share", "read_pct", XyChart::XFormat::kPercent, false, "iops",
                                                  "IOPS", qd_is(qd))));
  } else if (section == ReviewSection::kServer) {
    std::string pattern = test;  // "web-server": "Web-server pattern"
    if (!pattern.empty()) pattern[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(pattern[0])));
    h += html_figure(test, xy_chart_svg(phase_chart(drives, test, pattern + " pattern: IOPS vs queue depth",
                                                    "queue depth", "queue_depth", XyChart::XFormat::kNumber, true,
                                                    "iops", "IOPS", [](const json&) { return true; })));
  } else if (section == ReviewSection::kAnandTech) {
    h += html_figure(
        test, bar_chart_svg(phase_bars(drives, test, "4 KiB random and 128 KiB sequential", "MBps", "MB/s", true)));
  } else if (section == ReviewSection::kAlignment) {
    h += html_figure(test, bar_chart_svg(phase_bars(drives, test, "4 KiB random write at QD3 by offset alignment",
                                                    "iops", "IOPS", true)));
    for (const auto& d : drives) {
      const ReviewTestResult* t = d.test(test);
      if (!t) continue;
      if (t->figures.contains("note")) {
        h += "<p class=\"note\">" + escape(d.label) + ": " + escape(t->figures["note"]) + "</p>\n";
      } else if (t->figures["phases"].size() == 2) {
        const double a = num(t->figures["phases"][0], "iops"), b = num(t->figures["phases"][1], "iops");
        h += fmt::format("<p class=\"note\">{}: 512 B-aligned writes run at {:.1f}% of the 4K-aligned IOPS.</p>\n",
                         escape(d.label), a > 0 ? 100 * b / a : 0.0);
      }
    }
  }
  return h + phase_table(drives, test);
}

std::string storage_section(const std::vector<Drive>& drives, const std::string& test) {
  std::string h;
  BarChart rate{"Average data rate", "MB/s", true, {}};
  BarChart busy{"Disk busy time", "s", false, {{"", {}}}};
  for (const char* kind : {"combined", "read", "write"}) {
    BarChart::Group g{kind, {}};
    for (const auto& d : drives)
      if (const ReviewTestResult* t = d.test(test)) g.bars.push_back({d.label, num(t->figures["MBps"], kind), d.colour});
    rate.groups.push_back(std::move(g));
  }
  for (const auto& d : drives)
    if (const ReviewTestResult* t = d.test(test)) busy.groups[0].bars.push_back({d.label, num(t->figures, "busy_s"), d.colour});
  h += html_figure(test + "-rate", bar_chart_svg(rate));
  h += html_figure(test + "-busy", bar_chart_svg(busy));
  h += "<table class=\"values\">\n<tr><th>IO breakdown</th>";
  for (const auto& d : drives) h += "<th>" + escape(d.label) + "</th>";
  h += "</tr>\n";
  auto row = [&](const std::string& name, const std::function<double(const json&)>& get, const char* unit) {
    h += "<tr><td>" + escape(name) + "</td>";
    for (const auto& d : drives) {
      const ReviewTestResult* t = d.test(test);
      h += "<td>" + (t ? value_text(get(t->figures["breakdown"]), unit) : std::string("-")) + "</td>";
    }
    h += "</tr>\n";
  };
  row("reads (% of IOs)", [](const json& b) { return num(b, "reads_pct"); }, "%");
  row("sequential (% of IOs)", [](const json& b) { return num(b, "sequential_pct"); }, "%");
  row("mean queue depth", [](const json& b) { return num(b, "mean_queue_depth"); }, "");
  if (const ReviewTestResult* first = drives.front().test(test))
    for (const auto& [bucket, v] : first->figures["breakdown"]["size_pct"].items())
      row(bucket + " IOs (%)", [b = bucket](const json& x) { return num(x["size_pct"], b.c_str()); }, "%");
  h += "</table>\n";
  for (const auto& d : drives)
    if (const ReviewTestResult* t = d.test(test))
      h += "<p class=\"note\">" + escape(d.label) + ": " + std::to_string(t->figures["ios"].get<uint64_t>()) +
           " IOs replayed, " +
           (t->figures["times"] == "device" ? std::string("timed at the device (block layer: issue to completion)")
                                      : "timed by the replayer (submission to reap): " +
                                            escape(t->figures.value("times_reason", ""))) +
           ".</p>\n";
  return h;
}

// The value of a fresh-vs-used row: a measurement's number, or a file-level
// step's pass object's MB/s.
double pass_value(const json& row, const char* pass) {
  const json& v = row[pass];
  return v.is_object() ? num(v, "MBps") : v.is_number() ? v.get<double>() : NAN;
}

std::string row_unit(const json& row) { return row.value("unit", std::string("MB/s")); }

// Paired fresh/used bars, a chart per unit, a group per row of `key` (the
// measurements or the steps), a pair per drive.
std::string fresh_used_figures(const std::vector<Drive>& drives, const std::string& test, const char* key,
                               const std::string& title) {
  std::vector<PairedBarChart> charts;
  for (const auto& d : drives) {
    const ReviewTestResult* t = d.test(test);
    if (!t || !t->figures.contains(key)) continue;
    for (const auto& row : t->figures[key]) {
      const std::string unit = row_unit(row), name = row["name"];
      auto c = std::find_if(charts.begin(), charts.end(), [&](const auto& x) { return x.unit == unit; });
      if (c == charts.end()) {
        c = charts.insert(charts.end(), PairedBarChart{});
        c->title = title + " (" + unit + ")";
        c->unit = unit;
        c->higher_is_better = row.value("higher_is_better", true);
      }
      auto g = std::find_if(c->groups.begin(), c->groups.end(), [&](const auto& x) { return x.title == name; });
      if (g == c->groups.end()) g = c->groups.insert(c->groups.end(), PairedBarChart::Group{name, {}});
      g->pairs.push_back({d.label, pass_value(row, "fresh"), pass_value(row, "used"), num(row, "drop_pct"), d.colour});
    }
  }
  std::string h;
  for (size_t i = 0; i < charts.size(); ++i)
    h += html_figure(fmt::format("{}-{}", test, i), paired_bar_chart_svg(charts[i]));
  return h;
}

// A row per measurement or step: each drive's fresh, used and drop.
std::string fresh_used_table(const std::vector<Drive>& drives, const std::string& test, const char* key,
                             const std::string& first_column) {
  std::vector<std::pair<std::string, std::string>> rows;  // (name, unit)
  for (const auto& d : drives)
    if (const ReviewTestResult* t = d.test(test); t && t->figures.contains(key))
      for (const auto& row : t->figures[key])
        if (std::find_if(rows.begin(), rows.end(), [&](const auto& x) { return x.first == row["name"]; }) == rows.end())
          rows.emplace_back(row["name"], row_unit(row));
  std::string h = "<table id=\"" + escape(test) + "-table\" class=\"values\">\n<tr><th>" + escape(first_column) +
                  "</th><th>unit</th>";
  for (const auto& d : drives)
    h += fmt::format("<th>{0} fresh</th><th>{0} used</th><th>{0} drop %</th>", escape(d.label));
  h += "</tr>\n";
  for (const auto& [name, unit] : rows) {
    h += "<tr><td>" + escape(name) + "</td><td>" + escape(unit) + "</td>";
    for (const auto& d : drives) {
      const json* row = nullptr;
      if (const ReviewTestResult* t = d.test(test); t && t->figures.contains(key))
        for (const auto& r : t->figures[key])
          if (r["name"] == name) row = &r;
      if (!row) {
        h += "<td>-</td><td>-</td><td>-</td>";
        continue;
      }
      h += fmt::format("<td>{}</td><td>{}</td><td>{}</td>", value_text(pass_value(*row, "fresh"), unit),
                       value_text(pass_value(*row, "used"), unit), value_text(num(*row, "drop_pct"), "%"));
    }
    h += "</tr>\n";
  }
  return h + "</table>\n";
}

// The sections of the tests `iotape bench` runs, and of secure-state.
std::string bench_section(const std::vector<Drive>& drives, const std::string& test, ReviewSection section) {
  std::string h;
  if (section == ReviewSection::kConsistency) {
    LineChart all{"IOPS every second, 4 KiB random write QD32 (log scale)", "seconds", "IOPS", {}, true};
    LineChart zoom{"Steady state (the last window, linear scale)", "seconds into the window", "IOPS", {}, false};
    for (const auto& d : drives) {
      const ReviewTestResult* t = d.test(test);
      if (!t) continue;
      std::vector<double> v = t->figures["random"]["iops_per_second"].get<std::vector<double>>();
      all.lines.push_back({d.label, 1, v, d.colour});
      const size_t n = std::min<size_t>(v.size(), t->figures["steady_window"]["seconds"].get<size_t>());
      zoom.lines.push_back({d.label, 1, std::vector<double>(v.end() - static_cast<long>(n), v.end()), d.colour});
    }
    h += html_figure(test + "-log", line_chart_svg(all)) + html_figure(test + "-zoom", line_chart_svg(zoom));
    h += "<table class=\"values\">\n<tr><th>drive</th><th>steady state IOPS (mean)</th><th>standard deviation</th>"
         "<th>mean / deviation</th></tr>\n";
    for (const auto& d : drives)
      if (const ReviewTestResult* t = d.test(test)) {
        const json& w = t->figures["steady_window"];
        h += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n", escape(d.label),
                         value_text(num(w, "mean_iops"), "IOPS"), value_text(num(w, "stddev_iops"), "IOPS"),
                         value_text(num(w, "mean_over_stddev"), ""));
      }
    h += "</table>\n";
  } else if (section == ReviewSection::kTrim) {
    BarChart c{"128 KiB sequential write: clean, dirty, after TRIM", "MB/s", true, {}};
    h += "<table class=\"values\">\n<tr><th>drive</th><th>clean MB/s</th><th>dirty MB/s</th><th>after TRIM MB/s</th>"
         "</tr>\n";
    for (const auto& d : drives) {
      const ReviewTestResult* t = d.test(test);
      if (!t) continue;
      h += "<tr><td>" + escape(d.label) + "</td>";
      for (const auto& p : t->figures["phases"]) {
        const std::string name = p["name"];
        auto g = std::find_if(c.groups.begin(), c.groups.end(), [&](const auto& x) { return x.title == name; });
        if (g == c.groups.end()) g = c.groups.insert(c.groups.end(), BarChart::Group{name, {}});
        g->bars.push_back({d.label, num(p, "MBps"), d.colour});
        h += "<td>" + value_text(num(p, "MBps"), "MB/s") + "</td>";
      }
      h += "</tr>\n";
    }
    h = html_figure(test, bar_chart_svg(c)) + h + "</table>\n";
  } else if (section == ReviewSection::kFreshVsUsed) {
    h += fresh_used_figures(drives, test, "measurements", "Fresh vs used");
    h += fresh_used_table(drives, test, "measurements", "test");
    for (const auto& d : drives)
      if (const ReviewTestResult* t = d.test(test); t && t->figures.contains("used_state")) {
        const json& u = t->figures["used_state"];
        h += fmt::format("<p class=\"note\">{}: fresh = the whole drive discarded (the write tests), then filled "
                         "sequentially (the read and mixed tests); used = then {} s of 4 KiB random writes at QD32 in "
                         "rounds of {} s, {}.</p>\n",
                         escape(d.label), value_text(num(u, "duration_s"), ""), value_text(num(u, "round_s"), ""),
                         u.value("steady_state_reached", false) ? "until steady state"
                                                                : "steady state not reached in the time allowed");
      }
  } else if (section == ReviewSection::kSecureState) {
    h += "<table class=\"values\">\n<tr><th>drive</th><th>discard of everything (s)</th><th>sequential fill MB/s</th>"
         "</tr>\n";
    for (const auto& d : drives)
      if (const ReviewTestResult* t = d.test(test))
        h += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td></tr>\n", escape(d.label),
                         value_text(num(t->figures["discard"], "duration_s"), "s"), value_text(num(t->figures["fill"], "MBps"), "MB/s"));
    h += "</table>\n";
  }
  return h;
}

// Each step's MB/s fresh and used, a pair per drive, and the sets' sizes.
std::string file_section(const std::vector<Drive>& drives, const std::string& test) {
  std::string notes;
  for (const auto& d : drives)
    if (const ReviewTestResult* t = d.test(test)) {
      const json& sets = t->figures["sets"];
      notes += fmt::format("<p class=\"note\">{}: two ext4 partitions; an image of {} MiB, {} MP3s of {} MiB, {} "
                           "small files (0.5..32 KiB); the files a step reads dropped from the page cache before it; "
                           "write times include fsync; {}.</p>\n",
                           escape(d.label), sets.value("iso_bytes", 0ULL) >> 20, sets.value("mp3_files", 0),
                           sets.value("mp3_bytes", 0ULL) >> 20, sets.value("program_files", 0),
                           t->figures.value("recorded", false) ? "each step's block IO recorded as a trace"
                                                       : "not recorded");
      if (!t->figures.contains("passes")) continue;  // a review of an iotape that ran one pass
      const json& p = t->figures["passes"];
      notes += fmt::format(
          "<p class=\"note\">{}: fresh = the drive discarded, then mkfs discarding the partitions ({:.0f} MiB "
          "discarded); used = the drive filled sequentially, then mkfs -E nodiscard ({:.0f} MiB discarded).</p>\n",
          escape(d.label), num(p["fresh"]["mkfs"], "discarded_bytes") / (1 << 20),
          num(p["used"]["mkfs"], "discarded_bytes") / (1 << 20));
    }
  return fresh_used_figures(drives, test, "steps", "File-level tests, fresh and used") +
         fresh_used_table(drives, test, "steps", "step") + notes;
}

std::string cpu_table(const std::vector<Drive>& drives, const std::string& test) {
  std::string h = "<table class=\"values cpu\">\n<tr><th>CPU load</th><th>test duration (s)</th><th>host CPU busy (%)</th>"
                  "<th>iotape CPU per IO (\xc2\xb5s)</th></tr>\n";
  for (const auto& d : drives)
    if (const ReviewTestResult* t = d.test(test))
      h += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n", escape(d.label),
                       value_text(t->duration_s, "s"), value_text(t->cpu.host_busy_pct, "%"),
                       value_text(t->cpu.iotape_cpu_us_per_io.value_or(NAN), "\xc2\xb5s"));
  return h + "</table>\n";
}

std::string section(const std::vector<Drive>& drives, const std::string& test, ReviewSection s) {
  switch (s) {
    case ReviewSection::kStorageBench:
      return storage_section(drives, test);
    case ReviewSection::kFileLevel:
      return file_section(drives, test);
    case ReviewSection::kSecureState:
    case ReviewSection::kConsistency:
    case ReviewSection::kTrim:
    case ReviewSection::kFreshVsUsed:
      return bench_section(drives, test, s);
    default:
      return sweep_section(drives, test, s);
  }
}

ReviewSection section_of(const std::vector<ReviewPageTest>& suite, const std::string& name) {
  for (const auto& t : suite)
    if (t.name == name) return t.section;
  return ReviewSection::kPhases;
}

// The drives table's rows: a field of the document's drive as the page
// prints it, nullopt ("-") where the drive has none.
using DriveField = std::function<std::optional<std::string>(const ReviewDrive&)>;
std::string yes_no(bool b) { return b ? "true" : "false"; }
const std::pair<const char*, DriveField> kDriveRows[] = {
    {"path", [](const ReviewDrive& d) { return std::optional(d.path); }},
    {"model", [](const ReviewDrive& d) { return d.block ? std::optional(d.block->model) : std::nullopt; }},
    {"vendor", [](const ReviewDrive& d) { return d.block ? std::optional(d.block->vendor) : std::nullopt; }},
    {"serial", [](const ReviewDrive& d) { return d.block ? std::optional(d.block->serial) : std::nullopt; }},
    {"size_bytes", [](const ReviewDrive& d) { return std::optional(std::to_string(d.size_bytes)); }},
    {"logical_block_size", [](const ReviewDrive& d) { return std::optional(std::to_string(d.logical_block_size)); }},
    {"physical_block_size", [](const ReviewDrive& d) { return std::optional(std::to_string(d.physical_block_size)); }},
    {"rotational", [](const ReviewDrive& d) { return std::optional(yes_no(d.rotational)); }},
    {"scheduler", [](const ReviewDrive& d) { return d.block ? std::optional(d.block->scheduler) : std::nullopt; }},
    {"loop_backing_file",
     [](const ReviewDrive& d) { return d.block && d.block->loop ? std::optional(d.block->loop->backing_file) : std::nullopt; }},
    {"loop_direct_io",
     [](const ReviewDrive& d) { return d.block && d.block->loop ? std::optional(yes_no(d.block->loop->direct_io)) : std::nullopt; }},
};

std::string suite_text(const ReviewSuiteOptions& options) {
  return fmt::format("{} suite, seed {}", options.quick ? "quick" : "full", options.seed);
}

}  // namespace

void check_same_suite(const std::vector<ReviewDocument>& reviews, const std::vector<std::string>& origins) {
  for (size_t i = 1; i < reviews.size(); ++i)
    for (const char* key : {"quick", "seed"}) {
      const json a = to_json(reviews[0].options)[key], b = to_json(reviews[i].options)[key];
      if (a != b)
        throw format::UsageError(
            fmt::format("{} and {} ran different suites ({}: {} and {}): their figures are not "
                        "comparable; review both drives with the same options",
                        origins[0], origins[i], key, a.dump(), b.dump()));
    }
}

namespace {

using TestNames = std::vector<std::pair<std::string, std::string>>;  // (name, title)

// The drives, each labelled apart from the others.
std::vector<Drive> drives_of(const std::vector<ReviewDocument>& reviews) {
  std::vector<Drive> drives;
  for (size_t i = 0; i < reviews.size(); ++i) {
    std::string label = reviews[i].drive.label;
    for (const auto& d : drives)
      if (d.label == label) label += fmt::format(" ({})", i + 1);
    drives.push_back({label, &reviews[i], i});
  }
  return drives;
}

// The tests in suite order (each document lists its tests in that order).
TestNames tests_of(const std::vector<ReviewDocument>& reviews) {
  TestNames tests;
  for (const auto& r : reviews)
    for (const auto& t : r.tests)
      if (std::find_if(tests.begin(), tests.end(), [&](const auto& x) { return x.first == t.test; }) == tests.end())
        tests.emplace_back(t.test, t.title);
  return tests;
}

std::string drive_table(const std::vector<Drive>& drives) {
  std::string h;
  h += "<table id=\"drives\">\n<tr><th>drive</th>";
  for (const auto& d : drives) h += "<th>" + escape(d.label) + "</th>";
  h += "</tr>\n";
  for (const auto& [key, field] : kDriveRows) {
    h += std::string("<tr><td>") + key + "</td>";
    for (const auto& d : drives) h += "<td>" + escape(field(d.doc->drive).value_or("-")) + "</td>";
    h += "</tr>\n";
  }
  h += "</table>\n";

  return h;
}

// Summary: each test's headline figures, a column per drive, the best in bold.
std::string summary_table(const std::vector<Drive>& drives, const TestNames& tests) {
  std::string h;
  h += "<h2 id=\"summary\">Summary</h2>\n<table id=\"summary-table\">\n<tr><th>test</th><th>figure</th>";
  for (const auto& d : drives) h += "<th>" + escape(d.label) + "</th>";
  h += "</tr>\n";
  bool marked = false;
  for (const auto& [name, title] : tests) {
    std::vector<ReviewHeadline> figures;  // the headline of the first drive with each figure
    for (const auto& d : drives)
      if (const ReviewTestResult* t = d.test(name))
        for (const auto& f : t->headline())
          if (std::find_if(figures.begin(), figures.end(), [&](const auto& x) { return x.figure == f.figure; }) ==
              figures.end())
            figures.push_back(f);
    for (const auto& head : figures) {
      const std::string& fig = head.figure;
      const std::string unit = head.unit;
      const bool higher = head.higher_is_better;
      std::vector<double> values;
      std::vector<bool> limited;
      for (const auto& d : drives) {
        double v = NAN;
        bool host = false;
        if (const ReviewTestResult* t = d.test(name))
          for (const auto& f : t->headline())
            if (f.figure == fig) v = f.value, host = f.host_limited;
        values.push_back(v);
        limited.push_back(host);
        marked |= host;
      }
      double best = NAN;
      for (double v : values)
        if (!std::isnan(v) && (std::isnan(best) || (higher ? v > best : v < best))) best = v;
      h += "<tr><td><a href=\"#" + escape(name) + "\">" + escape(name) + "</a></td><td>" +
           escape(fig + " (" + unit + ", " + (higher ? "higher" : "lower") + " is better)") + "</td>";
      for (size_t i = 0; i < values.size(); ++i)
        h += std::string(drives.size() > 1 && values[i] == best ? "<td class=\"best\">" : "<td>") +
             value_text(values[i], unit) + (limited[i] ? kHostLimitedMark : "") + "</td>";
      h += "</tr>\n";
    }
  }
  h += "</table>\n";
  return h + (marked ? kHostLimitedNote : "");
}

std::string write_amplification_section(const std::vector<Drive>& drives, const TestNames& tests) {
  std::string h;
  h += "<section id=\"write-amplification\">\n<h2>Write amplification</h2>\n";
  for (const auto& d : drives) {
    const ReviewWriteAmplificationSource& wa = d.doc->write_amplification;
    if (!wa.available) {
      h += "<p>" + escape(d.label) + ": not available on this device: " + escape(wa.reason) + ".</p>\n";
      continue;
    }
    BarChart c{"Write amplification estimate (media / host bytes written), " + d.label, "x", false, {{"", {}}}};
    for (const auto& [name, title] : tests)
      if (const ReviewTestResult* t = d.test(name); t && t->write_amplification)
        c.groups[0].bars.push_back({name, t->write_amplification->estimate, d.colour});
    h += html_figure("wa-" + std::to_string(d.colour), bar_chart_svg(c));
  }
  h += "</section>\n";

  return h;
}

// File-level tests not run on some drive: say so.
std::string file_level_note(const std::vector<Drive>& drives) {
  std::string missing;
  for (const auto& d : drives)
    if (!d.test("file-level"))
      missing += "<p>" + escape(d.label) + ": file-level tests " + escape(d.doc->file_level.value_or("not run")) +
                 ".</p>\n";
  if (missing.empty()) return missing;
  return "<section id=\"file-level-not-run\">\n<h2>File-level tests</h2>\n" + missing + "</section>\n";
}

}  // namespace

std::string review_html(const std::vector<ReviewDocument>& reviews, const std::vector<ReviewPageTest>& suite) {
  const std::vector<Drive> drives = drives_of(reviews);
  const TestNames tests = tests_of(reviews);

  std::string h = html_page_head("iotape review");
  h.insert(h.find("</style>"), "table.values { font-size: 12px; margin: 4px 0 24px 0; }\n"
                               "table.values th:nth-child(2), table.values td:nth-child(2) { text-align: right; }\n"
                               "#drives th:nth-child(2), #drives td:nth-child(2) { text-align: right; }\n"
                               "h2 { font-size: 18px; margin-top: 32px; border-bottom: 1px solid #cccccc; }\n"
                               "td.best { font-weight: bold; }\n");
  std::string names;
  for (const auto& d : drives) names += (names.empty() ? "" : ", ") + d.label;
  h += "<h1>iotape review: " + escape(names) + "</h1>\n";
  h += "<p class=\"note\">" + escape(suite_text(reviews[0].options)) + ". iotape " +
       escape(reviews[0].iotape_version) + ".</p>\n";

  h += drive_table(drives);
  h += summary_table(drives, tests);

  for (const auto& [name, title] : tests) {
    h += "<section id=\"" + escape(name) + "\">\n<h2>" + escape(title) + "</h2>\n";
    h += section(drives, name, section_of(suite, name));
    h += cpu_table(drives, name);
    h += "</section>\n";
  }

  h += write_amplification_section(drives, tests);
  h += file_level_note(drives);
  h += "</body>\n</html>\n";
  return h;
}

}  // namespace iotape::analysis

#include "analysis/week_page.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>

#include "analysis/svg_chart.h"
#include "units/units.h"

namespace iotape::analysis {
namespace {

using json = nlohmann::ordered_json;

std::string esc(const std::string& s) { return xml_escape(s); }

// The unit of the time axes: seconds for a few minutes, up to days for a week.
struct TimeAxis {
  const char* name;
  double ns;
};

TimeAxis axis_for(int64_t span_ns) {
  if (span_ns <= 300'000'000'000) return {"seconds from the first IO", 1e9};
  if (span_ns <= 6 * 3'600'000'000'000) return {"minutes from the first IO", 60e9};
  if (span_ns <= 72 * 3'600'000'000'000) return {"hours from the first IO", 3600e9};
  return {"days from the first IO", 86400e9};
}

std::string device_name(const v1::TraceHeader& h, size_t d) {
  if (d >= static_cast<size_t>(h.devices_size())) return fmt::format("device {}", d);
  const auto& dev = h.devices(static_cast<int>(d));
  return fmt::format("{} ({}:{})", dev.name().empty() ? "?" : dev.name(), dev.major(), dev.minor());
}

std::string key_or(const std::map<std::string, std::string>& m, const std::string& key, const std::string& none) {
  const auto it = m.find(key);
  return it == m.end() || it->second.empty() ? none : it->second;
}

std::string row(const std::string& label, const std::string& value, const std::string& id = {}) {
  return fmt::format("<tr><th>{}</th><td{}>{}</td></tr>\n", esc(label), id.empty() ? "" : " id=\"" + id + "\"",
                     esc(value));
}

// The recording's own IOs per device (capture.self_ios.DEVICE) and in all.
std::string self_traffic(const std::map<std::string, std::string>& end_keys) {
  if (!end_keys.count("capture.self_ios")) return "not counted (not a recording, or one before it was counted)";
  const bool kept = key_or(end_keys, "capture.include_self", "0") == "1";
  std::string s =
      fmt::format("{} IOs, {} bytes the recording caused itself: {}", end_keys.at("capture.self_ios"),
                  key_or(end_keys, "capture.self_bytes", "?"), kept ? "in the trace, flagged self" : "left out");
  for (const auto& [k, v] : end_keys)
    if (k.rfind("capture.self_ios.", 0) == 0) s += fmt::format("; {} {} IOs", k.substr(17), v);
  return s;
}

std::string recorded_section(const WeekPage& p) {
  const auto& h = *p.header;
  const auto& m = p.report->metadata;
  std::string s = "<section id=\"recorded\">\n<h2>What was recorded</h2>\n<table>\n";
  s += row("trace", fmt::format("{}", fmt::join(p.traces, " ")));
  s += row("source", fmt::format("{} {}", v1::Source_Name(h.source()), h.source_detail()));
  s += row("back end", key_or(m, "capture.backend", "-"));
  s += row("capture hooks", key_or(m, "capture.hooks", "-"));
  s += row("not captured", key_or(m, "capture.unavailable", "nothing named"));
  s += row("clock", v1::ClockDomain_Name(h.clock()) +
                        (p.timeline->wall_clock() ? std::string(", wall clock known (times of day in UTC)")
                                                  : std::string(", no wall clock (hours count from the first IO)")));
  s += row("host",
           fmt::format("{}, kernel {}", h.host().empty() ? "?" : h.host(), h.kernel().empty() ? "?" : h.kernel()));
  for (int d = 0; d < h.devices_size(); ++d) {
    const auto& dev = h.devices(d);
    std::string what = device_name(h, static_cast<size_t>(d));
    if (!dev.model().empty()) what += ", " + dev.model();
    if (dev.rotational()) what += ", rotational";
    what += dev.size_bytes() ? ", " + units::format_size(dev.size_bytes()) : std::string(", size unknown");
    s += row(fmt::format("device {}", d), what);
  }
  s += row("duration", fmt::format("{:.3f} s (first issue to last completion)", p.report->duration_ns() / 1e9));
  s += row("losses",
           fmt::format("{} dropped events, {} late IOs{}", p.report->dropped_events, p.report->late_ios,
                       p.report->status.damaged ? ", damaged: " + p.report->status.message : ""),
           "losses");
  s += row("own IO", self_traffic(p.end_keys), "self");
  if (key_or(p.end_keys, "capture.removed_parts", "0") != "0")
    s += row("removed",
             fmt::format("{} older parts, {} bytes (record --keep/--max-total): not in this trace",
                         p.end_keys.at("capture.removed_parts"), key_or(p.end_keys, "capture.removed_bytes", "?")),
             "removed");
  return s + "</table>\n</section>\n";
}

std::string us(const json& ns) { return fmt::format("{:.1f}", ns.get<double>() / 1e3); }
std::string secs(const json& ns) { return fmt::format("{:.3f}", ns.get<double>() / 1e9); }
std::string mbps(const json& v) { return fmt::format("{:.2f}", v.get<double>()); }

std::string totals_section(const WeekPage& p) {
  const json& j = *p.json;
  auto cell = [](const std::string& id, const std::string& v) { return "<td id=\"" + id + "\">" + v + "</td>"; };
  std::string s = "<section id=\"totals\">\n<h2>Totals</h2>\n<table>\n";
  s += "<tr><th>IOs</th><th>reads</th><th>writes</th><th>bytes read</th><th>bytes written</th><th>busy (s)</th>"
       "<th>read busy (s)</th><th>write busy (s)</th><th>idle (s)</th></tr>\n<tr>";
  for (const char* k : {"ios", "reads", "writes", "bytes_read", "bytes_written"})
    s += cell(k, std::to_string(j[k].get<uint64_t>()));
  for (const char* k : {"busy_time_ns", "read_busy_time_ns", "write_busy_time_ns", "idle_ns"}) s += cell(k, secs(j[k]));
  s += "</tr>\n</table>\n<table>\n<tr><th>data rate (MB/s, bytes / busy time)</th><th>read</th><th>write</th>"
       "<th>combined</th><th>mean queue depth at issue</th></tr>\n<tr><td></td>";
  for (const char* k : {"read", "write", "combined"})
    s += cell(std::string("MBps_") + k, mbps(j["avg_data_rate_MBps"][k]));
  s += cell("avg_qd", fmt::format("{:.2f}", j["avg_qd"].get<double>())) + "</tr>\n</table>\n";
  s += "<table>\n<tr><th>latency D2C (us)</th><th>IOs</th><th>mean</th><th>p50</th><th>p90</th><th>p99</th>"
       "<th>p99.9</th><th>max</th></tr>\n";
  for (const auto& [op, l] : j["latency_ns"].items()) {
    s += "<tr><td>" + esc(op == "all" ? "read+write" : op) + "</td><td>" + std::to_string(l["count"].get<uint64_t>()) +
         "</td>";
    for (const char* k : {"mean", "p50", "p90", "p99", "p99_9", "max"}) s += cell("lat_" + op + "_" + k, us(l[k]));
    s += "</tr>\n";
  }
  return s + "</table>\n</section>\n";
}

std::vector<LineChart::Band> bands(const WeekPage& p, const TimeAxis& axis) {
  std::vector<LineChart::Band> out;
  for (const auto& w : p.windows)
    out.push_back({w.start_ns / axis.ns, w.end_ns / axis.ns, w.kind, static_cast<size_t>(w.kind == "heavy" ? 3 : 2)});
  return out;
}

// The time a bin covers within the trace: the last bin may be cut short.
double bin_width_ns(const Timeline& t, size_t i, int64_t span_ns) {
  const double start = static_cast<double>(i) * static_cast<double>(t.bin_ns());
  return std::clamp(static_cast<double>(span_ns) - start, 1.0, static_cast<double>(t.bin_ns()));
}

// The chart, or when no line has a value a note saying why: a trace without
// completion times has no busy time, latency or IOs in flight.
std::string figure_or_note(const std::string& id, const LineChart& c, bool timed) {
  for (const auto& l : c.lines)
    if (std::any_of(l.values.begin(), l.values.end(), [](double v) { return v > 0; }))
      return html_figure(id, line_chart_svg(c));
  return fmt::format("<p class=\"note\" id=\"{}\">{}: nothing to draw ({}).</p>\n", id, esc(c.title),
                     timed ? "no IOs" : "the trace has no completion times");
}

std::string over_time_sections(const WeekPage& p, const TimeAxis& axis) {
  const Timeline& t = *p.timeline;
  const Report& r = *p.report;
  const double step = static_cast<double>(t.bin_ns()) / axis.ns;
  const std::string bin = fmt::format("{:g} s", t.bin_ns() / 1e9);
  LineChart busy{"Disk busy", axis.name, "% of each " + bin + " with an IO outstanding", {}, false, bands(p, axis)};
  size_t devices = 0;
  for (const auto& b : t.bins()) devices = std::max(devices, b.busy_ns.size());
  for (size_t d = 0; d < devices; ++d) {
    LineChart::Line line{device_name(*p.header, d), step, {}, d};
    for (size_t i = 0; i < t.bins().size(); ++i) {
      const auto& b = t.bins()[i];
      const double ns = d < b.busy_ns.size() ? static_cast<double>(b.busy_ns[d]) : 0.0;
      line.values.push_back(100.0 * ns / bin_width_ns(t, i, r.duration_ns()));
    }
    if (std::any_of(line.values.begin(), line.values.end(), [](double v) { return v > 0; }))
      busy.lines.push_back(std::move(line));
  }
  const double s_step = static_cast<double>(r.series.interval_ns()) / axis.ns;
  const double interval_s = r.series.interval_ns() / 1e9;
  const std::string point = fmt::format("{:g} s", interval_s);
  LineChart rates{"Data rate", axis.name, "MB/s (10^6 bytes), mean of each " + point, {}, false, bands(p, axis)};
  LineChart iops{"IOPS", axis.name, "IOs issued per second, mean of each " + point, {}, false, bands(p, axis)};
  LineChart::Line rd{"read", s_step, {}, 0}, wr{"write", s_step, {}, 1}, all{"all IOs", s_step, {}, 0};
  for (const auto& pt : r.series.points()) {
    rd.values.push_back(pt.bytes_read / 1e6 / interval_s);
    wr.values.push_back(pt.bytes_written / 1e6 / interval_s);
    all.values.push_back(pt.ios / interval_s);
  }
  rates.lines = {rd, wr};
  iops.lines = {all};
  LineChart latency{"Latency (D2C) of reads and writes",
                    axis.name,
                    "us, p50 and p99 of the IOs issued in each " + bin + ", log scale",
                    {},
                    true,
                    bands(p, axis)};
  LineChart queue{"Queue depth", axis.name, "mean IOs in flight over each " + bin, {}, false, bands(p, axis)};
  LineChart::Line p50{"p50", step, {}, 0}, p99{"p99", step, {}, 3}, qd{"IOs in flight", step, {}, 0};
  for (size_t i = 0; i < t.bins().size(); ++i) {
    const auto& b = t.bins()[i];
    p50.values.push_back(b.latency.count() ? b.latency.percentile(50) / 1e3 : NAN);  // no IO: a gap
    p99.values.push_back(b.latency.count() ? b.latency.percentile(99) / 1e3 : NAN);
    qd.values.push_back(b.in_flight_ns / bin_width_ns(t, i, r.duration_ns()));
  }
  latency.lines = {p50, p99};
  queue.lines = {qd};
  const bool timed = r.with_completion > 0;
  return "<section id=\"busy\">\n" + figure_or_note("busy-chart", busy, timed) +
         "</section>\n<section id=\"rates\">\n" + figure_or_note("rates-chart", rates, timed) +
         "</section>\n<section id=\"iops\">\n" + figure_or_note("iops-chart", iops, timed) +
         "</section>\n<section id=\"latency\">\n" + figure_or_note("latency-chart", latency, timed) +
         (timed ? "<p class=\"note\">Per bin from a coarse histogram (within 12%); the totals above are exact to "
                  "0.4%.</p>\n"
                : "") +
         "</section>\n<section id=\"queue\">\n" + figure_or_note("queue-chart", queue, timed) + "</section>\n";
}

std::string day_label(const Timeline& t, size_t day) {
  if (!t.wall_clock()) return fmt::format("day {}", day + 1);
  const std::time_t secs =
      static_cast<std::time_t>(t.first_day_unix_ns() / 1'000'000'000) + static_cast<std::time_t>(day) * 86400;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%a %Y-%m-%d", &tm);
  return buf;
}

std::string heatmap_section(const WeekPage& p) {
  const Timeline& t = *p.timeline;
  GridChart g;
  g.title = "Busy by hour of the day";
  g.subtitle = std::string("% of each hour with an IO outstanding, all devices, darker = busier; ") +
               (t.wall_clock() ? "hours in UTC" : "hours from the first IO");
  g.print_values = true;
  for (int h = 0; h < 24; ++h) g.column_labels.push_back(std::to_string(h));
  for (size_t d = 0; d < t.hours().size(); ++d) {
    g.row_labels.push_back(day_label(t, d));
    std::vector<double> cells;
    for (int64_t ns : t.hours()[d]) cells.push_back(100.0 * static_cast<double>(ns) / 3.6e12);
    g.cells.push_back(std::move(cells));
  }
  std::string s = "<section id=\"heatmap\">\n<h2>Hours</h2>\n";
  if (t.hours().empty())
    return s +
           "<p class=\"note\" id=\"heatmap-chart\">No busy time to show by hour (no IO with a completion time)."
           "</p>\n</section>\n";
  s += html_figure("heatmap-chart", grid_chart_svg(g));
  if (t.hours_cut())
    s += fmt::format(
        "<p class=\"note\" id=\"heatmap-cut\">The trace goes on after these {} days: its later hours are "
        "not shown.</p>\n",
        t.hours().size());
  size_t best_day = 0, best_hour = 0;
  for (size_t d = 0; d < t.hours().size(); ++d)
    for (size_t h = 0; h < 24; ++h)
      if (t.hours()[d][h] > t.hours()[best_day][best_hour]) best_day = d, best_hour = h;
  s += fmt::format(
      "<p id=\"busiest-hour\" class=\"note\" data-day=\"{}\" "
      "data-hour=\"{}\">Busiest hour: {}, {:02}:00 to {:02}:00, {:.2f}% busy.</p>\n",
      best_day, best_hour, esc(day_label(t, best_day)), best_hour, best_hour + 1,
      100.0 * static_cast<double>(t.hours()[best_day][best_hour]) / 3.6e12);
  return s + "</section>\n";
}

// One device's offset map: the columns the trace reaches, labelled where a
// tick of the time axis falls; rows up to the highest used one when the
// header does not know the device's size (its range doubled past it).
GridChart offset_grid(const WeekPage& p, size_t d, const TimeAxis& axis) {
  const OffsetMap& m = *p.offsets;
  const auto& dev = m.devices()[d];
  const bool sized =
      static_cast<int>(d) < p.header->devices_size() && p.header->devices(static_cast<int>(d)).size_bytes();
  size_t highest = 0;
  for (size_t i = 0; i < dev.counts.size(); ++i)
    if (dev.counts[i]) highest = std::max(highest, i % m.rows());
  const size_t rows = sized ? m.rows() : std::min(m.rows(), (highest / 8 + 1) * 8);
  GridChart g;
  g.title = "Offset against time: " + device_name(*p.header, d);
  g.subtitle = fmt::format("IOs per cell ({} s by {}), darker = more, log scale; offset 0 at the bottom",
                           short_number(m.column_ns() / 1e9), units::format_size(dev.span_bytes / m.rows()));
  g.log_scale = true;
  g.cell_height = 4 * static_cast<int>(m.rows() / rows);
  const double column_units = static_cast<double>(m.column_ns()) / axis.ns;
  const double duration = static_cast<double>(p.report->duration_ns());
  const size_t used =
      std::clamp<size_t>(static_cast<size_t>(std::ceil(duration / static_cast<double>(m.column_ns()))), 1, m.columns());
  const double tick = nice_step(static_cast<double>(used) * column_units / 8);
  for (size_t c = 0; c < used; ++c) {
    const double from = static_cast<double>(c) * column_units;
    const double at = std::ceil(from / tick) * tick;
    g.column_labels.push_back(at < from + column_units ? fmt::format("{:g}", at) : "");
  }
  for (size_t r = rows; r-- > 0;) {
    g.row_labels.push_back(r % 16 == 0 ? units::format_size(dev.span_bytes / m.rows() * r) : "");
    std::vector<double> cells;
    for (size_t c = 0; c < used; ++c) cells.push_back(static_cast<double>(dev.counts[c * m.rows() + r]));
    g.cells.push_back(std::move(cells));
  }
  return g;
}

std::string offsets_section(const WeekPage& p, const TimeAxis& axis) {
  std::string s = "<section id=\"offsets\">\n<h2>Where the IOs went</h2>\n";
  for (size_t d = 0; d < p.offsets->devices().size(); ++d)
    if (!p.offsets->devices()[d].counts.empty())
      s += html_figure(fmt::format("offsets-{}", d), grid_chart_svg(offset_grid(p, d, axis)));
  return s + fmt::format("<p class=\"note\">Columns are {}.</p>\n</section>\n", axis.name);
}

std::string process_table(const std::string& title, std::vector<Processes::Entry> entries, size_t n,
                          const std::string& id) {
  std::string s = "<table id=\"" + id + "\">\n<tr><th>" + esc(title) +
                  "</th><th>pid</th><th>IOs</th><th>MB read</th><th>MB written</th><th>bytes</th>"
                  "<th>busy (s)</th></tr>\n";
  if (entries.size() > n) entries.resize(n);
  for (const auto& e : entries)
    s += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.3f}</td><td>{:.3f}</td><td>{}</td><td>{:.3f}</td></tr>\n",
        esc(e.comm.empty() ? "?" : e.comm), e.pid, e.ios, e.bytes_read / 1e6, e.bytes_written / 1e6, e.bytes,
        e.busy_ns / 1e9);
  return s + "</table>\n";
}

std::string processes_section(const WeekPage& p) {
  const Processes& procs = p.report->processes;
  auto all = procs.top(SIZE_MAX);
  std::string s = "<section id=\"processes\">\n<h2>Processes</h2>\n" +
                  process_table("by bytes", procs.top(p.top), p.top, "processes-bytes");
  if (all.size() > 1) {  // one process ranks the same by anything
    std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.ios > b.ios; });
    s += process_table("by IOs", all, p.top, "processes-ios");
    std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.busy_ns > b.busy_ns; });
    s += process_table("by busy time", all, p.top, "processes-busy");
  }
  if (procs.approximate())
    s += "<p class=\"note\">More processes than tracked: the figures are upper bounds (report --help).</p>\n";
  return s + "</section>\n";
}

// Where a time from the first IO falls in the hours' grid: "day 2 14:05", or
// with a wall clock its UTC date and time.
std::string when(const Timeline& t, int64_t from_first_ns) {
  const int64_t minutes = (t.origin_ns() + from_first_ns - t.first_day_ns()) / 60'000'000'000;
  const auto day = static_cast<size_t>(std::max<int64_t>(0, minutes / 1440));
  return fmt::format("{} {:02}:{:02}{}", day_label(t, day), minutes % 1440 / 60, minutes % 60,
                     t.wall_clock() ? " UTC" : "");
}

std::string windows_section(const WeekPage& p) {
  std::string s =
      "<section id=\"windows\">\n<h2>Windows to cut</h2>\n<table>\n<tr><th>window</th><th>from (s)</th>"
      "<th>to (s)</th><th>when</th><th>busy (s)</th><th>MB</th><th>IOs</th><th>command</th></tr>\n";
  for (const auto& w : p.windows)
    s += fmt::format(
        "<tr class=\"{0}\"><td>{0}</td><td>{1:.3f}</td><td>{2:.3f}</td><td>{3}</td><td>{4:.3f}</td><td>{5:.1f}</td>"
        "<td>{6}</td><td style=\"text-align: left; white-space: normal\"><code>{7}</code></td></tr>\n",
        esc(w.kind), w.start_ns / 1e9, w.end_ns / 1e9, esc(when(*p.timeline, w.start_ns)), w.busy_ns / 1e9,
        w.bytes / 1e6, w.ios, esc(w.command));
  s += "</table>\n";
  if (!p.windows_note.empty()) s += "<p class=\"note\">" + esc(p.windows_note) + "</p>\n";
  for (const auto& w : p.windows) s += "<p class=\"note\">" + esc(w.why) + "</p>\n";
  return s + "</section>\n";
}

}  // namespace

std::string week_page_html(const WeekPage& p) {
  const TimeAxis axis = axis_for(p.report->duration_ns());
  std::string s = html_page_head("iotape report: " + fmt::format("{}", fmt::join(p.traces, " ")));
  s += "<h1>" + esc(fmt::format("{}", fmt::join(p.traces, " "))) + "</h1>\n";
  s += recorded_section(p) + totals_section(p) + over_time_sections(p, axis) + heatmap_section(p) +
       offsets_section(p, axis) + processes_section(p) + windows_section(p);
  return s + "</body>\n</html>\n";
}

}  // namespace iotape::analysis

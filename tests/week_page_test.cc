// The week page (`iotape report --html`) and its accumulators: the timeline's
// bins and hours, the offset map, checked against hand-computed values; the
// page of a synthesized working day against `report --json`, `--series-csv`
// and `iotape cut`; a real sample; chromium's rendering.
#include <fmt/format.h>

#include <array>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <sstream>

#include "analysis/offset_map.h"
#include "analysis/timeline.h"
#include "format/writer.h"
#include "tests/test_support.h"

using namespace iotape;

namespace {

constexpr int64_t kSec = 1'000'000'000;
constexpr int64_t kHour = 3600 * kSec;

format::Io io_at(int64_t issue, int64_t complete, uint64_t offset = 0, uint32_t device = 0,
                 format::Op op = format::Op::kRead) {
  format::Io io;
  io.issue_ns = issue;
  io.complete_ns = complete;
  io.offset = offset;
  io.length = 4096;
  io.device = device;
  io.op = op;
  return io;
}

// The text of the element with this id: <td id="ID">TEXT</td>.
std::string by_id(const std::string& page, const std::string& id) {
  std::smatch m;
  if (!std::regex_search(page, m, std::regex("id=\"" + id + "\"[^>]*>([^<]*)<"))) return "(no " + id + ")";
  return m[1];
}

std::string us(const nlohmann::json& ns) { return fmt::format("{:.1f}", ns.get<double>() / 1e3); }
std::string secs(const nlohmann::json& ns) { return fmt::format("{:.3f}", ns.get<double>() / 1e9); }

// A working day: quiet at night, busy from 9 to 18 h with a peak from 14 to
// 15 h, quiet again in the evening; phases share the 24 h by weight.
constexpr const char* kWorkday = R"({
  "name": "workday",
  "description": "a workstation's day",
  "span": "16GiB",
  "duration": "24h",
  "device": {"latency": "100us", "bandwidth": "200MB/s", "parallelism": 1},
  "read": 60,
  "sizes": {"4K": 70, "64K": 30},
  "qd": {"1": 100},
  "qd_run": 1,
  "phases": [
    {"name": "night", "weight": 9, "idle": {"probability": 100, "mean": "2s", "max": "10s"}},
    {"name": "morning", "weight": 5, "idle": {"probability": 100, "mean": "80ms", "max": "800ms"}},
    {"name": "peak", "weight": 1, "qd": {"1": 50, "4": 50}, "idle": {"probability": 100, "mean": "25ms", "max": "250ms"}},
    {"name": "afternoon", "weight": 3, "idle": {"probability": 100, "mean": "80ms", "max": "800ms"}},
    {"name": "evening", "weight": 6, "idle": {"probability": 100, "mean": "500ms", "max": "5s"}}
  ]
})";

}  // namespace

TEST_CASE("coarse histogram percentiles are within 12% of the exact value") {
  analysis::CoarseHistogram h;
  for (uint64_t v = 1; v <= 100'000; ++v) h.add(v * 10);  // 10 .. 1,000,000
  CHECK(h.count() == 100'000);
  CHECK(h.percentile(50) == Approx(500'000).epsilon(0.12));
  CHECK(h.percentile(99) == Approx(990'000).epsilon(0.12));
  CHECK(analysis::CoarseHistogram::lowest_in(analysis::CoarseHistogram::bucket_of(1000)) <= 1000);
  CHECK(analysis::CoarseHistogram::lowest_in(analysis::CoarseHistogram::bucket_of(1000) + 1) > 1000);
  analysis::CoarseHistogram empty;
  CHECK(empty.percentile(50) == 0);
}

TEST_CASE("timeline: busy time per device and bin, in flight, hours, and bins double past their bound") {
  v1::TraceHeader header;  // no wall clock: hours count from the first IO
  analysis::Timeline t(header, 4);
  t.set_origin(0);
  // Device 0: [0.5 s, 1.5 s) and [1 s, 2 s) overlap: busy 1.5 s over bins 0
  // and 1.
  t.add(io_at(kSec / 2, kSec + kSec / 2), kSec + kSec / 2);
  t.add(io_at(kSec, 2 * kSec), 2 * kSec);
  // Device 1: [2.5 s, 3 s).
  t.add(io_at(2 * kSec + kSec / 2, 3 * kSec, 0, 1), 3 * kSec);
  t.finish();
  REQUIRE(t.bin_ns() == kSec);
  REQUIRE(t.bins().size() == 3);
  CHECK(t.bins()[0].busy_ns[0] == kSec / 2);
  CHECK(t.bins()[1].busy_ns[0] == kSec);
  CHECK(t.bins()[2].busy_ns.at(1) == kSec / 2);
  CHECK(t.bins()[1].busy_all_ns == kSec);
  CHECK(t.bins()[1].in_flight_ns == Approx(1.5e9));  // two IOs in flight over half of it
  CHECK(t.bins()[0].latency.count() == 1);
  REQUIRE(t.hours().size() == 1);
  CHECK(t.hours()[0][0] == 2 * kSec);  // the union of all devices: [0.5, 2) and [2.5, 3)

  // An IO at 9 s does not fit 4 bins of 1 s: bins become 4 s wide, merged.
  analysis::Timeline u(header, 4);
  u.set_origin(0);
  u.add(io_at(kSec / 2, kSec), kSec);
  u.add(io_at(9 * kSec, 9 * kSec + kSec / 4), 9 * kSec + kSec / 4);
  u.finish();
  CHECK(u.bin_ns() == 4 * kSec);
  REQUIRE(u.bins().size() == 3);
  CHECK(u.bins()[0].busy_all_ns == kSec / 2);
  CHECK(u.bins()[2].busy_all_ns == kSec / 4);
  CHECK(u.bins()[2].latency.count() == 1);
}

TEST_CASE("timeline: a second device arriving while the first is busy joins the union of all") {
  v1::TraceHeader header;
  analysis::Timeline t(header);
  t.set_origin(0);
  // Device 0 [0.5 s, 1.5 s), device 1 [1 s, 2.5 s) from within it, device 0
  // again [2.2 s, 3 s): all together busy [0.5 s, 3 s).
  t.add(io_at(kSec / 2, kSec + kSec / 2), kSec + kSec / 2);
  t.add(io_at(kSec, 2 * kSec + kSec / 2, 0, 1), 2 * kSec + kSec / 2);
  t.add(io_at(2 * kSec + kSec / 5, 3 * kSec), 3 * kSec);
  t.finish();
  REQUIRE(t.bins().size() == 3);
  CHECK(t.bins()[0].busy_all_ns == kSec / 2);
  CHECK(t.bins()[1].busy_all_ns == kSec);
  CHECK(t.bins()[2].busy_all_ns == kSec);
  CHECK(t.bins()[0].busy_ns[0] == kSec / 2);
  CHECK(t.bins()[1].busy_ns[0] == kSec / 2);
  CHECK(t.bins()[2].busy_ns[0] == kSec - kSec / 5);
  CHECK(t.bins()[1].busy_ns[1] == kSec);
  CHECK(t.bins()[2].busy_ns[1] == kSec / 2);
  REQUIRE(t.hours().size() == 1);
  CHECK(t.hours()[0][0] == 2 * kSec + kSec / 2);
}

TEST_CASE("timeline: 2048 bins make a minute's 1 s, a day's 64 s and a week's 512 s") {
  v1::TraceHeader header;
  for (const auto& [span, bin] : {std::pair{60 * kSec, kSec}, {24 * kHour, 64 * kSec}, {7 * 24 * kHour, 512 * kSec}}) {
    analysis::Timeline t(header);
    t.set_origin(0);
    t.add(io_at(0, 1000), 1000);
    t.add(io_at(span - kSec, span - kSec + 1000), span - kSec + 1000);
    t.finish();
    CHECK(t.bin_ns() == bin);
    CHECK(t.bins().size() <= 2048);
  }
}

TEST_CASE("timeline: with a wall clock, hours are UTC hours of the day from midnight") {
  v1::TraceHeader header;
  header.set_anchor_trace_ns(0);
  header.set_anchor_unix_ns(1'700'000'000LL * kSec);  // 2023-11-14 22:13:20 UTC
  analysis::Timeline t(header);
  t.set_origin(0);
  // 22:13:20 + 50 min = 23:03:20: an IO of 10 min spans 23:03:20 .. 23:13:20;
  // one at +2 h is the next day, 00:13.
  t.add(io_at(50 * 60 * kSec, 60 * 60 * kSec), 60 * 60 * kSec);
  t.add(io_at(2 * kHour, 2 * kHour + kSec), 2 * kHour + kSec);
  t.finish();
  REQUIRE(t.wall_clock());
  REQUIRE(t.hours().size() == 2);
  CHECK(t.hours()[0][23] == 10 * 60 * kSec);
  CHECK(t.hours()[1][0] == kSec);
  CHECK(t.first_day_unix_ns() == 1'699'920'000LL * kSec);  // 2023-11-14 00:00 UTC
}

TEST_CASE("timeline: hours of a year at most, whatever the trace's span") {
  v1::TraceHeader header;
  analysis::Timeline t(header);
  t.set_origin(0);
  // Busy from the first hour for 2 years: the hours stop after 367 days.
  t.add(io_at(0, 2 * 365 * 24 * kHour), 2 * 365 * 24 * kHour);
  t.add(io_at(2 * 365 * 24 * kHour + kHour, 2 * 365 * 24 * kHour + 2 * kHour), 2 * 365 * 24 * kHour + 2 * kHour);
  t.finish();
  CHECK(t.hours().size() == analysis::Timeline::kMaxDays);
  CHECK(t.hours_cut());
  CHECK(t.hours().back()[23] == kHour);
  analysis::Timeline week(header);
  week.set_origin(0);
  week.add(io_at(0, 7 * 24 * kHour), 7 * 24 * kHour);
  week.finish();
  CHECK(week.hours().size() == 7);
  CHECK_FALSE(week.hours_cut());
}

TEST_CASE("offset map: rows over the device's size, or over a range that doubles") {
  v1::TraceHeader header;
  auto* d = header.add_devices();
  d->set_size_bytes(64ULL << 30);
  analysis::OffsetMap m(4, 8);  // 4 columns, 8 rows
  m.set_origin(0);
  m.add(io_at(0, 1, 0), header);
  m.add(io_at(kSec, kSec + 1, 63ULL << 30), header);  // the top row
  m.add(io_at(0, 1, 3ULL << 30, 1),
        header);  // device 1: no size, 1 GiB doubles to 4 GiB
  m.add(io_at(9 * kSec, 9 * kSec + 1, 0),
        header);  // column 9 of 1 s: columns become 4 s
  REQUIRE(m.devices().size() == 2);
  CHECK(m.column_ns() == 4 * kSec);
  const auto& dev0 = m.devices()[0];
  CHECK(dev0.span_bytes == 64ULL << 30);
  CHECK(dev0.counts[0 * 8 + 0] == 1);
  CHECK(dev0.counts[0 * 8 + 7] == 1);
  CHECK(dev0.counts[2 * 8 + 0] == 1);
  const auto& dev1 = m.devices()[1];
  CHECK(dev1.span_bytes == 4ULL << 30);
  CHECK(dev1.counts[0 * 8 + 6] == 1);  // 3 GiB of 4 GiB: row 6 of 8

  // Offsets no device has (a made-up trace's): the span stops at 2^63 bytes,
  // and what lies beyond goes to the top row.
  m.add(io_at(0, 1, UINT64_MAX, 2), header);
  m.add(io_at(0, 1, (1ULL << 62) + 1, 2), header);
  const auto& dev2 = m.devices()[2];
  CHECK(dev2.span_bytes == 1ULL << 63);
  CHECK(dev2.counts[0 * 8 + 7] == 1);
  CHECK(dev2.counts[0 * 8 + 4] == 1);
}

namespace {

// The trace of a working day, synthesized once for the tests below.
const std::string& workday_trace() {
  static test::TempDir dir;
  static const std::string trace = [] {
    const std::string profile = dir.file("workday.json"), out = dir.file("workday.iot");
    std::ofstream(profile) << kWorkday;
    const auto r = test::run(test::iotape_binary() + " synth " + profile + " -o " + out);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    return out;
  }();
  return trace;
}

// The rows of the page's windows table: kind -> (from, to, command).
std::map<std::string, std::array<std::string, 3>> page_windows(const std::string& page) {
  std::map<std::string, std::array<std::string, 3>> out;
  const std::regex row("<tr class=\"(\\w+)\"><td>\\w+</td><td>([0-9.]+)</td><td>([0-9.]+)</td>.*?<code>([^<]*)</code>");
  for (auto it = std::sregex_iterator(page.begin(), page.end(), row); it != std::sregex_iterator(); ++it)
    out[(*it)[1]] = {(*it)[2], (*it)[3], (*it)[4]};
  return out;
}

std::string unescape(std::string s) {
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"&#39;", "'"}, {"&quot;", "\""}, {"&amp;", "&"}})
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + 1)) s.replace(at, from.size(), to);
  return s;
}

// The figures the page prints from report --json are its figures.
void check_totals(const std::string& page, const nlohmann::json& j) {
  for (const char* k : {"ios", "reads", "writes", "bytes_read", "bytes_written"})
    CHECK(by_id(page, k) == std::to_string(j[k].get<uint64_t>()));
  for (const char* k : {"busy_time_ns", "read_busy_time_ns", "write_busy_time_ns", "idle_ns"})
    CHECK(by_id(page, k) == secs(j[k]));
  for (const char* k : {"read", "write", "combined"})
    CHECK(by_id(page, std::string("MBps_") + k) == fmt::format("{:.2f}", j["avg_data_rate_MBps"][k].get<double>()));
  for (const auto& [op, l] : j["latency_ns"].items())
    for (const char* k : {"mean", "p50", "p90", "p99", "p99_9", "max"})
      CHECK(by_id(page, "lat_" + op + "_" + k) == us(l[k]));
  // The first row of the process table by bytes is the JSON's first process.
  std::smatch m;
  REQUIRE(std::regex_search(page, m,
                            std::regex("id=\"processes-bytes\">\\n<tr>.*?</tr>\\n<tr><td>([^<]*)</td><td>(\\d+)"
                                       "</td><td>(\\d+)</td><td>[0-9.]+</td><td>[0-9.]+</td><td>(\\d+)</td>"
                                       "<td>([0-9.]+)</td>")));
  const auto& top = j["processes"][0];
  CHECK(m[2] == std::to_string(top["pid"].get<uint32_t>()));
  CHECK(m[3] == std::to_string(top["ios"].get<uint64_t>()));
  CHECK(m[4] == std::to_string(top["bytes"].get<uint64_t>()));
  CHECK(m[5] == secs(top["busy_time_ns"]));
}

// A real sample imported in `format`, its week page and report --json --by
// process; nullopt (the test skips) without the sample.
struct SamplePage {
  std::string trace, page;
  nlohmann::json json;
};
std::optional<SamplePage> sample_page(const test::TempDir& dir, const std::string& format, const std::string& name) {
  const auto sample = test::real_trace(name);
  if (!sample) return std::nullopt;
  SamplePage out;
  out.trace = dir.file(name + ".iot");
  const std::string html = dir.file(name + ".html");
  REQUIRE(test::run(test::iotape_binary() + " import " + format + " " + *sample + " -o " + out.trace).exit_code == 0);
  const auto r = test::run(test::iotape_binary() + " report --json --by process " + out.trace + " --html " + html);
  REQUIRE(r.exit_code == 0);
  out.json = nlohmann::json::parse(r.output);
  out.page = test::read_file(html);
  return out;
}

}  // namespace

TEST_CASE("the week page of a working day: every chart, the busiest hour, cut's windows, report's figures") {
  const std::string& trace = workday_trace();
  test::TempDir dir;
  const std::string html = dir.file("day.html"), series = dir.file("series.csv");
  const auto r = test::run(test::iotape_binary() + " report --json --by process " + trace + " --html " + html +
                           " --series-csv " + series);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.output);
  const std::string page = test::read_file(html);

  for (const char* id : {"recorded", "totals", "busy", "rates", "iops", "latency", "queue", "heatmap", "offsets",
                         "processes", "windows"})
    CHECK(page.find(fmt::format("<section id=\"{}\">", id)) != std::string::npos);
  size_t svgs = 0;
  for (size_t at = page.find("<svg"); at != std::string::npos; at = page.find("<svg", at + 1)) ++svgs;
  CHECK(svgs == 7);  // 5 charts over time, the heatmap, the offset map of the one device
  CHECK(page.find("<script") == std::string::npos);
  CHECK(page.find("% of each 64 s with an IO outstanding") != std::string::npos);  // a day: 1 s bins doubled to 64 s
  check_totals(page, j);

  // The heatmap's busiest hour is the hour with the most IOs in the series (the
  // peak, 14 to 15 h).
  std::ifstream csv(series);
  std::string line;
  std::getline(csv, line);
  std::map<int, uint64_t> per_hour;
  while (std::getline(csv, line)) {
    std::stringstream ss(line);
    std::string t, ios;
    std::getline(ss, t, ',');
    std::getline(ss, ios, ',');
    per_hour[static_cast<int>(std::stod(t) / 3600)] += std::stoull(ios);
  }
  const auto busiest = std::max_element(per_hour.begin(), per_hour.end(),
                                        [](const auto& a, const auto& b) { return a.second < b.second; });
  CHECK(busiest->first == 14);
  CHECK(page.find(fmt::format("id=\"busiest-hour\" class=\"note\" data-day=\"0\" data-hour=\"{}\"", busiest->first)) !=
        std::string::npos);

  // Each marked window is the one its command line takes: run it and read the
  // window cut chose.
  const auto windows = page_windows(page);
  REQUIRE(windows.size() == 2);
  for (const auto& [kind, w] : windows) {
    const std::string command = unescape(w[2]);
    CHECK(command == "iotape cut " + trace + " --" + kind + " -o " + kind + ".iot");
    const auto cut = test::run("cd " + dir.path() + " && " + test::iotape_binary() + command.substr(6));
    INFO(cut.output);
    REQUIRE(cut.exit_code == 0);
    CHECK(cut.output.find(fmt::format("window {}..{} s:", w[0], w[1])) != std::string::npos);
    const auto info =
        nlohmann::json::parse(test::run(test::iotape_binary() + " info --json " + dir.file(kind + ".iot")).output);
    const auto chosen = nlohmann::json::parse(info["metadata"]["cut.windows"].get<std::string>());
    CHECK(fmt::format("{:.3f}", chosen[0]["start_s"].get<double>()) == w[0]);
    CHECK(fmt::format("{:.3f}", chosen[0]["end_s"].get<double>()) == w[1]);
  }
  CHECK(std::stod(windows.at("heavy")[0]) >= 14 * 3600);  // in the peak
  CHECK(std::stod(windows.at("heavy")[1]) <= 15 * 3600);
  // When it is on the heatmap's grid (no wall clock: hours from the first IO, which is at 0).
  const auto start_min = static_cast<int>(std::stod(windows.at("heavy")[0]) / 60);
  CHECK(page.find(fmt::format("<td>day 1 {:02}:{:02}</td>", start_min / 60, start_min % 60)) != std::string::npos);
}

TEST_CASE("the week page of a real sample (MSR hm_0) prints report's figures") {
  test::TempDir dir;
  const auto sample = sample_page(dir, "msr", "msr-hm0-sample.csv");
  if (!sample) return;
  const std::string &trace = sample->trace, &page = sample->page;
  check_totals(page, sample->json);
  CHECK(page.find("CLOCK_DOMAIN_REALTIME, wall clock known") != std::string::npos);
  CHECK(std::regex_search(page, std::regex("<td>[A-Z][a-z][a-z] \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d UTC</td>")));
  // 127 s of trace: cut's 60 s windows, the heavy one of the two whole windows
  // and the light one the other.
  const auto windows = page_windows(page);
  CHECK(windows.size() == 2);
  CHECK(page.find("id=\"offsets-0\"") != std::string::npos);

  // With --device, the page's cut commands select the same device.
  const auto info = nlohmann::json::parse(test::run(test::iotape_binary() + " info --json " + trace).output);
  const std::string dev = info["devices"][0]["dev"];
  const std::string one = dir.file("one.html");
  REQUIRE(test::run(test::iotape_binary() + " report " + trace + " --device " + dev + " --html " + one).exit_code == 0);
  const auto filtered = page_windows(test::read_file(one));
  REQUIRE(filtered.count("heavy"));
  CHECK(filtered.at("heavy")[2] == "iotape cut " + trace + " --heavy -o heavy.iot --device " + dev);
  CHECK(filtered.at("heavy")[0] == windows.at("heavy")[0]);  // the sample has one device
}

TEST_CASE("the week page of a trace without completion times (CloudPhysics vscsi) says what it cannot draw") {
  test::TempDir dir;
  const auto sample = sample_page(dir, "vscsi", "cloudphysics-sample.vscsi");
  if (!sample) return;
  REQUIRE(sample->json["with_completion"] == 0);
  const std::string& page = sample->page;
  check_totals(page, sample->json);
  for (const char* id : {"busy-chart", "latency-chart", "queue-chart"})
    CHECK(page.find(fmt::format("<p class=\"note\" id=\"{}\">", id)) != std::string::npos);
  CHECK(page.find("id=\"heatmap-chart\">No busy time") != std::string::npos);
  CHECK(page.find("<figure id=\"iops-chart\">") != std::string::npos);  // IOs are counted by issue
  CHECK(page.find("<figure id=\"offsets-0\">") != std::string::npos);
  CHECK(page_windows(page).size() == 2);  // cut scores IO counts instead of busy time
}

TEST_CASE("the week page ranks processes by bytes, by IOs and by busy time") {
  test::TempDir dir;
  const std::string trace = dir.file("procs.iot"), html = dir.file("procs.html");
  {
    format::TraceWriter w(trace, v1::TraceHeader());
    v1::Device d;
    d.set_major(8);
    w.add_device(d);
    auto io = [&](int64_t issue, int64_t complete, uint64_t length, uint32_t pid, const char* comm) {
      format::Io x = io_at(issue, complete);
      x.length = length;
      x.pid = pid;
      x.comm = comm;
      w.append(x);
    };
    io(0, kSec, 4096, 3, "slow");  // the longest busy: 1 s
    for (int i = 0; i < 5; ++i) io(2 * kSec + i * 1000, 2 * kSec + i * 1000 + 10, 4096, 2, "many");  // most IOs
    io(3 * kSec, 3 * kSec + 100, 1 << 20, 1, "big");                                                 // most bytes
    w.close();
  }
  REQUIRE(test::run(test::iotape_binary() + " report " + trace + " --html " + html).exit_code == 0);
  const std::string page = test::read_file(html);
  for (const auto& [table, first] : {std::pair<std::string, std::string>{"processes-bytes", "big"},
                                     {"processes-ios", "many"},
                                     {"processes-busy", "slow"}}) {
    std::smatch m;
    REQUIRE(std::regex_search(page, m, std::regex("id=\"" + table + "\">\\n<tr>.*?</tr>\\n<tr><td>([^<]*)</td>")));
    CHECK(m[1] == first);
  }
}

TEST_CASE("the week page renders in chromium") {
  if (!test::require(test::run("command -v chromium").exit_code == 0, "chromium, to render the week page")) return;
  test::TempDir dir;
  const std::string html = dir.file("day.html");
  REQUIRE(test::run(test::iotape_binary() + " report " + workday_trace() + " --html " + html).exit_code == 0);
  const std::string png = std::getenv("IOTAPE_KEEP_PNG") ? std::getenv("IOTAPE_KEEP_PNG") : dir.file("page.png");
  test::check_renders(html, png, "1400,4000");
}

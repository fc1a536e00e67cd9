// Tests of `iotape compare`: what its page, charts and JSON say about several
// results. Expected values are computed by hand in the comments, or read
// from the results' own headers.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <sys/utsname.h>

#include <filesystem>
#include <map>
#include <regex>

#include "format/reader.h"
#include "format/writer.h"
#include "tests/test_support.h"

using namespace iotape;

namespace {

// A result of `n` IOs at queue depth 1, one every `gap_ns`, each done in
// `latency_ns` (< gap_ns): busy time n * latency_ns. Reads of 4 KiB and
// writes of 128 KiB alternate. `meta`: header metadata, as a replay writes it.
void write_result(const std::string& path, const std::map<std::string, std::string>& meta, int n, int64_t gap_ns,
                  int64_t latency_ns, const std::string& source_detail = "replay:afap") {
  v1::TraceHeader h;
  h.set_source(v1::SOURCE_REPLAY);
  h.set_source_detail(source_detail);
  h.set_host("bench-host");
  h.set_kernel("6.1.0-test");
  format::TraceWriter w(path, h);
  v1::Device d;
  d.set_major(7);
  d.set_name("loop0");
  w.add_device(d);
  for (const auto& [k, v] : meta) w.set_metadata(k, v);
  for (int i = 0; i < n; ++i) {
    format::Io io;
    io.op = i % 2 ? format::Op::kWrite : format::Op::kRead;
    io.issue_ns = 1'000'000'000 + i * gap_ns;
    io.complete_ns = io.issue_ns + latency_ns;
    io.offset = static_cast<uint64_t>(i) * 131072;
    io.length = i % 2 ? 131072 : 4096;
    w.append(io);
  }
  w.close();
}

// Metadata of a replay of the trace `source` (sha256 `sha`) with the clock `times`.
std::map<std::string, std::string> replay_meta(const std::string& workload, const std::string& drive,
                                               const std::string& source, const std::string& sha,
                                               const std::string& times = "device") {
  return {{"workload", workload},          {"target", drive},        {"replay.source", source},
          {"replay.source_sha256", sha},   {"replay.times", times},
          {"replay.options", "timing=afap speed=1 qd=recorded max_idle=25000000ns events=issue fit=fail data=random"}};
}

const std::string kShaA(64, 'a'), kShaB(64, 'b');

// `iotape compare FILES OPTIONS`; redirections in OPTIONS apply to it alone.
test::CommandResult compare(const std::vector<std::string>& files, const std::string& options) {
  std::string cmd = "{ " + test::iotape_binary() + " compare";
  for (const auto& f : files) cmd += " " + f;
  return test::run(cmd + " " + options + "; }");
}

// Label -> fill of every bar of a bar chart SVG (label text right before its rect).
std::map<std::string, std::string> bar_fills(const std::string& svg) {
  std::map<std::string, std::string> fills;
  const std::regex bar(">([^<]*)</text>\n<rect [^>]*fill=\"(#[0-9A-Fa-f]{6})\"");
  for (std::sregex_iterator m(svg.begin(), svg.end(), bar), e; m != e; ++m) fills[(*m)[1]] = (*m)[2];
  return fills;
}

// Widths of the bars of a bar chart SVG, in order.
std::vector<double> bar_widths(const std::string& svg) {
  std::vector<double> widths;
  const std::regex rect("<rect x=\"[0-9.]+\" y=\"[0-9.]+\" width=\"([0-9.]+)\" height=\"22\"");
  for (std::sregex_iterator m(svg.begin(), svg.end(), rect), e; m != e; ++m) widths.push_back(std::stod((*m)[1]));
  return widths;
}

}  // namespace

TEST_CASE("compare states how each replay result was made, as its header says") {
  test::TempDir dir;
  const std::string trace = dir.file("light.iot");
  REQUIRE(test::run(test::iotape_binary() + " synth storage-light --ios 400 --span 16MiB -o " + trace).exit_code == 0);
  std::vector<std::string> results;
  for (const char* t : {"ta", "tb"}) {
    test::write_file(dir.file(t), std::string(16 << 20, '\0'));
    results.push_back(dir.file(fmt::format("light-{}.iot", t)));
    const auto r = test::run(test::iotape_binary() + " replay " + trace + " --target " + dir.file(t) + " -o " +
                             results.back() + " --times user --allow-write" +
                             (t[1] == 'a' ? " --timing afap" : " --timing original --speed 2"));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
  }
  const std::string html = dir.file("page.html");
  const auto c = compare(results, "--html " + html);
  REQUIRE(c.exit_code == 0);
  const std::string page = test::read_file(html);
  utsname u{};
  REQUIRE(::uname(&u) == 0);
  for (const auto& r : results) {
    format::TraceReader reader(r);
    const auto& m = reader.header().metadata();
    INFO(r);
    CHECK(page.find(trace + " (sha256 " + m.at("replay.source_sha256").substr(0, 12)) != std::string::npos);
    CHECK(page.find("\">" + m.at("replay.options") + "</td>") != std::string::npos);
    CHECK(page.find(std::string("<td>") + u.nodename + "</td>") != std::string::npos);
    CHECK(page.find(std::string("<td>") + u.release + "</td>") != std::string::npos);
  }
  // Timing, clock, prefill (a file target is not prefilled by default), speed; per row, in page order.
  CHECK(page.find("<td>afap</td><td>user</td><td>none</td><td>1</td>") != std::string::npos);
  CHECK(page.find("<td>original</td><td>user</td><td>none</td><td>2</td>") != std::string::npos);
  // afap against original under one workload: said on stderr and on the page.
  CHECK(c.output.find("warning: workload \"light.iot\": results differ in timing: afap") != std::string::npos);
  CHECK(page.find("results differ in timing: afap (" + dir.file("ta") + "), original (" + dir.file("tb") + ")") !=
        std::string::npos);
}

TEST_CASE("compare keeps replays of different traces apart and flags different clocks and prefill") {
  test::TempDir dir;
  const std::vector<std::string> files = {dir.file("1.iot"), dir.file("2.iot"), dir.file("3.iot"), dir.file("4.iot")};
  // One workload label over two source traces: heavy.iot on A and B, light.iot on A and B.
  write_result(files[0], replay_meta("mixed", "A", "/traces/heavy.iot", kShaA), 100, 1'000'000, 100'000);
  write_result(files[1], replay_meta("mixed", "B", "/traces/heavy.iot", kShaA), 100, 1'000'000, 200'000);
  write_result(files[2], replay_meta("mixed", "A", "/traces/light.iot", kShaB), 10, 1'000'000, 100'000);
  write_result(files[3], replay_meta("mixed", "B", "/traces/light.iot", kShaB), 10, 1'000'000, 400'000);
  const std::string html = dir.file("page.html");
  const auto c = compare(files, "--json --html " + html + " 2>" + dir.file("stderr"));
  REQUIRE(c.exit_code == 0);
  const auto j = nlohmann::json::parse(c.output);
  REQUIRE(j.size() == 4);
  CHECK(j[0]["workload"] == "mixed [source heavy.iot]");
  CHECK(j[1]["workload"] == "mixed [source heavy.iot]");
  CHECK(j[2]["workload"] == "mixed [source light.iot]");
  CHECK(j[3]["workload"] == "mixed [source light.iot]");
  // Ratios within each source only: B's busy time is 2x A's on heavy, 4x on light.
  CHECK(j[1]["ratios"]["busy_time"].get<double>() == Approx(2.0));
  CHECK(j[3]["ratios"]["busy_time"].get<double>() == Approx(4.0));
  const std::string err = test::read_file(dir.file("stderr"));
  CHECK(err.find("warning: workload \"mixed\" holds replays of 2 different source traces") != std::string::npos);
  const std::string page = test::read_file(html);
  CHECK(page.find("holds replays of 2 different source traces") != std::string::npos);
  CHECK(page.find("<h2>Workload: mixed [source heavy.iot]</h2>") != std::string::npos);

  // Same source, but device against user clock, and prefill reads against none.
  auto a = replay_meta("w", "A", "/traces/heavy.iot", kShaA, "device");
  auto b = replay_meta("w", "B", "/traces/heavy.iot", kShaA, "user");
  a["replay.prefill"] = "reads";
  b["replay.prefill"] = "none";
  write_result(files[0], a, 10, 1'000'000, 100'000);
  write_result(files[1], b, 10, 1'000'000, 100'000, "replay:original");
  const auto d = compare({files[0], files[1]}, "--html " + html + " 2>&1 >/dev/null");
  REQUIRE(d.exit_code == 0);
  CHECK(d.output.find("workload \"w\": results differ in timing: afap (A), original (B)") != std::string::npos);
  CHECK(d.output.find("workload \"w\": results differ in clock (replay.times): device (A), user (B)") !=
        std::string::npos);
  CHECK(d.output.find("workload \"w\": results differ in prefill: reads (A), none (B)") != std::string::npos);
  const std::string page2 = test::read_file(html);
  CHECK(page2.find("differ in prefill: reads (A), none (B)") != std::string::npos);
  CHECK(page2.find("<td>device</td><td>reads</td>") != std::string::npos);

  // Without replay.prefill, the prefill= of replay.options; without either, not recorded.
  b.erase("replay.prefill");
  b["replay.options"] += " prefill=full";
  a.erase("replay.prefill");
  write_result(files[0], a, 10, 1'000'000, 100'000);
  write_result(files[1], b, 10, 1'000'000, 100'000);
  const auto e = compare({files[0], files[1]}, "--html " + html + " 2>&1 >/dev/null");
  REQUIRE(e.exit_code == 0);
  CHECK(e.output.find("differ in prefill: not recorded (A), full (B)") != std::string::npos);
}

TEST_CASE("compare shows a recording beside its own replay without a warning, another trace with one") {
  test::TempDir dir;
  const std::string recording = dir.file("recorded.iot"), other = dir.file("other.iot"), replayed = dir.file("r.iot");
  // A recording (no replay settings at all) and a replay of that very file.
  v1::TraceHeader h;
  h.set_source(v1::SOURCE_SYNTH);
  for (const auto& path : {recording, other}) {
    format::TraceWriter w(path, h);
    format::Io io;
    io.issue_ns = 1'000'000;
    io.complete_ns = 1'100'000;
    io.length = 4096;
    w.append(io);
    w.close();
  }
  write_result(replayed, replay_meta("", "", recording, kShaA), 10, 1'000'000, 100'000);
  const auto own = compare({recording, replayed}, "--label w/recorded --label w/replayed --html " +
                                                      dir.file("a.html") + " 2>&1 >/dev/null");
  INFO(own.output);
  REQUIRE(own.exit_code == 0);
  CHECK(own.output.find("warning") == std::string::npos);
  const auto foreign = compare({other, replayed}, "--label w/other --label w/replayed --html " + dir.file("b.html") +
                                                      " 2>&1 >/dev/null");
  INFO(foreign.output);
  REQUIRE(foreign.exit_code == 0);
  CHECK(foreign.output.find("other record no source trace (not replay results): cannot check") != std::string::npos);
  CHECK(foreign.output.find("results differ in") == std::string::npos);
}

TEST_CASE("compare gives each drive's figures as ratios to the baseline drive") {
  test::TempDir dir;
  const std::vector<std::string> files = {dir.file("a.iot"), dir.file("b.iot")};
  // 100 IOs at QD1: busy time 100 x 80 us = 8 ms (A), 100 x 200 us = 20 ms (B).
  write_result(files[0], replay_meta("w", "A", "/t/w.iot", kShaA), 100, 1'000'000, 80'000);
  write_result(files[1], replay_meta("w", "B", "/t/w.iot", kShaA), 100, 1'000'000, 200'000);
  const std::string html = dir.file("page.html"), svgs = dir.file("svg");
  auto c = compare(files, "--json --html " + html + " --svg-dir " + svgs);
  REQUIRE(c.exit_code == 0);
  auto j = nlohmann::json::parse(c.output);
  CHECK(j[0]["ratios"]["baseline"] == "A");
  CHECK(j[1]["ratios"]["busy_time"].get<double>() == Approx(20.0 / 8.0));
  // The same bytes in 2.5x the busy time: 0.4x the data rate.
  CHECK(j[1]["ratios"]["data_rate"].get<double>() == Approx(8.0 / 20.0));
  CHECK(j[1]["ratios"]["latency_mean"].get<double>() == Approx(2.5));
  const std::string page = test::read_file(html);
  // In the table: busy time 0.008 s (1.00x) and 0.020 s (2.50x), stating the direction.
  CHECK(page.find("<td>Disk busy time, s (lower is better)</td><td>0.008 <b>1.00x (baseline)</b></td>"
                  "<td>0.020 <b>2.50x</b></td>") != std::string::npos);
  CHECK(page.find("MB/s (higher is better)") != std::string::npos);
  // On the bars.
  const std::string busy = test::read_file(svgs + "/busy_time_w.svg");
  CHECK(busy.find("0.0200 s  <tspan font-weight=\"bold\">2.50x</tspan>") != std::string::npos);
  CHECK(test::read_file(svgs + "/data_rate_w.svg").find(">0.40x</tspan>") != std::string::npos);

  // --baseline B: A's busy time is 0.4x B's.
  c = compare(files, "--json --baseline B");
  REQUIRE(c.exit_code == 0);
  j = nlohmann::json::parse(c.output);
  CHECK(j[0]["ratios"]["busy_time"].get<double>() == Approx(0.4));
  CHECK(j[1]["ratios"]["busy_time"].get<double>() == Approx(1.0));
  CHECK(compare(files, "--json --baseline C").exit_code == 64);
}

TEST_CASE("compare draws each drive in one colour on every chart, unlabelled replay results too") {
  test::TempDir dir;
  std::vector<std::string> files;
  // heavy.iot on ta then tb, light.iot on tb then ta, as replays name them
  // (no workload or target metadata: replay.source and replay.targets).
  for (const auto& [source, target] : std::vector<std::pair<std::string, std::string>>{
           {"heavy.iot", "/dev/ta"}, {"heavy.iot", "/dev/tb"}, {"light.iot", "/dev/tb"}, {"light.iot", "/dev/ta"}}) {
    files.push_back(dir.file(fmt::format("r{}.iot", files.size())));
    auto meta = replay_meta("", "", "/t/" + source, source[0] == 'h' ? kShaA : kShaB);
    meta.erase("workload");
    meta.erase("target");
    meta["replay.targets"] = target;
    write_result(files.back(), meta, 50, 1'000'000, target == "/dev/ta" ? 100'000 : 300'000);
  }
  const std::string svgs = dir.file("svg");
  const auto c = compare(files, "--json --svg-dir " + svgs);
  REQUIRE(c.exit_code == 0);
  const auto j = nlohmann::json::parse(c.output);
  CHECK(j[2]["workload"] == "light.iot");
  CHECK(j[2]["drive"] == "/dev/tb");
  size_t charts = 0;
  for (const auto& f : std::filesystem::directory_iterator(svgs)) {
    const std::string svg = test::read_file(f.path());
    INFO(f.path());
    if (f.path().filename().string().rfind("iops_", 0) == 0) {
      // The line and its legend: tb's colour and dash in both workloads, though it comes first in light's.
      CHECK(svg.find("stroke=\"#E69F00\" stroke-width=\"1.6\" stroke-dasharray=\"6 3\"") != std::string::npos);
      CHECK(svg.find("stroke=\"#0072B2\" stroke-width=\"1.6\" points") != std::string::npos);
      continue;
    }
    const auto fills = bar_fills(svg);
    REQUIRE(fills.size() == 2);
    CHECK(fills.at("/dev/ta") == "#0072B2");
    CHECK(fills.at("/dev/tb") == "#E69F00");
    ++charts;
  }
  CHECK(charts == 12);  // 6 metrics x 2 workloads
}

TEST_CASE("compare charts each workload on its own axis") {
  test::TempDir dir;
  const std::vector<std::string> files = {dir.file("h1.iot"), dir.file("h2.iot"), dir.file("l1.iot"), dir.file("l2.iot")};
  // Heavy: 3000 IOs (busy 0.3 s and 0.6 s); light: 30 IOs (3 ms and 6 ms), 100x less.
  write_result(files[0], replay_meta("Heavy", "A", "/t/h.iot", kShaA), 3000, 1'000'000, 100'000);
  write_result(files[1], replay_meta("Heavy", "B", "/t/h.iot", kShaA), 3000, 1'000'000, 200'000);
  write_result(files[2], replay_meta("Light", "A", "/t/l.iot", kShaB), 30, 1'000'000, 100'000);
  write_result(files[3], replay_meta("Light", "B", "/t/l.iot", kShaB), 30, 1'000'000, 200'000);
  const std::string svgs = dir.file("svg");
  REQUIRE(compare(files, "--svg-dir " + svgs).exit_code == 0);
  const auto heavy = bar_widths(test::read_file(svgs + "/busy_time_Heavy.svg"));
  const auto light = bar_widths(test::read_file(svgs + "/busy_time_Light.svg"));
  REQUIRE(heavy.size() == 2);
  REQUIRE(light.size() == 2);
  // Best (shortest busy time) first; the longest bar of each fills the width,
  // the other is half of it (0.3 of 0.6 s, 3 of 6 ms).
  CHECK(light[1] == Approx(heavy[1]));
  CHECK(light[0] == Approx(light[1] / 2).margin(0.1));
  CHECK(heavy[0] == Approx(heavy[1] / 2).margin(0.1));
}

TEST_CASE("compare charts IOPS over time of a run under a second in bins of milliseconds") {
  test::TempDir dir;
  const std::vector<std::string> files = {dir.file("a.iot"), dir.file("b.iot")};
  // 300 IOs, one every 1 ms: the run lasts 299.1 ms; 299.1 / 200 bins -> 2 ms
  // bins, 150 of them, each with 2 IOs: 1000 IOPS.
  write_result(files[0], replay_meta("w", "A", "/t/w.iot", kShaA), 300, 1'000'000, 100'000);
  // Half as many IOs 2 ms apart: 1 IO per bin, 500 IOPS, over the same length.
  write_result(files[1], replay_meta("w", "B", "/t/w.iot", kShaA), 150, 2'000'000, 100'000);
  const std::string svgs = dir.file("svg");
  const auto c = compare(files, "--json --svg-dir " + svgs);
  REQUIRE(c.exit_code == 0);
  const auto j = nlohmann::json::parse(c.output);
  for (size_t d = 0; d < 2; ++d) {
    CHECK(j[d]["series_interval_s"].get<double>() == Approx(0.002));
    const auto iops = j[d]["iops"].get<std::vector<double>>();
    REQUIRE(iops.size() == 150);
    for (double v : iops) CHECK(v == Approx(d == 0 ? 1000 : 500));
  }
  const std::string svg = test::read_file(svgs + "/iops_w.svg");
  CHECK(svg.find("ms from the first IO (IOs issued per 2 ms bin / the bin)") != std::string::npos);
  // 150 points per line; the first at the middle of the first bin.
  const std::regex line("<polyline [^>]*points=\"([^\"]*)\"");
  size_t lines = 0;
  for (std::sregex_iterator m(svg.begin(), svg.end(), line), e; m != e; ++m, ++lines) {
    const std::string pts = (*m)[1];
    CHECK(std::count(pts.begin(), pts.end(), ',') == 150);
  }
  CHECK(lines == 2);
}

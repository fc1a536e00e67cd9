// Tests of the workloads module: synthesized traces against the published
// statistics they reproduce, cuts against an independent in-memory
// computation, drive-state tests end to end on loop devices.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <vector>

#include "analysis/report.h"
#include "format/reader.h"
#include "format/summary.h"
#include "format/writer.h"
#include "tests/test_support.h"
#include "workloads/bench.h"

using namespace iotape;
using iotape::test::run;
using iotape::test::TempDir;

namespace {

std::string iotape_cmd(const std::string& args) { return iotape::test::iotape_binary() + " " + args; }

void must_run(const std::string& args) {
  const auto r = run(iotape_cmd(args));
  INFO(args << "\n" << r.output);
  REQUIRE(r.exit_code == 0);
}

analysis::Report analyse_file(const std::string& path) {
  format::TraceReader reader(path);
  return analysis::analyse(reader);
}

double pct(uint64_t part, uint64_t whole) { return 100.0 * static_cast<double>(part) / static_cast<double>(whole); }

// AnandTech Storage Bench 2011 figures (REFERENCE §6).
struct Published {
  const char* profile;
  uint64_t reads, writes;
  std::array<double, 7> sizes;  // <4K, 4K, 8K, 16K, 32K, 64K, 128K (%)
  double sequential;            // %
  double qd1;                   // %
  std::optional<std::array<double, 8>> qd;  // all QD buckets, when published
  std::optional<double> mean_qd;
};

const Published kHeavy{"storage-heavy", 2'168'893, 1'783'447, {7.8, 29.2, 3.5, 10.3, 10.8, 4.1, 21.7},
                       43, 59, std::nullopt, 4.6};
const Published kLight{"storage-light", 372'630, 459'709, {6.2, 27.6, 2.4, 8.0, 6.5, 4.8, 26.4},
                       70, 73.4, std::array<double, 8>{73.4, 16.8, 2.6, 2.3, 3.1, 1.5, 0.2, 0.2}, std::nullopt};

}  // namespace

TEST_CASE("synth storage-heavy and storage-light match the published statistics", "[synth]") {
  TempDir dir;
  for (const Published& pub : {kHeavy, kLight}) {
    SECTION(pub.profile) {
      const std::string out = dir.file(std::string(pub.profile) + ".iot");
      must_run(fmt::format("synth {} -o {} --ios 400000", pub.profile, out));
      const auto r = analyse_file(out);
      REQUIRE(r.ios == 400000);
      const uint64_t data = r.op(format::Op::kRead).ios + r.op(format::Op::kWrite).ios;
      CHECK(std::abs(pct(r.op(format::Op::kRead).ios, data) - pct(pub.reads, pub.reads + pub.writes)) <= 1.0);
      for (size_t b = 0; b < pub.sizes.size(); ++b) {
        INFO("size bucket " << analysis::SizeMix::kBucketNames[b]);
        CHECK(std::abs(pct(r.sizes.buckets()[b], r.sizes.ios()) - pub.sizes[b]) <= 1.0);
      }
      CHECK(std::abs(pct(r.sequential.sequential(), r.sequential.ios()) - pub.sequential) <= 2.0);
      CHECK(std::abs(pct(r.queue_depth.buckets()[0], r.queue_depth.ios()) - pub.qd1) <= 2.0);
      if (pub.qd)
        for (size_t b = 0; b < 8; ++b) {
          INFO("QD bucket " << stats::QueueDepth::kBucketNames[b]);
          CHECK(std::abs(pct(r.queue_depth.buckets()[b], r.queue_depth.ios()) - (*pub.qd)[b]) <= 2.0);
        }
      if (pub.mean_qd) CHECK(std::abs(r.queue_depth.mean() - *pub.mean_qd) <= 0.2);
    }
  }
}

TEST_CASE("synth: the same seed gives a byte-identical file, another seed another file", "[synth]") {
  TempDir dir;
  for (const char* profile : {"storage-light", "database", "zones"}) {
    const std::string a = dir.file("a.iot"), b = dir.file("b.iot"), c = dir.file("c.iot");
    must_run(fmt::format("synth {} -o {} --seed 7 --ios 50000", profile, a));
    must_run(fmt::format("synth {} -o {} --seed 7 --ios 50000", profile, b));
    must_run(fmt::format("synth {} -o {} --seed 8 --ios 50000", profile, c));
    INFO(profile);
    CHECK(run(fmt::format("cmp {} {}", a, b)).exit_code == 0);
    CHECK(run(fmt::format("cmp -s {} {}", a, c)).exit_code != 0);
  }
}

TEST_CASE("synth: fixed-depth patterns keep their queue depth and read share per phase", "[synth]") {
  TempDir dir;
  const std::string out = dir.file("qd32.iot");
  must_run(fmt::format("synth rand-4k-qd32 -o {} --duration 10s --span 1GiB", out));
  const auto r = analyse_file(out);
  // Each phase ramps up once (31 IOs below depth 32); every other IO sees 32.
  CHECK(r.queue_depth.buckets()[6] >= r.ios - 2 * 31);
  CHECK(r.queue_depth.max() == 32);
  CHECK(r.sizes.buckets()[1] == r.ios);  // all 4 KiB
  CHECK(std::abs(pct(r.op(format::Op::kRead).ios, r.ios) - 50) <= 1.0);  // two phases of equal time
  CHECK(r.sequential.sequential() < r.ios / 100);
  CHECK(r.duration_ns() >= 10'000'000'000);
  CHECK(r.duration_ns() < 10'001'000'000);
}

namespace {

// Every IO of a trace, with its position.
std::vector<format::Io> all_ios(const std::string& path) {
  format::TraceReader reader(path);
  std::vector<format::Io> out;
  format::Io io;
  while (reader.next(io)) {
    io.comm = {};
    out.push_back(io);
  }
  return out;
}

int64_t end_of(const format::Io& io) { return io.has_complete() ? io.complete_ns : io.issue_ns; }

// The header's phases against the IOs: they tile the trace in order, each
// spans exactly its IOs' times, and each starts after the previous one ended.
void check_phase_spans(const std::string& path) {
  const v1::TraceHeader h = format::TraceReader(path).header();
  const auto ios = all_ios(path);
  uint64_t next = 0;
  for (int k = 0; k < h.phases_size(); ++k) {
    const v1::Phase& p = h.phases(k);
    INFO("phase " << k << " " << p.name());
    CHECK(p.first_index() == next);
    next = p.first_index() + p.ios();
    REQUIRE(next <= ios.size());
    if (p.ios() == 0) continue;
    int64_t first = INT64_MAX, last = INT64_MIN;
    for (uint64_t i = p.first_index(); i < next; ++i) {
      first = std::min(first, ios[i].issue_ns);
      last = std::max(last, end_of(ios[i]));
      if (p.block_size()) CHECK(ios[i].length == p.block_size());
      if (p.read_share() == 0) CHECK(ios[i].op == format::Op::kWrite);
      if (p.read_share() == 1) CHECK(ios[i].op == format::Op::kRead);
    }
    CHECK(p.start_ns() == first);
    CHECK(p.end_ns() == last);
    if (k > 0) CHECK(p.start_ns() >= h.phases(k - 1).end_ns());
  }
  CHECK(next == ios.size());
}

}  // namespace

TEST_CASE("synth records its phases in the header, cut keeps them clipped", "[synth][cut]") {
  TempDir dir;
  // Lengths in IOs: database, 99 phases of 50 IOs.
  const std::string db = dir.file("db.iot");
  must_run(fmt::format("synth database -o {} --ios 4950 --span 1GiB", db));
  {
    const v1::TraceHeader h = format::TraceReader(db).header();
    REQUIRE(h.phases_size() == 99);
    for (int k = 0; k < 99; ++k) {
      const v1::Phase& p = h.phases(k);
      INFO("phase " << k << " " << p.name());
      // The profile sweeps QD 1..256 (slowest: sweep keys go in name order) and read 0..100%.
      CHECK(p.name() == fmt::format("qd={} read={}", 1 << (k / 11), k % 11 * 10));
      CHECK(p.pattern() == "database");
      CHECK(p.read_share() == Approx((k % 11) / 10.0));
      CHECK(p.queue_depth() == 1u << (k / 11));
      CHECK(p.block_size() == 8192);
      CHECK(p.alignment() == 4096);
      CHECK(p.threads() == 1);
      CHECK(p.data().empty());
      CHECK(p.ios() == 50);
    }
  }
  check_phase_spans(db);

  // Lengths in time: seq-steps, 18 phases of 0.1 s.
  const std::string steps = dir.file("steps.iot");
  must_run(fmt::format("synth seq-steps -o {} --duration 1.8s --span 1GiB", steps));
  const v1::TraceHeader sh = format::TraceReader(steps).header();
  REQUIRE(sh.phases_size() == 18);
  for (int k = 0; k < 18; ++k) {
    CHECK(sh.phases(k).block_size() == 4096u << (k % 9));
    CHECK(sh.phases(k).queue_depth() == 4);
    CHECK(sh.phases(k).sequential() == 1);
    CHECK(sh.phases(k).read_share() == (k < 9 ? 1 : 0));
  }
  check_phase_spans(steps);

  // A cut from 0.25 s to 0.95 s: phases 2 (its end) to 9 (its start), renumbered.
  const std::string cut = dir.file("cut.iot");
  must_run(fmt::format("cut {} -o {} --window 0.25..0.95", steps, cut));
  const v1::TraceHeader ch = format::TraceReader(cut).header();
  REQUIRE(ch.phases_size() == 8);
  for (int k = 0; k < ch.phases_size(); ++k) {
    INFO("phase " << k);
    CHECK(ch.phases(k).name() == sh.phases(k + 2).name());
    // Phases 3..8 lie within the window: kept whole; 2 and 9 clipped.
    if (k == 0 || k == 7) CHECK(ch.phases(k).ios() < sh.phases(k + 2).ios());
    else CHECK(ch.phases(k).ios() == sh.phases(k + 2).ios());
  }
  check_phase_spans(cut);
}

TEST_CASE("synth: a profile file in the documented format", "[synth]") {
  TempDir dir;
  const std::string profile = dir.file("mine.json");
  std::ofstream(profile) << R"({
    // comments are allowed
    "name": "mine", "span": "1GiB", "ios": 20000,
    "sizes": {"64K": 50, "16K": 50}, "read": 25, "sequential": 100, "qd": {"2": 100}, "qd_run": 4,
    "phases": [{"name": "first"}, {"name": "second", "weight": 3, "read": 75}]
  })";
  const std::string out = dir.file("mine.iot");
  must_run(fmt::format("synth {} -o {}", profile, out));
  const auto r = analyse_file(out);
  CHECK(r.ios == 20000);
  // 5000 IOs at 25% reads, then 15000 at 75%.
  CHECK(std::abs(static_cast<double>(r.op(format::Op::kRead).ios) - (1250 + 11250)) < 300);
  // Segments of depth 2 with 4 IOs at depth 2: one IO in five sees depth 1.
  CHECK(std::abs(pct(r.queue_depth.buckets()[0], r.ios) - 20) <= 1.0);
  CHECK(pct(r.sequential.sequential(), r.sequential.ios()) > 95);

  std::ofstream(dir.file("bad.json")) << R"({"span": "1GiB", "ios": 10, "sizes": {"4K": 100}, "qd": 1, "reed": 5})";
  const auto bad = run(iotape_cmd(fmt::format("synth {} -o {}", dir.file("bad.json"), dir.file("x.iot"))));
  CHECK(bad.exit_code != 0);
  CHECK(bad.output.find("unknown key \"reed\"") != std::string::npos);
}

namespace {

struct Interval {
  int64_t start, end;
};

struct WindowTruth {
  int64_t busy = 0;
  uint64_t bytes = 0, ios = 0;
  double score = 0;
  bool within = false;  // ends by the trace's last end: a cut may take it
};

// Every `length` window from the first issue, from all IOs held in memory:
// busy time is the union of the IO intervals clipped to the window; the score
// is as documented (busy time, or IOs without completions, and bytes, each
// relative to the highest window's).
std::vector<WindowTruth> windows_of(const std::string& trace, int64_t length) {
  format::TraceReader reader(trace);
  std::vector<Interval> all;
  std::vector<uint64_t> bytes;
  bool timed = false;
  format::Io io;
  while (reader.next(io)) {
    timed |= io.has_complete();
    all.push_back({io.issue_ns, io.has_complete() ? std::max(io.complete_ns, io.issue_ns) : io.issue_ns});
    bytes.push_back(io.length);
  }
  const int64_t origin = all.front().start;
  int64_t last = 0;
  for (const auto& i : all) last = std::max(last, i.end - origin);
  std::vector<WindowTruth> w(static_cast<size_t>(last / length) + 1);
  for (size_t k = 0; k < all.size(); ++k) {
    auto& t = w[static_cast<size_t>((all[k].start - origin) / length)];
    t.bytes += bytes[k];
    ++t.ios;
  }
  for (size_t k = 0; k < w.size(); ++k) {
    const int64_t lo = origin + static_cast<int64_t>(k) * length, hi = lo + length;
    std::vector<Interval> clipped;
    for (const auto& i : all)
      if (i.end > lo && i.start < hi) clipped.push_back({std::max(i.start, lo), std::min(i.end, hi)});
    std::sort(clipped.begin(), clipped.end(), [](const Interval& a, const Interval& b) { return a.start < b.start; });
    int64_t reach = INT64_MIN;
    for (const auto& c : clipped) {
      if (c.end <= reach) continue;
      w[k].busy += c.end - std::max(c.start, reach);
      reach = c.end;
    }
  }
  double max_load = 1, max_bytes = 1;
  auto load = [&](const WindowTruth& t) { return timed ? static_cast<double>(t.busy) : static_cast<double>(t.ios); };
  for (const auto& t : w) max_load = std::max(max_load, load(t)), max_bytes = std::max(max_bytes, double(t.bytes));
  for (auto& t : w) t.score = (load(t) / max_load + static_cast<double>(t.bytes) / max_bytes) / 2;
  for (size_t k = 0; k < w.size(); ++k) w[k].within = static_cast<int64_t>(k + 1) * length <= last;
  return w;
}

std::string cloudphysics_trace(const TempDir& dir) {
  const auto sample = iotape::test::real_trace("cloudphysics-sample.vscsi");
  if (!sample) return "";
  const std::string trace = dir.file("cloudphysics.iot");
  must_run(fmt::format("import vscsi {} -o {}", *sample, trace));
  return trace;
}

nlohmann::json chosen_windows(const std::string& cut) {
  return nlohmann::json::parse(format::TraceReader(cut).header().metadata().at("cut.windows"));
}

size_t window_index(const nlohmann::json& chosen, double length_s) {
  return static_cast<size_t>(std::llround(chosen["start_s"].get<double>() / length_s));
}

// Window indexes of the n highest scores among the windows within the trace.
std::vector<size_t> top(const std::vector<WindowTruth>& w, size_t n) {
  std::vector<size_t> order;
  for (size_t i = 0; i < w.size(); ++i)
    if (w[i].within) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return w[a].score > w[b].score; });
  order.resize(n);
  std::sort(order.begin(), order.end());
  return order;
}

}  // namespace

TEST_CASE("cut --heavy on the cloudphysics sample takes the windows with the most IO", "[cut]") {
  TempDir dir;
  const std::string trace = cloudphysics_trace(dir);
  if (trace.empty()) return;
  // vscsi v1 records no completion times: the score is IOs and bytes.
  const auto truth = windows_of(trace, 60'000'000'000);
  REQUIRE(truth.size() >= 100);  // 2 h in minutes

  const std::string out = dir.file("heavy.iot");
  must_run(fmt::format("cut {} -o {} --heavy --length 60s --count 3 --max-idle 25ms", trace, out));
  const auto chosen = chosen_windows(out);
  REQUIRE(chosen.size() == 3);
  std::vector<size_t> got;
  for (const auto& c : chosen) {
    const size_t w = window_index(c, 60);
    got.push_back(w);
    CHECK(c["ios"].get<uint64_t>() == truth[w].ios);
    CHECK(c["bytes"].get<uint64_t>() == truth[w].bytes);
  }
  CHECK(got == top(truth, 3));
  // The window with the most bytes is among them.
  const auto most_bytes = static_cast<size_t>(
      std::max_element(truth.begin(), truth.end(), [](auto& a, auto& b) { return a.bytes < b.bytes; }) - truth.begin());
  CHECK(std::find(got.begin(), got.end(), most_bytes) != got.end());

  // The cut holds exactly the IOs of those windows, in order, with no idle gap over 25 ms.
  uint64_t expected = 0;
  for (size_t w : got) expected += truth[w].ios;
  format::TraceReader cut_reader(out);
  format::Io io;
  uint64_t n = 0;
  int64_t prev = INT64_MIN, done = INT64_MIN;
  while (cut_reader.next(io)) {
    ++n;
    CHECK(io.issue_ns >= prev);
    if (done != INT64_MIN) CHECK(io.issue_ns - done <= 25'000'000);
    prev = io.issue_ns;
    done = std::max(done, io.has_complete() ? io.complete_ns : io.issue_ns);
  }
  CHECK(n == expected);
}

TEST_CASE("cut --heavy on a trace with completions ranks windows by busy time and bytes", "[cut]") {
  TempDir dir;
  const std::string trace = dir.file("heavy-synth.iot");
  must_run(fmt::format("synth storage-heavy -o {} --ios 150000", trace));
  const int64_t length = 2'000'000'000;
  const auto truth = windows_of(trace, length);
  REQUIRE(truth.size() >= 10);
  const std::string out = dir.file("cut.iot");
  must_run(fmt::format("cut {} -o {} --heavy --length 2s --count 2", trace, out));
  const auto chosen = chosen_windows(out);
  REQUIRE(chosen.size() == 2);
  std::vector<size_t> got;
  for (const auto& c : chosen) {
    const size_t w = window_index(c, 2);
    got.push_back(w);
    CHECK(std::abs(c["busy_s"].get<double>() * 1e9 - static_cast<double>(truth[w].busy)) < 1e3);
  }
  CHECK(got == top(truth, 2));
}

TEST_CASE("cut --light takes the least busy windows with IOs, --window exact ranges", "[cut]") {
  TempDir dir;
  const std::string trace = cloudphysics_trace(dir);
  if (trace.empty()) return;
  const auto truth = windows_of(trace, 60'000'000'000);
  // The active windows within the trace, lowest score first.
  std::vector<size_t> active;
  for (size_t k = 0; k < truth.size(); ++k)
    if (truth[k].within && truth[k].ios > 0) active.push_back(k);
  std::stable_sort(active.begin(), active.end(), [&](size_t a, size_t b) { return truth[a].score < truth[b].score; });
  REQUIRE(active.size() > 4);
  REQUIRE(truth[active[1]].score < truth[active[2]].score);  // no tie decides the pair

  const std::string light = dir.file("light.iot");
  must_run(fmt::format("cut {} -o {} --light --length 60s --count 2", trace, light));
  const auto chosen = chosen_windows(light);
  REQUIRE(chosen.size() == 2);
  std::vector<size_t> got;
  for (const auto& c : chosen) got.push_back(window_index(c, 60));
  std::vector<size_t> lowest = {active[0], active[1]};
  std::sort(lowest.begin(), lowest.end());
  CHECK(got == lowest);

  const std::string win = dir.file("window.iot");
  must_run(fmt::format("cut {} -o {} --window 1200..1800 --window 0..60 --max-idle 10s", trace, win));
  uint64_t expected = truth[0].ios;
  for (size_t k = 20; k < 30; ++k) expected += truth[k].ios;
  format::TraceReader cut_reader(win);
  CHECK(format::summarize(cut_reader).ios == expected);
}

namespace {

format::Io timed_io(format::Op op, double issue_s, double complete_s, uint64_t length) {
  format::Io io;
  io.op = op;
  io.issue_ns = std::llround(issue_s * 1e9);
  io.complete_ns = std::llround(complete_s * 1e9);
  io.length = length;
  return io;
}

void write_ios(const std::string& path, const std::vector<format::Io>& ios) {
  format::TraceWriter w(path, v1::TraceHeader());
  v1::Device d;
  d.set_major(8);
  w.add_device(d);
  for (const format::Io& io : ios) w.append(io);
  w.close();
}

std::string cut_output(const std::string& args) {
  const auto r = run(iotape_cmd("cut " + args));
  INFO(args << "\n" << r.output);
  REQUIRE(r.exit_code == 0);
  return r.output;
}

}  // namespace

TEST_CASE("cut scores bytes read and written, and discards only with --score-discards", "[cut]") {
  TempDir dir;
  // Three 20 s windows, the trace ending at 60 s. As reported from a trace with an fstrim:
  //   0..20 s: 10 writes of 150 MB, 0.1286 s each: busy 1.286 s, 1,500 MB
  //  20..40 s: 11 writes of 125 MB, 0.1 s each, and a 2,063 MB discard of 0.01 s: busy 1.110 s,
  //            1,375 MB written, 3,438 MB with the discard
  //  40..60 s: one 4 KiB read, 59.5 .. 60 s
  std::vector<format::Io> ios;
  for (int i = 0; i < 10; ++i) ios.push_back(timed_io(format::Op::kWrite, i, i + 0.1286, 150'000'000));
  for (int i = 0; i < 11; ++i) ios.push_back(timed_io(format::Op::kWrite, 20 + i, 20 + i + 0.1, 125'000'000));
  ios.push_back(timed_io(format::Op::kDiscard, 35, 35.01, 2'063'000'000));
  ios.push_back(timed_io(format::Op::kRead, 59.5, 60, 4096));
  const std::string trace = dir.file("trim.iot");
  write_ios(trace, ios);

  // Scores by hand (busy relative to 1.286 s, bytes to the most of any window):
  //   read+write bytes: 0..20 (1 + 1) / 2 = 1; 20..40 (1.110 / 1.286 + 1375 / 1500) / 2 = 0.890
  //   with discards:    0..20 (1 + 1500 / 3438) / 2 = 0.718; 20..40 (0.863 + 1) / 2 = 0.932
  const std::string out = cut_output(fmt::format("{} -o {} --heavy --length 20s", trace, dir.file("h.iot")));
  auto chosen = chosen_windows(dir.file("h.iot"));
  REQUIRE(chosen.size() == 1);
  CHECK(chosen[0]["start_s"] == 0.0);
  CHECK(chosen[0]["bytes"] == 1'500'000'000u);
  CHECK(std::abs(chosen[0]["busy_s"].get<double>() - 1.286) < 1e-9);
  CHECK(out.find("(score 1.000)") != std::string::npos);

  const std::string with = cut_output(
      fmt::format("{} -o {} --heavy --length 20s --score-discards", trace, dir.file("d.iot")));
  chosen = chosen_windows(dir.file("d.iot"));
  REQUIRE(chosen.size() == 1);
  CHECK(chosen[0]["start_s"] == 20.0);
  CHECK(chosen[0]["bytes"] == 3'438'000'000u);
  CHECK(chosen[0]["discard_bytes"] == 2'063'000'000u);
  CHECK(with.find("(score 0.932)") != std::string::npos);

  // The discard is listed, not scored, when the window is taken for other reasons.
  const std::string two = cut_output(fmt::format("{} -o {} --heavy --length 20s --count 2", trace, dir.file("2.iot")));
  CHECK(two.find("busy 1.110 s, 1375.0 MB read+written, 2063.0 MB discarded, 0.0 MB write-zeroes, 12 IOs") !=
        std::string::npos);
  CHECK(two.find("(score 0.890)") != std::string::npos);
}

TEST_CASE("cut takes windows within the trace, light ones apart from heavy ones, and tells idle time from skipped "
          "trace", "[cut]") {
  TempDir dir;
  SECTION("the MSR sample: 127.234 s, two whole 60 s windows") {
    const auto sample = iotape::test::real_trace("msr-hm0-sample.csv");
    if (!sample) return;
    const std::string trace = dir.file("msr.iot");
    must_run(fmt::format("import msr {} -o {}", *sample, trace));
    const auto truth = windows_of(trace, 60'000'000'000);
    REQUIRE(truth.size() == 3);
    CHECK((truth[0].within && truth[1].within && !truth[2].within));
    REQUIRE(truth[0].score > truth[1].score);

    // --count 3 takes the two whole windows, and says why not three.
    const std::string heavy = cut_output(fmt::format("{} -o {} --heavy --count 3", trace, dir.file("h.iot")));
    const auto chosen = chosen_windows(dir.file("h.iot"));
    REQUIRE(chosen.size() == 2);
    for (const auto& c : chosen) CHECK(c["end_s"].get<double>() <= 127.234);
    CHECK(heavy.find("the last 7.234 s of the trace are shorter than a window") != std::string::npos);
    CHECK(heavy.find("3 windows asked for, 2 taken") != std::string::npos);

    // Light: the active window with the lowest score, not heavy's.
    cut_output(fmt::format("{} -o {} --light", trace, dir.file("l.iot")));
    const auto light = chosen_windows(dir.file("l.iot"));
    REQUIRE(light.size() == 1);
    CHECK(window_index(light[0], 60) == 1);
    // Two light windows would be heavy's two: refused, exit 64.
    const auto r = run(iotape_cmd(fmt::format("cut {} -o {} --light --count 2", trace, dir.file("l2.iot"))));
    CHECK(r.exit_code == 64);
    CHECK(r.output.find("all 2 active windows within the trace are among the 2 a heavy cut takes") !=
          std::string::npos);
    // A trace shorter than one window has no window to take.
    const auto s = run(iotape_cmd(fmt::format("cut {} -o {} --heavy --length 200s", trace, dir.file("s.iot"))));
    CHECK(s.exit_code == 64);
    CHECK(s.output.find("the trace spans 127.234 s, less than one window of 200.000 s") != std::string::npos);
  }

  SECTION("a hand-made trace: the time between two light windows is not idle time") {
    // Five 10 s windows: 0, 2 and 4 heavy (a 100 MB write of 5, 5 and 10 s), 1 and 3 light.
    std::vector<format::Io> ios = {
        timed_io(format::Op::kWrite, 0, 5, 100'000'000),  timed_io(format::Op::kRead, 12, 12.5, 4096),
        timed_io(format::Op::kRead, 15, 15.5, 4096),      timed_io(format::Op::kWrite, 20, 25, 100'000'000),
        timed_io(format::Op::kRead, 33, 33.5, 4096),      timed_io(format::Op::kRead, 34, 34.2, 4096),
        timed_io(format::Op::kWrite, 40, 50, 100'000'000)};
    const std::string trace = dir.file("five.iot");
    write_ios(trace, ios);
    // Heavy's two: 40..50 (busy 10 s) and 0..10 (5 s, before 20..30 on the tie). The two least busy
    // others: 30..40 (0.7 s) and 10..20 (1 s).
    const std::string out =
        cut_output(fmt::format("{} -o {} --light --length 10s --count 2 --max-idle 1s", trace, dir.file("l.iot")));
    const auto chosen = chosen_windows(dir.file("l.iot"));
    REQUIRE(chosen.size() == 2);
    CHECK(window_index(chosen[0], 10) == 1);
    CHECK(window_index(chosen[1], 10) == 3);
    // Output: 12 s -> 0; 15 s after 2.5 s idle -> 1.5 (1.5 s removed); the join: 4.5 s idle ending
    // 10..20 plus 3 s starting 30..40 -> 1 s, 33 s -> 3.0 (6.5 s removed); 34 s -> 4.0.
    // Idle removed: 8 s; the 10 s of trace between the windows (busy 5 s of it) are no idle time.
    CHECK(out.find("4 IOs, 8.000 s of idle time removed (idle gaps capped at 1s); the 10.000 s of trace between the "
                   "windows are left out") != std::string::npos);
    format::TraceReader reader(dir.file("l.iot"));
    std::vector<int64_t> issues;
    format::Io io;
    while (reader.next(io)) issues.push_back(io.issue_ns);
    CHECK(issues == std::vector<int64_t>{0, 1'500'000'000, 3'000'000'000, 4'000'000'000});
  }
}

TEST_CASE("a damaged byte in a cut's output costs one chunk, not the cut", "[cut]") {
  TempDir dir;
  const std::string trace = cloudphysics_trace(dir);
  if (trace.empty()) return;
  // The first 3000 s of the sample: 53,879 IOs (one 361 KB chunk before chunks had caps).
  const std::string out = dir.file("window.iot");
  must_run(fmt::format("cut {} -o {} --window 0..3000", trace, out));
  std::vector<std::pair<uint64_t, uint32_t>> chunks;  // file offset, IOs
  uint64_t ios = 0;
  {
    format::TraceReader reader(out);
    REQUIRE(reader.index());
    for (const auto& e : reader.index()->chunks) chunks.push_back({e.file_offset, e.count}), ios += e.count;
  }
  REQUIRE(ios == 53'879);
  REQUIRE(chunks.size() >= 3);

  // Flip one byte in the middle of the file, inside the payload of the chunk that holds it.
  std::string data = iotape::test::read_file(out);
  const uint64_t middle = data.size() / 2;
  size_t hit = 0;
  while (hit + 1 < chunks.size() && chunks[hit + 1].first <= middle) ++hit;
  const uint64_t at = std::max<uint64_t>(middle, chunks[hit].first + 24 + 1);  // past its 24-byte frame header
  REQUIRE((hit + 1 == chunks.size() || at < chunks[hit + 1].first));
  data[at] = static_cast<char>(data[at] ^ 0x40);
  const std::string bad = dir.file("damaged.iot");
  iotape::test::write_file(bad, data);

  format::TraceReader reader(bad, format::ReaderOptions{.skip_damaged = true});
  uint64_t got = 0;
  for (auto b = reader.next_batch(); !b.empty(); b = reader.next_batch()) got += b.size();
  CHECK(reader.status().damaged);
  CHECK(reader.status().file_offset == chunks[hit].first);
  CHECK(reader.status().skipped_regions == 1);
  // Every chunk but the damaged one; one chunk is at most 16,384 IOs.
  CHECK(got == ios - chunks[hit].second);
  CHECK(chunks[hit].second <= 16'384);
  // `iotape info` says where the damage is and exits 2.
  const auto info = run(iotape_cmd("info " + bad));
  CHECK(info.exit_code == 2);
  CHECK(info.output.find(fmt::format("byte {}", chunks[hit].first)) != std::string::npos);
}

namespace {

nlohmann::json bench(const std::string& test, const std::string& target, const std::string& dir,
                     const std::string& extra) {
  must_run(fmt::format("bench {} --target {} -o {} --allow-write {}", test, target, dir, extra));
  std::ifstream f(dir + "/summary.json");
  return nlohmann::json::parse(f);
}

// `n` 4 KiB reads 8 KiB apart within `size` bytes: no two are adjacent, so
// the block layer merges none and the device's own count is one request per
// IO.
workloads::NextIo spaced_reads(uint32_t n, uint64_t size) {
  return [n, size, next = uint32_t{0}](replay::ReplayIo& io) mutable {
    if (next == n) return false;
    io = {};
    io.op = format::Op::kRead;
    io.offset = uint64_t{next++} * 8192 % size;
    io.length = 4096;
    return true;
  };
}

}  // namespace

TEST_CASE("bench: drive-state tests on a loop device", "[bench]") {
  if (!iotape::test::require_root("loop devices")) return;
  constexpr uint64_t kSize = 64 << 20;
  iotape::test::LoopDevice loop(kSize);
  TempDir dir;

  SECTION("nothing is written without --allow-write") {
    const auto r = run(iotape_cmd(fmt::format("bench trim --target {} -o {}", loop.path(), dir.file("x"))));
    CHECK(r.exit_code != 0);
    CHECK(r.output.find("--allow-write") != std::string::npos);
  }

  SECTION("a loop device has no poll queues: --iopoll is refused before anything is written") {
    const auto before = iotape::test::block_stat(loop.name());
    const auto b = run(iotape_cmd(
        fmt::format("bench consistency --target {} -o {} --allow-write --iopoll", loop.path(), dir.file("b"))));
    const auto r = run(
        iotape_cmd(fmt::format("review --target {} -o {} --allow-write --quick --iopoll", loop.path(), dir.file("r"))));
    INFO(b.output << r.output);
    CHECK(b.exit_code == 64);
    CHECK(b.output.find("queue/io_poll is not 1") != std::string::npos);
    CHECK(r.exit_code == 64);
    CHECK(r.output.find("queue/io_poll is not 1") != std::string::npos);
    CHECK(iotape::test::block_stat(loop.name()).write_ios == before.write_ios);
  }

  SECTION("precondition fills the capacity, then random writes until steady state") {
    const auto s = bench("precondition", loop.path(), dir.file("pre"), "--duration 12s --round 1s");
    CHECK(s["fill"]["bytes_written"] == kSize);
    CHECK(analyse_file(s["fill"]["trace"]).op(format::Op::kWrite).bytes == kSize);
    const auto rounds = s["random"]["iops_per_round"];
    CHECK(s["steady_state"]["rounds"] == rounds.size());
    if (s["steady_state"]["reached"].get<bool>()) {
      std::vector<double> last;
      for (size_t i = rounds.size() - 5; i < rounds.size(); ++i) last.push_back(rounds[i]);
      const double mean = (last[0] + last[1] + last[2] + last[3] + last[4]) / 5;
      CHECK(*std::max_element(last.begin(), last.end()) - *std::min_element(last.begin(), last.end()) <= 0.2 * mean);
    } else {
      CHECK(rounds.size() >= 10);  // it kept trying for the whole duration
    }
  }

  SECTION("consistency has one IOPS sample per second, and the samples match the result trace") {
    const auto s = bench("consistency", loop.path(), dir.file("cons"), "--duration 4s --span-pct 75");
    CHECK(s["fill"]["bytes_written"] == kSize);
    const auto iops = s["random"]["iops_per_second"];
    CHECK(iops.size() == 4);
    const auto r = analyse_file(s["random"]["trace"]);
    uint64_t sum = 0;
    for (const auto& v : iops) {
      CHECK(v.get<uint64_t>() > 0);
      sum += v.get<uint64_t>();
    }
    CHECK(sum <= r.ios);
    CHECK(r.sizes.buckets()[1] == r.ios);  // all 4 KiB
    uint64_t max_end = 0;
    format::TraceReader reader(s["random"]["trace"].get<std::string>());
    format::Io io;
    while (reader.next(io)) max_end = std::max(max_end, io.end());
    CHECK(max_end <= kSize * 3 / 4);
    CHECK(s["steady_window"]["mean_iops"].get<double>() > 0);
  }

  SECTION("trim runs three sequential-write phases around dirtying and a discard") {
    const auto s = bench("trim", loop.path(), dir.file("trim"), "--duration 2s");
    const auto phases = s["phases"];
    REQUIRE(phases.size() == 3);
    CHECK(phases[0]["name"] == "clean");
    CHECK(phases[1]["name"] == "dirty");
    CHECK(phases[2]["name"] == "trimmed");
    for (const auto& p : phases) {
      CHECK(p["bytes_written"] == kSize);
      CHECK(p["MBps"].get<double>() > 0);
    }
    CHECK(s["dirtying"]["iops"].get<double>() > 0);

    // The compare page of the three phases renders.
    const std::string html = dir.file("trim.html");
    must_run(fmt::format("compare {} {} {} --html {}", phases[0]["trace"].get<std::string>(),
                         phases[1]["trace"].get<std::string>(), phases[2]["trace"].get<std::string>(), html));
    const std::string png = dir.file("trim.png");
    run(fmt::format("chromium --headless --no-sandbox --disable-gpu --screenshot={} --window-size=1200,1600 file://{}",
                    png, html));
    std::ifstream f(png, std::ios::binary);
    CHECK(f.good());
  }

  SECTION("fresh-vs-used replays the workload on a discarded and on a filled target") {
    const auto s = bench("fresh-vs-used", loop.path(), dir.file("fvu"), "--workload storage-light --workload-ios 5000");
    CHECK(s["fresh"]["ios"] == 5000);
    CHECK(s["used"]["ios"] == 5000);
    CHECK(s["fresh"]["errors"] == 0);
    CHECK(s["fill"]["bytes_written"] == kSize);
    CHECK(s["used"]["busy_s"].get<double>() > 0);
  }
}

TEST_CASE("bench: SNIA PTS steady-state rule", "[bench]") {
  const std::vector<double> flat = {100, 105, 95, 100, 100};
  CHECK(workloads::steady_state(flat).reached);
  const std::vector<double> wide = {80, 120, 100, 100, 100};  // range 40 > 20% of 100
  CHECK_FALSE(workloads::steady_state(wide).reached);
  const std::vector<double> rising = {92, 96, 100, 104, 108};  // range 16 ok, slope 4 x 4 = 16 > 10
  const auto r = workloads::steady_state(rising);
  CHECK_FALSE(r.reached);
  CHECK(r.excursion == Approx(16));
}

TEST_CASE("closed loops on two threads keep the queue depth in total and issue every IO once", "[bench]") {
  if (!iotape::test::require_root("loop devices")) return;
  constexpr uint64_t kSize = 256 << 20;
  constexpr uint32_t kIos = 20000, kQd = 8;
  iotape::test::LoopDevice loop(kSize);
  TempDir dir;
  std::vector<replay::Target> targets;
  targets.push_back(replay::open_target(loop.path(), false, false));
  const workloads::NextIo reads = spaced_reads(kIos, kSize);
  const auto before = iotape::test::block_stat(loop.name());
  workloads::PhaseTrace trace(dir.file("two.iot"), targets[0], "test", "reads", "loop");
  const workloads::PhaseStats s =
      workloads::run_closed_loop(targets, kQd, 4096, reads, INT64_MAX / 2, &trace, {}, nullptr, 2);
  trace.close();
  const auto after = iotape::test::block_stat(loop.name());
  CHECK(s.issue_threads == 2);
  CHECK(s.ios == kIos);
  CHECK(after.read_ios - before.read_ios == kIos);

  // Every offset once; at no time more than kQd IOs between issue and completion.
  std::vector<uint64_t> offsets;
  std::vector<std::pair<int64_t, int>> edges;
  format::TraceReader reader(dir.file("two.iot"));
  for (format::Io io; reader.next(io);) {
    offsets.push_back(io.offset);
    edges.emplace_back(io.issue_ns, 1);
    edges.emplace_back(io.complete_ns, -1);
  }
  std::sort(offsets.begin(), offsets.end());
  CHECK(offsets.size() == kIos);
  CHECK(std::adjacent_find(offsets.begin(), offsets.end()) == offsets.end());
  std::sort(edges.begin(), edges.end());  // a completion before an issue at the same time
  int depth = 0, deepest = 0;
  for (const auto& [t, d] : edges) deepest = std::max(deepest, depth += d);
  CHECK(deepest <= static_cast<int>(kQd));
  CHECK(deepest > 1);

  // The same with a kernel submission thread per ring (SQPOLL).
  const auto before_sqpoll = iotape::test::block_stat(loop.name());
  const workloads::PhaseStats sq = workloads::run_closed_loop(targets, kQd, 4096, spaced_reads(kIos, kSize),
                                                              INT64_MAX / 2, nullptr, {}, nullptr, 2, {.sqpoll = true});
  CHECK(sq.ios == kIos);
  CHECK(iotape::test::block_stat(loop.name()).read_ios - before_sqpoll.read_ios == kIos);

  // The default: one thread per 8 IOs in flight, up to the CPUs; a request, up to the depth.
  CHECK(workloads::closed_loop_threads(0, 1) == 1);
  CHECK(workloads::closed_loop_threads(0, 8) == 1);
  CHECK(workloads::closed_loop_threads(0, 16) == std::min(2u, std::thread::hardware_concurrency()));
  CHECK(workloads::closed_loop_threads(4, 2) == 2);
}

TEST_CASE("cut measures at most 2^20 windows: an IO beyond is named, and nothing grows with it", "[cut]") {
  TempDir dir;
  // An IO that completes 2.2 years after its issue (a made-up trace: one
  // completing 127 years after made the cut, and the page's windows, take
  // all memory, a window at a time).
  std::vector<format::Io> ios = {timed_io(format::Op::kRead, 0, 1, 4096), timed_io(format::Op::kRead, 1, 2, 4096)};
  ios[1].complete_ns = int64_t{70'000'000} * 1'000'000'000;
  const std::string trace = dir.file("odd.iot");
  write_ios(trace, ios);
  const auto r = run(iotape_cmd("cut " + trace + " --heavy -o " + dir.file("h.iot")));
  INFO(r.output);
  CHECK(r.exit_code == 64);
  CHECK(r.output.find("IO 1 reaches 70000000 s from the first IO's issue, beyond 1048576 windows of 60.000 s: give "
                      "a longer --length") != std::string::npos);
  // The page leaves the windows out and says why.
  const auto page = run(iotape_cmd("report " + trace + " --html " + dir.file("odd.html")));
  INFO(page.output);
  CHECK(page.exit_code == 0);
  std::ifstream in(dir.file("odd.html"));
  const std::string html((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(html.find("beyond 1048576 windows") != std::string::npos);
}

// Exports are checked by the tools that read them: blkparse, btt and fio.
#include <catch2/catch.hpp>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <sstream>

#include "format/reader.h"
#include "format/writer.h"
#include "tests/test_support.h"

using namespace iotape;
using iotape::test::run;
using iotape::test::TempDir;

namespace {

std::string iotape_cmd() { return iotape::test::iotape_binary(); }

std::vector<format::Io> read_ios(const std::string& path, std::vector<std::string>* comms) {
  format::TraceReader r(path);
  std::vector<format::Io> out;
  format::Io io;
  while (r.next(io)) {
    out.push_back(io);
    comms->emplace_back(io.comm);
  }
  for (size_t i = 0; i < out.size(); ++i) out[i].comm = (*comms)[i];
  return out;
}

// The IOs are the same, their times relative to the first queue time (as
// blktrace's are).
void require_same_ios(const std::vector<format::Io>& a, const std::vector<format::Io>& b) {
  REQUIRE(a.size() == b.size());
  const int64_t a0 = a[0].queue_ns, b0 = b[0].queue_ns;
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("IO " << i);
    REQUIRE(a[i].issue_ns - a0 == b[i].issue_ns - b0);
    REQUIRE(a[i].queue_ns - a0 == b[i].queue_ns - b0);
    REQUIRE(a[i].complete_ns - a0 == b[i].complete_ns - b0);
    REQUIRE(a[i].offset == b[i].offset);
    REQUIRE(a[i].length == b[i].length);
    REQUIRE(a[i].op == b[i].op);
    REQUIRE(a[i].flags == b[i].flags);
    REQUIRE(a[i].pid == b[i].pid);
    REQUIRE(a[i].comm == b[i].comm);
  }
}

// blkparse's closing "Total" section: completed IOs and KiB per direction.
struct BlkparseTotals {
  uint64_t reads_completed = 0, read_kib = 0, writes_completed = 0, write_kib = 0;
};
BlkparseTotals blkparse_totals(const std::string& text) {
  BlkparseTotals t;
  std::smatch m;
  const std::regex re(R"(Reads Completed:\s+(\d+),\s+(\d+)KiB\s+Writes Completed:\s+(\d+),\s+(\d+)KiB)");
  // The last match is the all-CPU total.
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it) {
    t = {std::stoull((*it)[1]), std::stoull((*it)[2]), std::stoull((*it)[3]), std::stoull((*it)[4])};
  }
  return t;
}

// A trace exercising reads, writes, queue times and several processes.
void write_synthetic(const std::string& path, size_t n) {
  v1::TraceHeader h;
  auto* d = h.add_devices();
  d->set_major(259);
  d->set_minor(3);
  d->set_name("nvme1n1");
  format::TraceWriter w(path, h);
  static const char* comms[] = {"fio", "postgres", "kworker/0:1H"};
  int64_t t = 5'000'000;
  for (size_t i = 0; i < n; ++i) {
    format::Io io;
    t += 30'000 + static_cast<int64_t>(i % 7) * 1000;
    io.queue_ns = t - 4000 - static_cast<int64_t>(i % 5) * 100;
    io.issue_ns = t;
    io.complete_ns = t + 80'000 + static_cast<int64_t>(i % 11) * 3000;
    io.offset = (i * 7919 % 100000) * 4096;
    io.length = 4096u << (i % 4);
    io.op = i % 3 ? format::Op::kRead : format::Op::kWrite;
    io.flags = io.op == format::Op::kWrite ? format::flag::kSync : 0;
    io.pid = 100 + static_cast<uint32_t>(i % 3);
    io.comm = comms[i % 3];
    io.cpu = static_cast<int32_t>(i % 2);
    w.append(io);
  }
  w.close();
}

// Imports the real blktrace sample (both per-CPU files) into `trace`; returns
// the files' prefix as blkparse takes it, or nullopt when they are absent.
std::optional<std::string> import_real_sample(const std::string& trace) {
  auto part0 = iotape::test::real_trace("lvm-sda.blktrace.0");
  auto part1 = iotape::test::real_trace("lvm-sda.blktrace.1");
  if (!part0 || !part1) return std::nullopt;
  REQUIRE(run(iotape_cmd() + " import blktrace " + *part0 + " " + *part1 + " -o " + trace).exit_code == 0);
  return part0->substr(0, part0->rfind(".blktrace."));
}

}  // namespace

TEST_CASE("blkparse reads the blktrace export of the real sample with the same counts") {
  TempDir dir;
  const auto prefix = import_real_sample(dir.file("t.iot"));
  if (!prefix) return;
  REQUIRE(run(iotape_cmd() + " export blktrace " + dir.file("t.iot") + " -o " + dir.file("t.bin")).exit_code == 0);
  auto ours = run("blkparse -i - < " + dir.file("t.bin"));
  REQUIRE(ours.exit_code == 0);
  // The original, as blkparse reads it: only 8,0's completions are IOs iotape keeps.
  auto original = run("cd " + dir.path() + " && blkparse -i " + *prefix +
                      " -a complete -f '%M,%m %a %n\\n' | grep '^8,0 C' | awk '{n++; s+=$3} END {print n, s*512}'");
  REQUIRE(original.exit_code == 0);
  std::istringstream os(original.output);
  uint64_t orig_ios = 0, orig_bytes = 0;
  os >> orig_ios >> orig_bytes;
  REQUIRE(orig_ios == 109);
  const auto t = blkparse_totals(ours.output);
  CHECK(t.writes_completed == orig_ios);
  CHECK(t.write_kib == orig_bytes / 1024);  // blkparse rounds KiB down
  CHECK(t.reads_completed == 0);

  // Our blkparse-text export is what blkparse itself prints for the binary.
  auto text = run("{ " + iotape_cmd() + " export blkparse " + dir.file("t.iot") + " 2>/dev/null; }");
  REQUIRE(text.exit_code == 0);
  const std::string events = ours.output.substr(0, ours.output.find("CPU"));
  CHECK(text.output == events);
}

namespace {

// btt's D2C row ("ALL" devices) for the blktrace export of `trace`: the
// average in seconds, printed to the nanosecond, and the IO count.
std::pair<double, uint64_t> btt_d2c(const TempDir& dir, const std::string& trace) {
  REQUIRE(run(iotape_cmd() + " export blktrace " + trace + " -o " + dir.file("btt.bin")).exit_code == 0);
  auto btt = run("cd " + dir.path() + " && btt -i btt.bin");
  REQUIRE(btt.exit_code == 0);
  std::smatch m;
  REQUIRE(std::regex_search(btt.output, m, std::regex(R"(D2C\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\d+))")));
  return {std::stod(m[2]), std::stoull(m[4])};
}

// `iotape report --json`'s device-to-completion latency of reads and writes.
nlohmann::json report_d2c(const std::string& trace) {
  auto r = run("{ " + iotape_cmd() + " report --json " + trace + " 2>/dev/null; }");
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(r.output)["latency_ns"]["all"];
}

// btt's D2C average is iotape report's mean latency (returned): both round
// the same mean to the nanosecond, so they differ by at most one.
nlohmann::json require_btt_d2c_is_report(const TempDir& dir, const std::string& trace) {
  const auto [btt_avg_s, btt_ios] = btt_d2c(dir, trace);
  const auto report = report_d2c(trace);
  INFO("btt " << btt_avg_s << " s over " << btt_ios << " IOs; iotape report " << report.dump());
  CHECK(btt_ios == report["count"].get<uint64_t>());
  CHECK(std::abs(btt_avg_s * 1e9 - report["mean"].get<double>()) <= 1.0);
  return report;
}

}  // namespace

TEST_CASE("btt's D2C average matches iotape report's latency mean") {
  SECTION("synthetic trace") {
    TempDir dir;
    write_synthetic(dir.file("s.iot"), 2000);
    const auto report = require_btt_d2c_is_report(dir, dir.file("s.iot"));
    CHECK(report["count"] == 2000);
    // And both are the mean of (completion - issue) of the IOs written.
    double sum = 0;
    for (size_t i = 0; i < 2000; ++i) sum += 80'000 + static_cast<double>(i % 11) * 3000;
    CHECK(std::abs(report["mean"].get<double>() - sum / 2000) <= 0.5);
  }
  SECTION("the real blktrace sample") {
    TempDir dir;
    if (!import_real_sample(dir.file("t.iot"))) return;
    // btt reads the export: on the original files it also counts the 4 bios merged into other requests.
    CHECK(require_btt_d2c_is_report(dir, dir.file("t.iot"))["count"] == 109);
  }
}

TEST_CASE("blkparse and blktrace exports name every process while many events are pending") {
  // Each IO is queued a second before its issue, so the Q and D events of all
  // of them are pending while 300 names are interned. glibc refills freed
  // memory here (perturb, no thread cache): a name read from storage that
  // has moved prints as junk.
  TempDir dir;
  {
    v1::TraceHeader h;
    h.add_devices()->set_major(8);
    format::TraceWriter w(dir.file("p.iot"), h);
    for (int i = 0; i < 300; ++i) {
      const std::string name = "p" + std::to_string(i);
      format::Io io;
      io.issue_ns = 2'000'000'000 + i * 1000;
      io.queue_ns = io.issue_ns - 1'000'000'000;
      io.complete_ns = io.issue_ns + 500;
      io.op = format::Op::kWrite;
      io.offset = static_cast<uint64_t>(i) * 4096;
      io.length = 4096;
      io.pid = 1000 + static_cast<uint32_t>(i);
      io.comm = name;
      w.append(io);
    }
    w.close();
  }
  const std::string env = "GLIBC_TUNABLES=glibc.malloc.tcache_count=0:glibc.malloc.perturb=165 ";
  const auto text = run("{ " + env + iotape_cmd() + " export blkparse " + dir.file("p.iot") + " 2>/dev/null; }");
  REQUIRE(text.exit_code == 0);
  REQUIRE(run(env + iotape_cmd() + " export blktrace " + dir.file("p.iot") + " -o " + dir.file("p.bin")).exit_code ==
          0);
  const auto parsed = run("blkparse -i - < " + dir.file("p.bin"));
  REQUIRE(parsed.exit_code == 0);
  const std::regex line(R"(\s+(\d+)\s+([QD])\s+W \d+ \+ 8 \[(.*)\])");
  for (const std::string& out : {text.output, parsed.output}) {
    size_t named = 0;
    for (auto it = std::sregex_iterator(out.begin(), out.end(), line); it != std::sregex_iterator(); ++it) {
      INFO((*it)[0]);
      CHECK((*it)[3] == "p" + std::to_string(std::stoul((*it)[1]) - 1000));
      ++named;
    }
    CHECK(named == 600);
  }
}

TEST_CASE("blktrace export round-trips through the blktrace importer") {
  TempDir dir;
  write_synthetic(dir.file("s.iot"), 3000);
  REQUIRE(run(iotape_cmd() + " export blktrace " + dir.file("s.iot") + " -o " + dir.file("s.blktrace.0")).exit_code ==
          0);
  REQUIRE(run(iotape_cmd() + " import blktrace " + dir.file("s.blktrace.0") + " -o " + dir.file("back.iot"))
              .exit_code == 0);
  std::vector<std::string> c1, c2;
  const auto a = read_ios(dir.file("s.iot"), &c1);
  const auto b = read_ios(dir.file("back.iot"), &c2);
  require_same_ios(a, b);
  // What the format drops: cgroup and source index (none here), device naming.
}

TEST_CASE("fio replays the fio-iolog export of the MSR sample with iotape's counts") {
  auto sample = iotape::test::real_trace("msr-hm0-sample.csv");
  if (!sample) return;
  if (!iotape::test::require_root("attach a loop device")) return;
  TempDir dir;
  REQUIRE(run(iotape_cmd() + " import msr " + *sample + " -o " + dir.file("m.iot")).exit_code == 0);
  REQUIRE(run(iotape_cmd() + " export fio-iolog " + dir.file("m.iot") + " -o " + dir.file("m.log")).exit_code == 0);
  auto info = nlohmann::json::parse(run(iotape_cmd() + " info --json " + dir.file("m.iot")).output);
  // Offsets reach ~12 GB: a sparse 16 GiB tmpfs file holds them.
  iotape::test::LoopDevice loop(16ull << 30);
  auto fio = run("fio --name=replay --read_iolog=" + dir.file("m.log") + " --replay_redirect=" + loop.path() +
                 " --replay_no_stall=1 --ioengine=io_uring --direct=1 --output-format=json");
  INFO(fio.output.substr(0, 2000));
  REQUIRE(fio.exit_code == 0);
  auto j = nlohmann::json::parse(fio.output.substr(fio.output.find('{')));
  const auto& job = j["jobs"][0];
  CHECK(job["read"]["total_ios"].get<uint64_t>() == info["reads"].get<uint64_t>());
  CHECK(job["write"]["total_ios"].get<uint64_t>() == info["writes"].get<uint64_t>());
  CHECK(job["read"]["io_bytes"].get<uint64_t>() == info["bytes_read"].get<uint64_t>());
  CHECK(job["write"]["io_bytes"].get<uint64_t>() == info["bytes_written"].get<uint64_t>());
  CHECK(info["reads"].get<uint64_t>() == 508);
}

TEST_CASE("blkparse export of flushes, FUA, discards and zero-length IOs is blkparse's and imports as the binary") {
  TempDir dir;
  {
    v1::TraceHeader h;
    auto* d = h.add_devices();
    d->set_major(8);
    d->set_minor(16);
    format::TraceWriter w(dir.file("f.iot"), h);
    struct Spec {
      format::Op op;
      uint32_t flags;
      uint64_t offset, length;
    };
    const Spec specs[] = {
        {format::Op::kWrite, format::flag::kSync, 4096, 4096},
        {format::Op::kFlush, format::flag::kSync, 0, 0},                                  // a flush
        {format::Op::kWrite, format::flag::kPreflush | format::flag::kSync, 8192, 8192},  // a preflush write
        {format::Op::kWrite, format::flag::kFua | format::flag::kSync, 16384, 4096},      // a FUA write
        {format::Op::kDiscard, 0, 1 << 20, 1 << 20},                                      // a discard
        {format::Op::kFlush, format::flag::kFua, 1 << 22, 0},  // zero-length, not at sector 0
        {format::Op::kRead, 0, 65536, 0},                      // zero-length read: "N"
    };
    int64_t t = 1'000'000;
    for (const Spec& s : specs) {
      format::Io io;
      io.queue_ns = t;
      io.issue_ns = t + 1000;
      io.complete_ns = t + 50'000;
      t += 10'000;
      io.op = s.op;
      io.flags = s.flags;
      io.offset = s.offset;
      io.length = s.length;
      io.pid = 42;
      io.comm = "jbd2/sdb1-8";
      io.cpu = 1;
      w.append(io);
    }
    w.close();
  }
  REQUIRE(run(iotape_cmd() + " export blktrace " + dir.file("f.iot") + " -o " + dir.file("f.bin")).exit_code == 0);
  REQUIRE(run(iotape_cmd() + " export blkparse " + dir.file("f.iot") + " -o " + dir.file("f.txt")).exit_code == 0);
  const auto parsed = run("blkparse -i - < " + dir.file("f.bin"));
  REQUIRE(parsed.exit_code == 0);
  const std::string text = test::read_file(dir.file("f.txt"));
  // (a) byte for byte what blkparse prints for the binary export.
  CHECK(text == parsed.output.substr(0, parsed.output.find("CPU")));
  CHECK(text.find(" Q FWS [jbd2/sdb1-8]\n") != std::string::npos);
  CHECK(text.find(" C FWS 0 [0]\n") != std::string::npos);

  // (b) importing the text gives the IOs importing the binary gives.
  REQUIRE(run(iotape_cmd() + " import blkparse " + dir.file("f.txt") + " -o " + dir.file("text.iot")).exit_code == 0);
  REQUIRE(run(iotape_cmd() + " import blktrace " + dir.file("f.bin") + " -o " + dir.file("bin.iot")).exit_code == 0);
  std::vector<std::string> c1, c2;
  const auto a = read_ios(dir.file("text.iot"), &c1);
  const auto b = read_ios(dir.file("bin.iot"), &c2);
  REQUIRE(a.size() == 7);
  require_same_ios(a, b);
  CHECK(a[1].op == format::Op::kFlush);
  CHECK(a[2].flags == (format::flag::kPreflush | format::flag::kSync));
  CHECK(a[3].flags == (format::flag::kFua | format::flag::kSync));
  CHECK(a[4].op == format::Op::kDiscard);
  CHECK(a[5].offset == 1u << 22);
}

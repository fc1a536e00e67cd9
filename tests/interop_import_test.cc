// Importers of the common trace formats against independent truth: samples
// written here from each format's published column definitions with
// hand-computed IOs, blkparse's own text of the real blktrace sample against
// the binary import, round trips through iotape's exporters, fio's own iolog
// against fio's own counts, compressed copies made by the command-line tools,
// and malformed input that must fail with file and line.
#include <catch2/catch.hpp>

#include <algorithm>
#include <iterator>
#include <map>
#include <random>
#include <tuple>

#include <nlohmann/json.hpp>

#include "blockevents/sorted_spill.h"
#include "convert/import/format_detect.h"
#include "convert/import/importer.h"
#include "format/error.h"
#include "format/reader.h"
#include "format/writer.h"
#include "tests/blktrace_records.h"
#include "tests/import_errors.h"
#include "tests/test_support.h"

using namespace iotape;
using iotape::test::read_file;
using iotape::test::require_import_error;
using iotape::test::TempDir;
using iotape::test::write_file;
using iotape::test::run;
namespace blk = iotape::test::blk;

namespace {

// An IO with its device named and its process name owned.
struct Row {
  std::string device{};
  int64_t issue_ns = 0;
  uint64_t offset = 0;
  uint64_t length = 0;
  format::Op op = format::Op::kRead;
  int64_t complete_ns = format::kNoTime;
  int64_t queue_ns = format::kNoTime;
  uint32_t flags = 0;
  int32_t status = 0;
  uint32_t pid = 0;
  std::string comm{};
  uint64_t cgroup = 0;
  int32_t cpu = -1;
  int64_t source_index = -1;
  uint32_t device_index = 0;

  auto tie() const {
    return std::tie(issue_ns, device, offset, length, op, complete_ns, queue_ns, flags, status, pid, comm, cgroup,
                    cpu, source_index, device_index);
  }
  bool operator==(const Row& o) const { return tie() == o.tie(); }
};

std::ostream& operator<<(std::ostream& os, const Row& r) {
  return os << "{" << r.device << "#" << r.device_index << " i=" << r.issue_ns << " q=" << r.queue_ns
            << " c=" << r.complete_ns << " off=" << r.offset << " len=" << r.length << " " << format::op_name(r.op)
            << " flags=" << r.flags << " status=" << r.status << " pid=" << r.pid << " comm=" << r.comm
            << " cgroup=" << r.cgroup << " cpu=" << r.cpu << " src=" << r.source_index << "}";
}

// Only the fields a format carries, the rest left at their defaults.
Row io_row(std::string device, int64_t issue, format::Op op, uint64_t offset, uint64_t length,
           int64_t complete = format::kNoTime) {
  Row r;
  r.device = std::move(device);
  r.issue_ns = issue;
  r.op = op;
  r.offset = offset;
  r.length = length;
  r.complete_ns = complete;
  return r;
}

std::vector<Row> read_rows(const std::string& path, v1::TraceHeader* header = nullptr) {
  format::TraceReader reader(path);
  std::vector<Row> rows;
  format::Io io;
  while (reader.next(io)) {
    const auto& devices = reader.header().devices();
    REQUIRE(io.device < static_cast<uint32_t>(devices.size()));
    rows.push_back({devices[static_cast<int>(io.device)].name(), io.issue_ns, io.offset, io.length, io.op,
                    io.complete_ns, io.queue_ns, io.flags, io.status, io.pid, std::string(io.comm), io.cgroup,
                    io.cpu, io.source_index, io.device});
  }
  REQUIRE_FALSE(reader.status().damaged);
  if (header) *header = reader.header();
  return rows;
}

struct Imported {
  blockevents::ImportReport report;
  std::vector<Row> rows;
};

// Imports as `iotape import` does (a reorder window unless the importer sorts)
// and reads the trace back, in trace order.
Imported import_rows(const std::string& format, const std::vector<std::string>& inputs, const std::string& out,
                     const blockevents::ImportOptions& options = {}) {
  const convert::Importer* imp = convert::find_importer(format);
  REQUIRE(imp != nullptr);
  format::WriterOptions wo;
  wo.reorder_window_ns = imp->sorted_output ? 0 : 60'000'000'000;
  Imported r;
  {
    format::TraceWriter w(out, {}, wo);
    r.report = imp->run(inputs, w, options);
    w.close();
  }
  r.rows = read_rows(out);
  return r;
}

// Row by row, in order; the first difference is shown.
void require_rows(const std::vector<Row>& got, const std::vector<Row>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("row " << i);
    REQUIRE(got[i] == want[i]);
  }
}

// Importing `bytes` as `format` must throw a TraceError naming the file and
// line (":LINE:") and saying `why`.
void require_error(const std::string& format, const std::string& bytes, int line, const std::string& why) {
  require_import_error(format, bytes, ":" + std::to_string(line) + ": ", why);
}

std::string iotape_cmd() { return test::iotape_binary(); }

constexpr int64_t kSecond = 1'000'000'000;

// ---- samples of each format, from the published column definitions ----------

// SYSTOR'17: Timestamp,Response,IOType,LUN,Offset,Size; unsorted; IOType may be blank.
const std::string kSystor =
    "Timestamp,Response,IOType,LUN,Offset,Size\n"
    "1450535590.151316,0.000494,R,1,12314624,4096\n"
    "1450535590.150001,0.001,W,2,0,8192\n"
    "1450535590.152,,R,1,4096,512\n"
    "1450535590.153,0.0002,,1,0,4096\n";
std::vector<Row> systor_rows() {
  return {io_row("2", 1450535590150001000, format::Op::kWrite, 0, 8192, 1450535590151001000),
          io_row("1", 1450535590151316000, format::Op::kRead, 12314624, 4096, 1450535590151810000),
          io_row("1", 1450535590152000000, format::Op::kRead, 4096, 512)};
}

// Tencent CBS: Timestamp,Offset,Size,IOType,VolumeID; sectors; unsorted.
const std::string kTencent =
    "1538323200,2048,8,0,1283\n"
    "1538323199,100,16,1,1283\n"
    "1538323200,0,1,1,7\n";
std::vector<Row> tencent_rows() {
  return {io_row("1283", 1538323199 * kSecond, format::Op::kWrite, 51200, 8192),
          io_row("1283", 1538323200 * kSecond, format::Op::kRead, 1048576, 4096),
          io_row("7", 1538323200 * kSecond, format::Op::kWrite, 0, 512)};
}

// Alibaba 2020: device_id,opcode,offset,length,timestamp (us).
const std::string kAlibaba =
    "0,R,126703644672,4096,1577808144249644\n"
    "3,W,0,512,1577808144249000\n";
std::vector<Row> alibaba_rows() {
  return {io_row("3", 1577808144249000000, format::Op::kWrite, 0, 512),
          io_row("0", 1577808144249644000, format::Op::kRead, 126703644672, 4096)};
}

// SPC: ASU,LBA,Size,Opcode,Timestamp[,optional]; LBA in 512 B blocks.
const std::string kSpc =
    "0,303567,3584,w,0.000000\n"
    "1,55590,3072,r,0.026214,extra\n"
    "0,303574,3584,W,0.0262\n";
std::vector<Row> spc_rows() {
  return {io_row("0", 0, format::Op::kWrite, 303567ull * 512, 3584),
          io_row("0", 26'200'000, format::Op::kWrite, 303574ull * 512, 3584),
          io_row("1", 26'214'000, format::Op::kRead, 55590ull * 512, 3072)};
}

// DiskSim ASCII: time_ms devno blkno size_blocks flags (bit 0 = read).
const std::string kDisksim =
    "0.000000 0 1000 8 1\n"
    "1.5   1   2000  16  0\n"
    "12.25\t0\t8\t1\t3\n";
std::vector<Row> disksim_rows() {
  return {io_row("0", 0, format::Op::kRead, 512000, 4096), io_row("1", 1'500'000, format::Op::kWrite, 1024000, 8192),
          io_row("0", 12'250'000, format::Op::kRead, 4096, 512)};
}

// fio iolog v2: no times; `wait` waits until OFFSET ms since the job start.
const std::string kFioV2 =
    "fio version 2 iolog\n"
    "/dev/sdb add\n"
    "/dev/sdb open\n"
    "/dev/sdb write 4096 8192\n"
    "/dev/sdb wait 15 0\n"
    "/dev/sdb read 0 4096\n"
    "/dev/sdb trim 8192 4096\n"
    "/dev/sdb sync 0 0\n"
    "/dev/sdb close\n";
std::vector<Row> fio_v2_rows() {
  return {io_row("/dev/sdb", 0, format::Op::kWrite, 4096, 8192),
          io_row("/dev/sdb", 15'000'000, format::Op::kRead, 0, 4096),
          io_row("/dev/sdb", 15'000'000, format::Op::kDiscard, 8192, 4096),
          io_row("/dev/sdb", 15'000'000, format::Op::kFlush, 0, 0)};
}

// fio iolog v3: TIME (us since the log start) FILE ACTION [OFFSET LENGTH].
const std::string kFioV3 =
    "fio version 3 iolog\n"
    "0 /dev/a add\n"
    "0 /dev/a open\n"
    "5 /dev/b add\n"
    "5 /dev/b open\n"
    "10 /dev/a read 0 4096\n"
    "250 /dev/b write 8192 512\n"
    "1000 /dev/a datasync 0 0\n"
    "1200 /dev/a close\n";
std::vector<Row> fio_v3_rows() {
  auto a = io_row("/dev/a", 10'000, format::Op::kRead, 0, 4096);
  auto b = io_row("/dev/b", 250'000, format::Op::kWrite, 8192, 512);
  auto c = io_row("/dev/a", 1'000'000, format::Op::kFlush, 0, 0);
  b.device_index = 1;
  return {a, b, c};
}

// Device indexes in the order the sample's volumes first appear.
std::vector<Row> with_indexes(std::vector<Row> rows, const std::vector<std::string>& first_seen) {
  for (Row& r : rows)
    r.device_index = static_cast<uint32_t>(std::find(first_seen.begin(), first_seen.end(), r.device) -
                                           first_seen.begin());
  return rows;
}

struct Sample {
  std::string format;
  std::string text;
  std::vector<Row> rows;
};

std::vector<Sample> samples() {
  return {{"systor", kSystor, with_indexes(systor_rows(), {"1", "2"})},
          {"tencent", kTencent, with_indexes(tencent_rows(), {"1283", "7"})},
          {"alibaba", kAlibaba, with_indexes(alibaba_rows(), {"0", "3"})},
          {"spc", kSpc, with_indexes(spc_rows(), {"0", "1"})},
          {"disksim", kDisksim, with_indexes(disksim_rows(), {"0", "1"})},
          {"fio-iolog", kFioV2, fio_v2_rows()},
          {"fio-iolog", kFioV3, fio_v3_rows()}};
}

}  // namespace

TEST_CASE("interop: each format's sample imports to the hand-computed IOs", "[interop]") {
  for (const Sample& s : samples()) {
    DYNAMIC_SECTION(s.format << " " << s.text.substr(0, 20)) {
      TempDir dir;
      write_file(dir.file("in"), s.text);
      const auto got = import_rows(s.format, {dir.file("in")}, dir.file("t.iot"));
      require_rows(got.rows, s.rows);
      CHECK(got.report.ios == s.rows.size());
    }
  }
}

TEST_CASE("interop: systor counts the blank IOType it skips, the header metadata says so", "[interop][systor]") {
  TempDir dir;
  write_file(dir.file("in.csv"), kSystor);
  const auto got = import_rows("systor", {dir.file("in.csv")}, dir.file("t.iot"));
  CHECK(got.report.records == 4);
  CHECK(got.report.skipped == 1);
  CHECK(got.report.skipped_by_reason.at("blank-iotype") == 1);

  REQUIRE(run(iotape_cmd() + " import systor " + dir.file("in.csv") + " -o " + dir.file("cli.iot")).exit_code == 0);
  v1::TraceHeader h;
  read_rows(dir.file("cli.iot"), &h);
  CHECK(h.metadata().at("import.skipped") == "1");
  CHECK(h.metadata().at("import.skipped.blank-iotype") == "1");
  CHECK(h.clock() == v1::CLOCK_DOMAIN_REALTIME);
}

TEST_CASE("interop: --volume keeps the named volumes only", "[interop][volume]") {
  TempDir dir;
  write_file(dir.file("in.csv"), kTencent);
  blockevents::ImportOptions options;
  options.volumes = {"7"};
  const auto got = import_rows("tencent", {dir.file("in.csv")}, dir.file("t.iot"), options);
  require_rows(got.rows, {io_row("7", 1538323200 * kSecond, format::Op::kWrite, 0, 512)});
  CHECK(got.report.skipped_by_reason.at("other-volume") == 2);

  auto r = run(iotape_cmd() + " import tencent " + dir.file("in.csv") + " --volume 1283 -o " + dir.file("cli.iot"));
  REQUIRE(r.exit_code == 0);
  CHECK(read_rows(dir.file("cli.iot")).size() == 2);
  r = run(iotape_cmd() + " import msr " + dir.file("in.csv") + " --volume 1 -o " + dir.file("msr.iot"));
  CHECK(r.exit_code != 0);
  CHECK(r.output.find("does not filter volumes") != std::string::npos);
}

TEST_CASE("interop: malformed input fails with file and line", "[interop][malformed]") {
  require_error("systor", "Timestamp,Response,IOType,LUN,Offset,Size\n1,0,X,1,0,512\n", 2, "neither R nor W");
  require_error("systor", "1.5,0,R,1,0\n", 1, "expected 6 comma-separated fields");
  require_error("systor", "1.2.3,0,R,1,0,512\n", 1, "timestamp is not a number");
  require_error("tencent", "1538323200,2048,8,0,1283\n1538323200,2048,8,2,1283\n", 2, "neither 0 (read) nor 1");
  require_error("tencent", "1538323200,-1,8,0,1283\n", 1, "offset is negative");
  require_error("alibaba", "0,R,0,4096,1\n0,Q,0,4096,1\n", 2, "neither R nor W");
  require_error("spc", "0,1,512,x,0.5\n", 1, "neither r nor w");
  require_error("spc", "0,1,512\n", 1, "expected 5 comma-separated fields");
  require_error("disksim", "0.0 0 0 8\n", 1, "expected 5 blank-separated fields");
  require_error("disksim", "0.0 0 99999999999999999999 8 1\n", 1, "block number out of range");
  require_error("fio-iolog", "fio version 3 iolog\n0 /dev/a read 0 4096\n", 2, "used before it is added");
  require_error("fio-iolog", "fio version 9 iolog\n", 1, "not a fio iolog");
  require_error("fio-iolog", "fio version 2 iolog\n/dev/a add\n/dev/a fly 0 1\n", 3, "unknown action");
  require_error("csv", "index,device,major,minor,op,flags,offset,length,queue_ns,issue_ns,complete_ns,status,pid,"
                       "comm,cgroup,cpu,source_index\n0,0,8,0,read,W,0,4096,,1,,0,0,,0,-1,-1\n",
                2, "do not match op read");
  require_error("csv", "0,0,8,0,read,R,0,4096,,1,,0,0,\"fio,0,-1,-1\n", 1, "no closing quote");
  require_error("blkparse", "  8,0    1        1     0.000000000 17852  Q   W 100 + 8 [fio]\nhello world\n", 2,
                "not blkparse output");
  require_error("blkparse", "  8,0    1        1     0.000000000 17852  Q   WQ 100 + 8 [fio]\n", 1, "RWBS");
  require_error("systor", "", 1, "empty file");
  std::string junk(5000, 'x');
  require_error("tencent", junk + "\n", 1, "line longer than");
}

// ---- blkparse text against the binary import ---------------------------------

namespace {

// The time blkparse counts from: its first event that is not a notify record.
uint64_t first_event_time(const std::vector<std::string>& files) {
  uint64_t first = UINT64_MAX;
  for (const auto& f : files) {
    const std::string b = read_file(f);
    for (size_t at = 0; at + 48 <= b.size();) {
      uint64_t time;
      uint32_t action;
      uint16_t pdu;
      std::memcpy(&time, b.data() + at + 8, 8);
      std::memcpy(&action, b.data() + at + 28, 4);
      std::memcpy(&pdu, b.data() + at + 46, 2);
      if (!(action & blk::kNotify)) first = std::min(first, time);
      at += 48 + pdu;
    }
  }
  return first;
}

// `events` as one per-CPU file, numbered in order: blkparse drops events of
// a repeated sequence number.
std::string numbered(const std::vector<blk::Event>& events) {
  std::string bytes;
  for (size_t i = 0; i < events.size(); ++i) {
    blk::append(bytes, events[i]);
    const uint32_t seq = static_cast<uint32_t>(i + 1);
    std::memcpy(bytes.data() + bytes.size() - 48 - events[i].payload.size() + 4, &seq, 4);
  }
  return bytes;
}

// Both imports of one blktrace run: the binary files and blkparse's text of
// them, which must agree field by field once blkparse's time origin is
// added and the cgroup (not printed) is left out.
void require_text_equals_binary(const std::string& dir, const std::string& prefix,
                                const std::vector<std::string>& files, const std::string& extra_options = "") {
  const std::string text = dir + "/parsed.txt";
  REQUIRE(run("cd '" + dir + "' && blkparse " + extra_options + " -i '" + prefix + "' > '" + text + "'").exit_code == 0);
  TempDir out;
  const auto binary = import_rows("blktrace", files, out.file("bin.iot"));
  const auto parsed = import_rows("blkparse", {text}, out.file("text.iot"));
  REQUIRE(binary.rows.size() > 0);
  const auto t0 = static_cast<int64_t>(first_event_time(files));
  std::vector<Row> want = binary.rows;
  for (Row& r : want) {
    r.issue_ns -= t0;
    if (r.queue_ns != format::kNoTime) r.queue_ns -= t0;
    if (r.complete_ns != format::kNoTime) r.complete_ns -= t0;
    r.cgroup = 0;
  }
  require_rows(parsed.rows, want);
  CHECK(parsed.report.notes == binary.report.notes);
}

}  // namespace

TEST_CASE("blkparse: blkparse's text of the lvm-sda sample imports like the binary files", "[interop][blkparse]") {
  auto cpu0 = test::real_trace("lvm-sda.blktrace.0");
  auto cpu1 = test::real_trace("lvm-sda.blktrace.1");
  if (!cpu0 || !cpu1) return;
  TempDir dir;
  // blkparse reads PREFIX.blktrace.N of the folder it runs in; the samples stay where they are.
  std::filesystem::create_symlink(*cpu0, dir.file("lvm-sda.blktrace.0"));
  std::filesystem::create_symlink(*cpu1, dir.file("lvm-sda.blktrace.1"));
  const std::vector<std::string> files = {*cpu0, *cpu1};
  SECTION("default output with the summary") { require_text_equals_binary(dir.path(), "lvm-sda", files); }
  SECTION("with per-IO elapsed times (-t)") { require_text_equals_binary(dir.path(), "lvm-sda", files, "-t"); }
  SECTION("109 IOs, 3,232,256 bytes written") {
    write_file(dir.file("parsed.txt"), run("cd '" + dir.path() + "' && blkparse -i lvm-sda").output);
    const auto parsed = import_rows("blkparse", {dir.file("parsed.txt")}, dir.file("t.iot"));
    uint64_t bytes = 0;
    for (const Row& r : parsed.rows) bytes += r.op == format::Op::kWrite ? r.length : 0;
    CHECK(parsed.rows.size() == 109);
    CHECK(bytes == 3'232'256);
  }
}

TEST_CASE("blkparse: flush, FUA, discard, readahead, meta, errors, splits, merges, requeues, messages",
          "[interop][blkparse]") {
  const uint32_t sda = blk::dev(8, 0), sda1 = blk::dev(8, 1), W = blk::kWrite;
  std::vector<blk::Event> events = {
      {.time = 1000, .action = blk::kProcessName, .pid = 9, .device = sda, .payload = blk::comm("fio job,1")},
      {.time = 1005, .action = blk::Q | W | blk::kFlush | blk::kSync, .pid = 9, .device = sda},
      {.time = 1006, .action = blk::D | W | blk::kFlush | blk::kSync, .pid = 9, .device = sda},
      {.time = 1007, .action = blk::C | W | blk::kFlush | blk::kSync, .pid = 9, .device = sda},
      {.time = 1008, .sector = 100, .bytes = 4096, .action = blk::Q | W | blk::kDiscard, .pid = 9, .device = sda},
      {.time = 1009, .sector = 100, .bytes = 4096, .action = blk::D | W | blk::kDiscard, .pid = 9, .device = sda},
      {.time = 1010, .sector = 100, .bytes = 4096, .action = blk::C | W | blk::kDiscard, .device = sda, .error = 5},
      {.time = 1011, .sector = 200, .bytes = 8192, .action = blk::Q | blk::kAhead | blk::kMeta, .pid = 9, .device = sda},
      {.time = 1012, .sector = 200, .bytes = 4096, .action = blk::X | blk::kAhead, .pid = 9, .device = sda,
       .payload = blk::be64(208)},
      {.time = 1013, .sector = 200, .bytes = 4096, .action = blk::D | blk::kAhead | blk::kMeta, .device = sda},
      {.time = 1014, .sector = 208, .bytes = 4096, .action = blk::D | blk::kAhead | blk::kMeta, .device = sda},
      {.time = 1015, .sector = 200, .bytes = 4096, .action = blk::R | blk::kAhead, .device = sda},
      {.time = 1016, .sector = 200, .bytes = 4096, .action = blk::D | blk::kAhead, .device = sda},
      {.time = 1017, .sector = 200, .bytes = 4096, .action = blk::C | blk::kAhead, .device = sda},
      {.time = 1018, .sector = 208, .bytes = 4096, .action = blk::C | blk::kAhead, .device = sda},
      {.time = 1019, .sector = 500, .bytes = 4096, .action = blk::Q | W | blk::kFua | blk::kSync, .pid = 9, .device = sda},
      {.time = 1020, .sector = 508, .bytes = 4096, .action = blk::Q | W, .pid = 9, .device = sda},
      {.time = 1021, .sector = 508, .bytes = 4096, .action = blk::M | W, .pid = 9, .device = sda},
      {.time = 1022, .action = 2 | blk::kNotify, .pid = 9, .device = sda, .payload = std::string("bfq9 busy")},
      {.time = 1023, .sector = 500, .bytes = 8192, .action = blk::D | W | blk::kFua | blk::kSync, .device = sda},
      {.time = 1024, .sector = 500, .bytes = 8192, .action = blk::C | W | blk::kFua | blk::kSync, .device = sda},
      {.time = 1025, .sector = 900, .bytes = 4096, .action = blk::Q | W, .pid = 9, .device = sda1},
      {.time = 1026, .sector = 2948, .bytes = 4096, .action = blk::A | W, .pid = 9, .device = sda,
       .payload = blk::remap(sda1, sda, 900)},
      {.time = 1027, .sector = 2948, .bytes = 4096, .action = blk::Q | W, .pid = 9, .device = sda},
      {.time = 1028, .sector = 2948, .bytes = 4096, .action = blk::D | W, .device = sda},
      {.time = 1029, .sector = 2948, .bytes = 4096, .action = blk::C | W, .device = sda},
  };
  TempDir dir;
  write_file(dir.file("mix.blktrace.0"), numbered(events));
  require_text_equals_binary(dir.path(), "mix", {dir.file("mix.blktrace.0")});
}

TEST_CASE("blkparse: blkparse's text of traces without D or without C imports like the binary files",
          "[interop][blkparse]") {
  const uint32_t sda = blk::dev(8, 0), W = blk::kWrite;
  // With the event's own category, as the kernel sets it (blkparse drops reads without).
  for (const uint32_t what : {blk::C | format::blktrace::action(0, blk::category::kComplete),
                              blk::D | format::blktrace::action(0, blk::category::kIssue)}) {
    DYNAMIC_SECTION(((what & 0xff) == blk::C ? "C" : "D") << " events only") {
      const std::vector<blk::Event> events = {
          {.time = 900, .action = blk::kProcessName, .pid = 9, .device = sda, .payload = blk::comm("fio")},
          {.time = 1000, .sector = 100, .bytes = 4096, .action = what, .device = sda},
          {.time = 2000, .sector = 200, .bytes = 8192, .action = what | W | blk::kSync, .device = sda, .error = 5},
          {.time = 3000, .sector = 300, .bytes = 4096, .action = what | W | blk::kFua, .device = sda},
      };
      TempDir dir;
      write_file(dir.file("only.blktrace.0"), numbered(events));
      require_text_equals_binary(dir.path(), "only", {dir.file("only.blktrace.0")});
    }
  }
}

// ---- blkparse text as found in the wild --------------------------------------

namespace {

// An IO as blkparse text gives it: times in ns, SECTOR and BYTES as printed.
Row text_row(std::string device, int64_t queue, int64_t issue, int64_t complete, uint64_t sector, uint64_t bytes,
             format::Op op, uint32_t flags = 0, uint32_t pid = 0, std::string comm = "", int32_t cpu = -1) {
  return {.device = std::move(device), .issue_ns = issue, .offset = sector * 512, .length = bytes, .op = op,
          .complete_ns = complete, .queue_ns = queue, .flags = flags, .pid = pid, .comm = std::move(comm),
          .cpu = cpu};
}

bool has_note(const blockevents::ImportReport& report, const std::string& text) {
  for (const auto& n : report.notes) UNSCOPED_INFO("note: " << n);
  return std::any_of(report.notes.begin(), report.notes.end(),
                     [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

}  // namespace

TEST_CASE("blkparse: column headings, rules and comments are skipped", "[interop][blkparse]") {
  const std::string heading =
      "#Maj,Mn CPU   SeqNo  Seconds  PID  Evt Typ Sector +Len Description\n"
      "#---------------------------------------------------------------\n";
  TempDir dir;
  write_file(dir.file("in.txt"), heading +
                                     "  8,0    0        1     0.000000000  4162  Q   R 2048 + 8 [fio]\n"
                                     "  8,0    0        2     0.000001500  4162  G   R 2048 + 8 [fio]\n"
                                     "  8,0    0        3     0.000002000  4162  I   R 2048 + 8 [fio]\n"
                                     "  8,0    0        4     0.000004000  4162  D   R 2048 + 8 [fio]\n"
                                     "  8,0    0        5     0.000120000     0  C   R 2048 + 8 [0]\n"
                                     "# a comment between events\n"
                                     "  8,0    1        1     0.000200000  4163  Q  WS 4096 + 16 [fio]\n"
                                     "  8,0    1        2     0.000201000  4163  G  WS 4096 + 16 [fio]\n"
                                     "  8,0    1        3     0.000203000  4163  D  WS 4096 + 16 [fio]\n"
                                     "  8,0    1        4     0.000350000     0  C  WS 4096 + 16 [0]\n");
  const auto got = import_rows("blkparse", {dir.file("in.txt")}, dir.file("t.iot"));
  require_rows(got.rows, {text_row("8,0", 0, 4'000, 120'000, 2048, 4096, format::Op::kRead, 0, 4162, "fio", 0),
                          text_row("8,0", 200'000, 203'000, 350'000, 4096, 8192, format::Op::kWrite,
                                   format::flag::kSync, 4163, "fio", 1)});
  CHECK(got.report.records == 9);
  CHECK(got.report.notes.empty());
  // Headings alone are no events.
  require_error("blkparse", heading, 3, "no blkparse events");
}

TEST_CASE("blkparse: RWBS letters of every kernel, and an old kernel's barrier (B) is a preflush", "[interop][blkparse]") {
  TempDir dir;
  // A journal write with a barrier, remapped from a partition, then one
  // request for each other spelling, issued and completed.
  std::string text =
      "  8,17   1      122     0.123450000  1234  Q WBS 1950883274 + 8 [jbd2/sdb1-8]\n"
      "  8,16   1      123     0.123456789  1234  A WBS 1950885322 + 8 <- (8,17) 1950883274\n"
      "  8,16   1      124     0.123457000  1234  Q WBS 1950885322 + 8 [jbd2/sdb1-8]\n"
      "  8,16   1      125     0.123458000  1234  G WBS 1950885322 + 8 [jbd2/sdb1-8]\n"
      "  8,16   1      126     0.123460000  1234  I WBS 1950885322 + 8 [jbd2/sdb1-8]\n"
      "  8,16   1      127     0.123470000  1234  D WBS 1950885322 + 8 [jbd2/sdb1-8]\n"
      "  8,16   0       88     0.124000000     0  C WBS 1950885322 + 8 [0]\n";
  const std::vector<std::pair<std::string, std::string>> spellings = {
      {"NB", "0 + 0"},          // an empty barrier: a flush
      {"RAM", "500 + 8"},       // readahead, meta, in the old order
      {"DE", "1000 + 2048"},    // a secure erase
      {"DSE", "3000 + 8"},      // a secure discard, as kernels with REQ_SECURE printed it
      {"FWFSU", "6000 + 8"},    // preflush, FUA, sync, atomic
      {"F", "0 + 0"},           // a flush as the kernel prints it
      {"ZA", "8000 + 8"},       // a zone append
      {"ZRA", "0 + 0"},         // a reset of all zones
      {"ZC", "524288 + 0"},     // a zone close
  };
  for (size_t i = 0; i < spellings.size(); ++i) {
    const auto& [rwbs, where] = spellings[i];
    const std::string t = "0.1" + std::to_string(25 + i);
    text += "  8,16   1  " + std::to_string(200 + i) + "  " + t + "000000  1234  D " + rwbs + " " + where + " [jbd2]\n";
    text += "  8,16   0  " + std::to_string(300 + i) + "  " + t + "100000     0  C " + rwbs + " " + where + " [0]\n";
  }
  write_file(dir.file("in.txt"), text);
  const auto got = import_rows("blkparse", {dir.file("in.txt")}, dir.file("t.iot"));
  auto d = [](int64_t issue_us, uint64_t sector, uint64_t bytes, format::Op op, uint32_t flags = 0) {
    return text_row("8,16", format::kNoTime, issue_us * 1000, issue_us * 1000 + 100'000, sector, bytes, op, flags);
  };
  require_rows(got.rows, {text_row("8,16", 123'450'000, 123'470'000, 124'000'000, 1950885322, 4096, format::Op::kWrite,
                                   format::flag::kPreflush | format::flag::kSync, 1234, "jbd2/sdb1-8", 1),
                          d(125'000, 0, 0, format::Op::kFlush),
                          d(126'000, 500, 4096, format::Op::kRead, format::flag::kReadahead | format::flag::kMeta),
                          d(127'000, 1000, 1 << 20, format::Op::kDiscard),
                          d(128'000, 3000, 4096, format::Op::kDiscard, format::flag::kSync),
                          d(129'000, 6000, 4096, format::Op::kWrite,
                            format::flag::kPreflush | format::flag::kFua | format::flag::kSync),
                          d(130'000, 0, 0, format::Op::kFlush), d(131'000, 8000, 4096, format::Op::kWrite),
                          d(132'000, 0, 0, format::Op::kOther), d(133'000, 524288, 0, format::Op::kOther)});
  CHECK(got.rows[0].offset == 998'853'284'864);
  CHECK(has_note(got.report, "9 D events had no Q, G or I"));
  CHECK(has_note(got.report, "1 remap (A) events moved"));
  // Letters out of their order, or unknown, are still refused.
  require_error("blkparse", "  8,16 1 1 0.1 1234 Q WSB 8 + 8 [x]\n", 1, "misplaced letter");
  require_error("blkparse", "  8,16 1 1 0.1 1234 Q ZX 8 + 8 [x]\n", 1, "names no operation");
}

TEST_CASE("blkparse: C events only, printed CPU by CPU, one CPU's clock far ahead", "[interop][blkparse]") {
  // blktrace -a complete on two CPUs whose clocks disagree by 5000 s.
  const std::string text =
      "  8,0    1        1  5000.000100000     0  C   R 300 + 8 [0]\n"
      "  8,0    1        2  5000.000250000     0  C  WS 400 + 16 [0]\n"
      "  8,0    1        3  5000.000300000     0  C  FN 0 + 0 [0]\n"
      "  8,0    0        1     0.000100000     0  C   R 100 + 8 [0]\n"
      "  8,0    0        2     0.000200000     0  C   W 200 + 8 [-5]\n"
      "  8,0    0        3     0.000200000     0  C   R 208 + 8 [0]\n";
  // Each IO is timed by its C alone, as its issue time: no other time is known.
  auto c = [](int64_t issue, uint64_t sector, uint64_t bytes, format::Op op, uint32_t flags = 0) {
    return text_row("8,0", format::kNoTime, issue, format::kNoTime, sector, bytes, op, flags);
  };
  std::vector<Row> want = {c(100'000, 100, 4096, format::Op::kRead),
                           c(200'000, 200, 4096, format::Op::kWrite),
                           c(200'000, 208, 4096, format::Op::kRead),
                           c(5000'000'100'000, 300, 4096, format::Op::kRead),
                           c(5000'000'250'000, 400, 8192, format::Op::kWrite, format::flag::kSync),
                           c(5000'000'300'000, 0, 0, format::Op::kFlush)};
  want[1].status = -5;
  TempDir dir;
  write_file(dir.file("in.txt"), text);
  const auto got = import_rows("blkparse", {dir.file("in.txt")}, dir.file("t.iot"));
  require_rows(got.rows, want);
  CHECK(got.report.ios == 6);
  CHECK(got.report.skipped == 0);
  CHECK(has_note(got.report, "sorted by time: 3 events came after later ones"));
  CHECK(has_note(got.report, "the input carries only C events, no D (recorded with a filter mask"));
  CHECK(has_note(got.report, "6 IOs have no issue time: each has its Q, else its C, as issue time"));
  CHECK(has_note(got.report, "the events of CPU 1 all come 5000.000 s after the other CPUs'"));
  CHECK_FALSE(has_note(got.report, "matched no D"));

  SECTION("sorted through runs spilled to disk, with the same IOs") {
    blockevents::ImportOptions tiny;
    tiny.sort_run_ios = 2;
    tiny.spill_dir = dir.path();
    const auto spilled = import_rows("blkparse", {dir.file("in.txt")}, dir.file("s.iot"), tiny);
    require_rows(spilled.rows, want);
    CHECK(has_note(spilled.report, "3 events came after later ones (text printed CPU by CPU?), through 2 spilled runs"));
  }
  SECTION("the command prints the notes; the header says what the issue times are") {
    const auto r = run(iotape_cmd() + " import blkparse " + dir.file("in.txt") + " -o " + dir.file("cli.iot"));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(r.output.find("imported 6 IOs") != std::string::npos);
    CHECK(r.output.find("note: the input carries only C events") != std::string::npos);
    v1::TraceHeader h;
    require_rows(read_rows(dir.file("cli.iot"), &h), want);
    CHECK(h.metadata().at("import.issue_times") == "Q, else C: the input has no D events");
  }
}

TEST_CASE("blkparse: traces without C, or without D, give the IOs with the times they have", "[interop][blkparse]") {
  struct Shape {
    std::string name, text;
    std::vector<Row> rows;
    std::vector<std::string> notes, not_notes;
  };
  const std::vector<Shape> shapes = {
      {"Q and D events (blktrace -a queue,issue): queue and issue times",
       "  8,0    0        1     0.000100000   10  Q   R 100 + 8 [fio]\n"
       "  8,0    0        2     0.000110000   10  G   R 100 + 8 [fio]\n"
       "  8,0    0        3     0.000120000   10  I   R 100 + 8 [fio]\n"
       "  8,0    0        4     0.000150000   10  D   R 100 + 8 [fio]\n"
       "  8,0    1        1     0.000200000   11  Q  WS 200 + 8 [dd]\n"
       "  8,0    1        2     0.000260000   11  D  WS 200 + 8 [dd]\n",
       {text_row("8,0", 100'000, 150'000, format::kNoTime, 100, 4096, format::Op::kRead, 0, 10, "fio", 0),
        text_row("8,0", 200'000, 260'000, format::kNoTime, 200, 4096, format::Op::kWrite, format::flag::kSync, 11, "dd",
                 1)},
       {"the input carries only Q, G, I, D events, no C", "2 IOs have no completion time"},
       {"not completed when the trace ended"}},
      {"D events only: issue times",
       "  8,0    0        1     0.000100000   10  D   R 100 + 8 [fio]\n"
       "  8,0    0        2     0.000200000   10  D  WS 200 + 8 [fio]\n",
       {text_row("8,0", format::kNoTime, 100'000, format::kNoTime, 100, 4096, format::Op::kRead),
        text_row("8,0", format::kNoTime, 200'000, format::kNoTime, 200, 4096, format::Op::kWrite, format::flag::kSync)},
       {"the input carries only D events, no C", "2 IOs have no completion time"},
       {}},
      {"Q events only (blktrace -a queue): the queue time, as issue time",
       "  8,0    0        1     0.000100000   10  Q   R 100 + 8 [fio]\n"
       "  8,0    0        2     0.000150000   10  Q   R 108 + 8 [fio]\n"
       "  8,0    0        3     0.000160000   10  M   R 108 + 8 [fio]\n"
       "  8,0    1        1     0.000200000   11  Q  WS 200 + 8 [dd]\n",
       {text_row("8,0", format::kNoTime, 100'000, format::kNoTime, 100, 8192, format::Op::kRead, 0, 10, "fio", 0),
        text_row("8,0", format::kNoTime, 200'000, format::kNoTime, 200, 4096, format::Op::kWrite, format::flag::kSync,
                 11, "dd", 1)},
       {"the input carries only Q, M events, no D or C", "2 IOs have no issue time"},
       {"never issued"}},
      {"Q and C events (a bio-based device): the queue time as issue time, the completion",
       "253,0    0        1     0.000100000   10  Q   R 100 + 8 [fio]\n"
       "253,0    1        1     0.000300000    0  C   R 100 + 8 [0]\n"
       "253,0    0        2     0.000400000   10  Q   W 500 + 8 [fio]\n",
       {text_row("253,0", format::kNoTime, 100'000, 300'000, 100, 4096, format::Op::kRead, 0, 10, "fio", 0)},
       {"the input carries only Q, C events, no D", "1 queued bios or requests were never issued"},
       {}},
  };
  for (const Shape& shape : shapes) {
    DYNAMIC_SECTION(shape.name) {
      TempDir dir;
      write_file(dir.file("in.txt"), shape.text);
      const auto got = import_rows("blkparse", {dir.file("in.txt")}, dir.file("t.iot"));
      require_rows(got.rows, shape.rows);
      for (const auto& n : shape.notes) CHECK(has_note(got.report, n));
      for (const auto& n : shape.not_notes) CHECK_FALSE(has_note(got.report, n));
    }
  }
}

TEST_CASE("blkparse: headings, an old kernel's letters and CPU blocks out of time order, together",
          "[interop][blkparse]") {
  // Completions on CPU 1 printed before the submissions on CPU 0: only once
  // sorted does each C follow its D.
  TempDir dir;
  write_file(dir.file("in.txt"),
             "# blkparse -i sdb, one CPU after the other\n"
             "#Maj,Mn CPU   SeqNo  Seconds  PID  Evt Typ Sector +Len Description\n"
             "#---------------------------------------------------------------\n"
             "  8,16   1        1     0.001000000     0  C WBS 2048 + 8 [0]\n"
             "  8,16   1        2     0.002500000     0  C  RA 4096 + 16 [0]\n"
             "  8,16   1        3     0.003000000     0  C WBS 2048 + 8 [0]\n"
             "  8,16   0        1     0.000100000  4321  Q WBS 2048 + 8 [kjournald]\n"
             "  8,16   0        2     0.000200000  4321  G WBS 2048 + 8 [kjournald]\n"
             "  8,16   0        3     0.000300000  4321  I WBS 2048 + 8 [kjournald]\n"
             "  8,16   0        4     0.000400000  4321  D WBS 2048 + 8 [kjournald]\n"
             "  8,16   0        5     0.002000000   555  Q  RA 4096 + 16 [cat]\n"
             "  8,16   0        6     0.002100000   555  D  RA 4096 + 16 [cat]\n"
             "  8,16   0        7     0.002600000  4321  Q WBS 2048 + 8 [kjournald]\n"
             "  8,16   0        8     0.002700000  4321  D WBS 2048 + 8 [kjournald]\n");
  const auto got = import_rows("blkparse", {dir.file("in.txt")}, dir.file("t.iot"));
  const uint32_t barrier = format::flag::kPreflush | format::flag::kSync;
  require_rows(got.rows, {text_row("8,16", 100'000, 400'000, 1'000'000, 2048, 4096, format::Op::kWrite, barrier, 4321,
                                   "kjournald", 0),
                          text_row("8,16", 2'000'000, 2'100'000, 2'500'000, 4096, 8192, format::Op::kRead,
                                   format::flag::kReadahead, 555, "cat", 0),
                          text_row("8,16", 2'600'000, 2'700'000, 3'000'000, 2048, 4096, format::Op::kWrite, barrier,
                                   4321, "kjournald", 0)});
  CHECK(got.report.records == 11);
  CHECK(got.report.notes ==
        std::vector<std::string>{"sorted by time: 8 events came after later ones (text printed CPU by CPU?)"});
}

// ---- round trips through iotape's exporters ----------------------------------

namespace {

// A trace using every field: several devices (one without major and minor,
// names with commas and quotes), unknown and known times, errors, process
// names with commas, quotes and UTF-8, every op with every flag bit.
void write_rich_trace(const std::string& path) {
  v1::TraceHeader h;
  h.set_clock(v1::CLOCK_DOMAIN_RELATIVE);
  format::TraceWriter w(path, h);
  for (const auto& [major, minor, name] : {std::tuple<uint32_t, uint32_t, std::string>{8, 0, "sda"},
                                           {259, 1, "nvme0n1"}, {0, 0, "vol \"7\", tier 2"}}) {
    v1::Device d;
    d.set_major(major), d.set_minor(minor), d.set_name(name);
    w.add_device(d);
  }
  std::mt19937_64 rng(7);
  const char* comms[] = {"", "fio", "kworker/u256:1", "a,b", "say \"hi\"", "x y", "caf\u00e9"};
  int64_t t = 1'000'000'007;
  for (int i = 0; i < 500; ++i) {
    t += i % 3 ? static_cast<int64_t>(rng() % 3'000'000) : 0;  // a third tie with the IO before
    format::Io io;
    io.issue_ns = t;
    io.queue_ns = i % 4 == 0 ? format::kNoTime : t - static_cast<int64_t>(rng() % 5000);
    io.complete_ns = i % 5 == 0 ? format::kNoTime : t + static_cast<int64_t>(rng() % 900'000);
    io.op = static_cast<format::Op>(rng() % format::kOpCount);
    io.flags = static_cast<uint32_t>(rng() % (format::flag::kNoMerge << 1));  // any mix of the format::flag:: bits
    io.offset = (rng() % (1ull << 30)) * 512;
    io.length = io.op == format::Op::kFlush ? 0 : (1 + rng() % 256) * 512;
    io.device = static_cast<uint32_t>(rng() % 3);
    io.status = i % 17 == 0 ? -5 : 0;
    io.pid = static_cast<uint32_t>(rng() % 40000);
    io.comm = comms[rng() % std::size(comms)];
    io.cgroup = i % 3 == 0 ? 0 : rng() % 100000;
    io.cpu = static_cast<int32_t>(rng() % 3) - 1;
    io.source_index = i % 2 ? -1 : i;
    w.append(io);
  }
  w.close();
}

// What a per-IO export carries of the device table: the devices IOs use, by
// index, with their major, minor and name.
std::map<uint32_t, std::tuple<uint32_t, uint32_t, std::string>> used_devices(const std::string& path) {
  format::TraceReader reader(path);
  std::map<uint32_t, std::tuple<uint32_t, uint32_t, std::string>> used;
  for (auto batch = reader.next_batch(); !batch.empty(); batch = reader.next_batch())
    for (const format::Io& io : batch) {
      const v1::Device& d = reader.header().devices(static_cast<int>(io.device));
      used.try_emplace(io.device, d.major(), d.minor(), d.name());
    }
  return used;
}

// Exports `trace` with `iotape export FORMAT` and imports it back with the
// importer of the same name, from the library and from the command line:
// every IO and every device they use must come back as it was.
void require_round_trip(const std::string& trace, const std::string& format, const TempDir& dir) {
  INFO(format << " round trip of " << trace);
  const std::string exported = dir.file("exported." + format);
  REQUIRE(run(iotape_cmd() + " export " + format + " " + trace + " -o " + exported).exit_code == 0);
  const auto original = read_rows(trace);
  REQUIRE_FALSE(original.empty());
  const auto back = import_rows(format, {exported}, dir.file("back.iot"));
  require_rows(back.rows, original);
  CHECK(back.report.ios == original.size());
  CHECK(back.report.skipped == 0);
  CHECK(used_devices(dir.file("back.iot")) == used_devices(trace));
  const auto cli = run(iotape_cmd() + " import " + format + " " + exported + " -o " + dir.file("cli.iot"));
  REQUIRE(cli.exit_code == 0);
  require_rows(read_rows(dir.file("cli.iot")), original);
}

}  // namespace

TEST_CASE("csv: importing iotape's own CSV export gives every field back", "[interop][csv]") {
  TempDir dir;
  write_rich_trace(dir.file("t.iot"));
  require_round_trip(dir.file("t.iot"), "csv", dir);
  const auto original = read_rows(dir.file("t.iot"));
  // Every flag bit, the preflush of a flush included, which RWBS letters cannot show.
  uint32_t seen = 0;
  bool flush_preflush = false;
  for (const Row& r : original) {
    seen |= r.flags;
    flush_preflush |= r.op == format::Op::kFlush && (r.flags & format::flag::kPreflush);
  }
  CHECK(seen == (format::flag::kNoMerge << 1) - 1);
  CHECK(flush_preflush);

  // With a tiny sort run the rows still come back in trace order, ties included.
  blockevents::ImportOptions tiny;
  tiny.sort_run_ios = 7;
  tiny.spill_dir = dir.path();
  require_rows(import_rows("csv", {dir.file("exported.csv")}, dir.file("tiny.iot"), tiny).rows, original);
}

TEST_CASE("csv: exports from before flag_bits and device_name still import", "[interop][csv]") {
  TempDir dir;
  write_file(dir.file("old.csv"),
             "index,device,major,minor,op,flags,offset,length,queue_ns,issue_ns,complete_ns,status,pid,comm,cgroup,"
             "cpu,source_index\n"
             "0,1,8,16,write,FWFS,4096,8192,90,100,250,0,42,\"a,b\",7,1,-1\n");
  const auto got = import_rows("csv", {dir.file("old.csv")}, dir.file("t.iot"));
  Row want = io_row("8,16", 100, format::Op::kWrite, 4096, 8192, 250);
  want.queue_ns = 90, want.flags = format::flag::kPreflush | format::flag::kFua | format::flag::kSync, want.pid = 42,
  want.comm = "a,b";
  want.cgroup = 7, want.cpu = 1, want.device_index = 1;
  require_rows(got.rows, {want});
}

TEST_CASE("jsonl: importing iotape's own JSON lines export gives every field back", "[interop][jsonl]") {
  TempDir dir;
  write_rich_trace(dir.file("t.iot"));
  require_round_trip(dir.file("t.iot"), "jsonl", dir);
}

TEST_CASE("csv, jsonl: the real samples' imports come back from their exports unchanged", "[interop][jsonl]") {
  const std::vector<std::pair<std::string, std::vector<std::string>>> samples = {
      {"msr", {"msr-hm0-sample.csv"}},
      {"vscsi", {"cloudphysics-sample.vscsi"}},
      {"blktrace", {"lvm-sda.blktrace.0", "lvm-sda.blktrace.1"}}};
  for (const auto& [importer, files] : samples) {
    std::string inputs;
    for (const std::string& f : files) {
      const auto path = test::real_trace(f);
      if (!path) return;
      inputs += " " + *path;
    }
    for (const std::string format : {"csv", "jsonl"}) {
      DYNAMIC_SECTION(importer << " through " << format) {
        TempDir dir;
        REQUIRE(run(iotape_cmd() + " import " + importer + inputs + " -o " + dir.file("t.iot")).exit_code == 0);
        require_round_trip(dir.file("t.iot"), format, dir);
      }
    }
  }
}

TEST_CASE("csv, jsonl: names that are not UTF-8 stay bytes in CSV and become U+FFFD in JSON lines",
          "[interop][jsonl]") {
  TempDir dir;
  {
    format::TraceWriter w(dir.file("t.iot"), {});
    v1::Device d;
    d.set_name("disk\xff");
    w.add_device(d);
    format::Io io;
    io.length = 512;
    io.comm = "p\xfe";
    w.append(io);
    w.close();
  }
  require_round_trip(dir.file("t.iot"), "csv", dir);
  REQUIRE(run(iotape_cmd() + " export jsonl " + dir.file("t.iot") + " -o " + dir.file("t.jsonl")).exit_code == 0);
  const auto back = import_rows("jsonl", {dir.file("t.jsonl")}, dir.file("back.iot"));
  REQUIRE(back.rows.size() == 1);
  CHECK(back.rows[0].comm == "p\uFFFD");
  CHECK(back.rows[0].device == "disk\uFFFD");
}

TEST_CASE("jsonl: --volume keeps the named devices, the header counts what it skipped, absent volumes are named", "[interop][jsonl]") {
  TempDir dir;
  write_rich_trace(dir.file("t.iot"));
  REQUIRE(run(iotape_cmd() + " export jsonl " + dir.file("t.iot") + " -o " + dir.file("t.jsonl")).exit_code == 0);
  // Volume 9 names no device of the input: the import says so, of that one only.
  const auto r = run(iotape_cmd() + " import jsonl " + dir.file("t.jsonl") + " --volume 1 --volume 9 -o " +
                     dir.file("one.iot"));
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("volume '9' does not occur in the input") != std::string::npos);
  CHECK(r.output.find("volume '1' does not occur") == std::string::npos);
  std::vector<Row> want;
  for (const Row& r : read_rows(dir.file("t.iot")))
    if (r.device_index == 1) want.push_back(r);
  v1::TraceHeader h;
  require_rows(read_rows(dir.file("one.iot"), &h), want);
  const auto skipped = std::to_string(500 - want.size());
  CHECK(h.metadata().at("import.records") == "500");
  CHECK(h.metadata().at("import.skipped") == skipped);
  CHECK(h.metadata().at("import.skipped.other-volume") == skipped);
  CHECK(h.source_detail() == "import:jsonl");
}

TEST_CASE("jsonl: malformed lines fail with file, line and the field", "[interop][jsonl][malformed]") {
  const std::string ok = R"({"index":0,"device":0,"dev":"8:0","device_name":"sda","op":"read","flags":0,)"
                         R"("offset":0,"length":4096,"issue_ns":1})";
  // The valid line with `key`'s value replaced (or the key removed, when `value` is empty).
  auto with = [&](const std::string& key, const std::string& value) {
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(ok);
    if (value.empty())
      j.erase(key);
    else
      j[key] = nlohmann::ordered_json::parse(value);
    return ok + "\n" + j.dump() + "\n";
  };
  require_error("jsonl", ok + "\n{\"index\":0,\n", 2, "not JSON at column");
  require_error("jsonl", ok + "\nindex,device\n", 2, "not JSON at column");
  require_error("jsonl", ok + "\n{\"index\":3e99999}\n", 2, "not JSON: number overflow parsing '3e99999'");
  require_error("jsonl", "[1,2]\n", 1, "not a JSON object");
  require_error("jsonl", with("issue_ns", ""), 2, "no \"issue_ns\" field");
  require_error("jsonl", with("op", ""), 2, "no \"op\" field");
  require_error("jsonl", with("offset", "\"4096\""), 2, "offset is not an integer: '\"4096\"'");
  require_error("jsonl", with("length", "4096.5"), 2, "length is not an integer");
  require_error("jsonl", with("offset", "-1"), 2, "offset out of range: '-1'");
  require_error("jsonl", with("pid", "4294967296"), 2, "pid out of range");
  require_error("jsonl", with("issue_ns", "-9223372036854775808"), 2, "issue_ns out of range");
  require_error("jsonl", with("op", "\"fly\""), 2, "unknown op 'fly'");
  require_error("jsonl", with("op", "3"), 2, "op is not a string");
  require_error("jsonl", with("complete_n", "5"), 2, "unknown field 'complete_n'");
  require_error("jsonl", with("x\ny", "5"), 2, "unknown field 'x?y'");  // the error stays one line
  require_error("jsonl", with("dev", "\"8:0\\n\""), 2, "dev '8:0?' is not MAJOR:MINOR");
  require_error("jsonl", with("dev", "\"8-0\""), 2, "dev '8-0' is not MAJOR:MINOR");
  require_error("jsonl", with("device_name", "\"sdb\""), 2,
                "device 0 is 8:0 named 'sdb' here but 8:0 named 'sda' before");
  require_error("jsonl", with("device", "70000"), 2, "device index 70000 is out of range");
  require_error("jsonl", "", 1, "empty file: no iotape JSON lines records");
}

TEST_CASE("fio-iolog: iotape's fio iolog export imports back to the same IOs at microsecond precision",
          "[interop][fio]") {
  TempDir dir;
  write_rich_trace(dir.file("t.iot"));
  const auto original = read_rows(dir.file("t.iot"));
  REQUIRE(run(iotape_cmd() + " export fio-iolog " + dir.file("t.iot") + " -o " + dir.file("t.log")).exit_code == 0);
  const auto back = import_rows("fio-iolog", {dir.file("t.log")}, dir.file("back.iot"));
  // fio has no write-zeroes (written as writes) and no 'other' (left out).
  std::vector<Row> want;
  for (const Row& r : original) {
    if (r.op == format::Op::kOther) continue;
    // The export names a file after its device, or dev<index> when the name will not do.
    const std::string file =
        r.device.find(' ') == std::string::npos ? "/dev/" + r.device : "dev" + std::to_string(r.device_index);
    Row w = io_row(file, (r.issue_ns - original[0].issue_ns) / 1000 * 1000,
                   r.op == format::Op::kWriteZeroes ? format::Op::kWrite : r.op, r.offset, r.length);
    want.push_back(w);
  }
  REQUIRE(back.rows.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("row " << i);
    CHECK(back.rows[i].device == want[i].device);
    CHECK(back.rows[i].issue_ns == want[i].issue_ns);
    CHECK(back.rows[i].op == want[i].op);
    CHECK(back.rows[i].offset == want[i].offset);
    CHECK(back.rows[i].length == want[i].length);
  }
}

TEST_CASE("fio-iolog: fio's own --write_iolog of a job imports with fio's IO counts", "[interop][fio]") {
  TempDir dir;
  const std::string file = "/dev/shm/iotape-fio-iolog-" + std::to_string(::getpid());
  const auto r = run("fio --name=mix --filename=" + file + " --size=4m --rw=randrw --rwmixread=60 --bs=4k "
                     "--ioengine=psync --number_ios=300 --fsync=25 --write_iolog=" + dir.file("job.log") +
                     " --output-format=json --output=" + dir.file("fio.json"));
  std::filesystem::remove(file);
  REQUIRE(r.exit_code == 0);
  const auto json = nlohmann::json::parse(read_file(dir.file("fio.json")));
  const auto& job = json["jobs"][0];
  const uint64_t reads = job["read"]["total_ios"], writes = job["write"]["total_ios"];
  REQUIRE(reads + writes > 0);
  CHECK(read_file(dir.file("job.log")).starts_with("fio version 3 iolog\n"));

  const auto got = import_rows("fio-iolog", {dir.file("job.log")}, dir.file("t.iot"));
  uint64_t got_reads = 0, got_writes = 0, flushes = 0;
  for (const Row& row : got.rows) {
    got_reads += row.op == format::Op::kRead;
    got_writes += row.op == format::Op::kWrite;
    flushes += row.op == format::Op::kFlush;
    CHECK(row.device == file);
    CHECK(row.length == (row.op == format::Op::kFlush ? row.length : 4096));
  }
  CHECK(got_reads == reads);
  CHECK(got_writes == writes);
  CHECK(flushes == job["sync"]["total_ios"].get<uint64_t>());
}

// ---- compressed inputs -------------------------------------------------------

TEST_CASE("compressed inputs: gzip, bzip2, xz and zstd import exactly like the plain file", "[interop][compress]") {
  TempDir dir;
  std::string text = kSystor;
  for (int i = 0; i < 3000; ++i)  // large enough for several decoder buffers
    text += "1450535591." + std::to_string(100000 + i) + ",0.0001,W,3," + std::to_string(i * 4096) + ",4096\n";
  write_file(dir.file("plain.csv"), text);
  const auto plain = import_rows("systor", {dir.file("plain.csv")}, dir.file("plain.iot"));
  for (const std::string tool : {"gzip", "bzip2", "xz", "zstd -q"}) {
    DYNAMIC_SECTION(tool) {
      // Named without an extension on purpose: detection goes by magic bytes.
      REQUIRE(run(tool + " -c " + dir.file("plain.csv") + " > " + dir.file("packed")).exit_code == 0);
      require_rows(import_rows("systor", {dir.file("packed")}, dir.file("packed.iot")).rows, plain.rows);
      CHECK(convert::detect_file_format(dir.file("packed")) == "systor");

      // Cut short: an error with the place, never a silently shorter trace.
      const std::string packed = read_file(dir.file("packed"));
      write_file(dir.file("cut"), packed.substr(0, packed.size() / 2));
      format::TraceWriter w(dir.file("cut.iot"), {});
      CHECK_THROWS_AS(convert::find_importer("systor")->run({dir.file("cut")}, w), format::TraceError);
    }
  }
  SECTION("two gzip members back to back read as one") {
    REQUIRE(run("head -c 2000 " + dir.file("plain.csv") + " | gzip > " + dir.file("two.gz") + " && tail -c +2001 " +
                dir.file("plain.csv") + " | gzip >> " + dir.file("two.gz")).exit_code == 0);
    require_rows(import_rows("systor", {dir.file("two.gz")}, dir.file("two.iot")).rows, plain.rows);
  }
  SECTION("the real MSR sample through zstd") {
    auto msr = test::real_trace("msr-hm0-sample.csv");
    if (!msr) return;
    REQUIRE(run("zstd -q -c " + *msr + " > " + dir.file("msr.zst")).exit_code == 0);
    require_rows(import_rows("msr", {dir.file("msr.zst")}, dir.file("m2.iot")).rows,
                 import_rows("msr", {*msr}, dir.file("m1.iot")).rows);
  }
}

// ---- sorting with bounded memory ---------------------------------------------

TEST_CASE("sorted spill: runs spilled to disk merge into issue-time order, ties in input order", "[interop][sort]") {
  TempDir dir;
  std::mt19937_64 rng(11);
  std::vector<format::Io> ios;
  std::vector<std::string> names;
  for (int i = 0; i < 2000; ++i) names.push_back("p" + std::to_string(i % 13));
  for (int i = 0; i < 2000; ++i) {
    format::Io io;
    io.issue_ns = static_cast<int64_t>(rng() % 500);  // many ties
    io.offset = static_cast<uint64_t>(i);            // input order
    io.length = 512;
    io.comm = names[static_cast<size_t>(i)];
    io.pid = static_cast<uint32_t>(i);
    ios.push_back(io);
  }
  blockevents::SortedSpill sorter(37, dir.path());
  for (const format::Io& io : ios) sorter.add(io);
  CHECK(sorter.spilled_runs() == 2000 / 37);
  {
    format::TraceWriter w(dir.file("t.iot"), {});
    w.add_device({});
    sorter.drain([&w](const format::Io& io) { w.append(io); });
    w.close();
  }
  auto want = ios;
  std::stable_sort(want.begin(), want.end(),
                   [](const format::Io& a, const format::Io& b) { return a.issue_ns < b.issue_ns; });
  const auto rows = read_rows(dir.file("t.iot"));
  REQUIRE(rows.size() == want.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    INFO("row " << i);
    REQUIRE(rows[i].issue_ns == want[i].issue_ns);
    REQUIRE(rows[i].offset == want[i].offset);
    REQUIRE(rows[i].comm == want[i].comm);
  }
  // The spilled runs are unlinked at creation: nothing is left behind.
  CHECK(std::filesystem::is_empty(dir.path()) == false);  // t.iot only
  CHECK(std::distance(std::filesystem::directory_iterator(dir.path()), {}) == 1);
}

TEST_CASE("sorted spill: an unsorted import through tiny runs equals the in-memory sort", "[interop][sort]") {
  TempDir dir;
  std::string text;
  std::mt19937_64 rng(3);
  for (int i = 0; i < 1000; ++i)
    text += std::to_string(1538323000 + rng() % 300) + "," + std::to_string(i) + ",8," + std::to_string(rng() % 2) +
            "," + std::to_string(rng() % 4) + "\n";
  write_file(dir.file("cbs.csv"), text);
  const auto memory = import_rows("tencent", {dir.file("cbs.csv")}, dir.file("m.iot"));
  blockevents::ImportOptions tiny;
  tiny.sort_run_ios = 10;
  tiny.spill_dir = dir.path();
  const auto spilled = import_rows("tencent", {dir.file("cbs.csv")}, dir.file("s.iot"), tiny);
  require_rows(spilled.rows, memory.rows);
  for (size_t i = 1; i < memory.rows.size(); ++i) REQUIRE(memory.rows[i - 1].issue_ns <= memory.rows[i].issue_ns);
  // 99 runs go to disk; the last one is merged from memory.
  CHECK(spilled.report.notes.front() == "sorted by issue time through 99 spilled runs");
}

// ---- auto-detection ----------------------------------------------------------

TEST_CASE("auto: every format is recognised from its first bytes", "[interop][auto]") {
  TempDir dir;
  std::vector<std::pair<std::string, std::string>> cases;  // file, expected format
  for (const Sample& s : samples()) {
    const std::string f = dir.file("sample" + std::to_string(cases.size()));
    write_file(f, s.text);
    cases.emplace_back(f, s.format);
  }
  // Without their headers, SYSTOR lines still tell.
  write_file(dir.file("systor-bare"), kSystor.substr(kSystor.find('\n') + 1));
  cases.emplace_back(dir.file("systor-bare"), "systor");
  write_rich_trace(dir.file("t.iot"));
  REQUIRE(run(iotape_cmd() + " export csv " + dir.file("t.iot") + " -o " + dir.file("t.csv")).exit_code == 0);
  cases.emplace_back(dir.file("t.csv"), "csv");
  REQUIRE(run(iotape_cmd() + " export jsonl " + dir.file("t.iot") + " -o " + dir.file("t.jsonl")).exit_code == 0);
  cases.emplace_back(dir.file("t.jsonl"), "jsonl");
  if (auto msr = test::real_trace("msr-hm0-sample.csv")) cases.emplace_back(*msr, "msr");
  if (auto vscsi = test::real_trace("cloudphysics-sample.vscsi")) cases.emplace_back(*vscsi, "vscsi");
  if (auto cpu0 = test::real_trace("lvm-sda.blktrace.0")) {
    cases.emplace_back(*cpu0, "blktrace");
    write_file(dir.file("parsed.txt"), run("blkparse -i " + *cpu0).output);
    cases.emplace_back(dir.file("parsed.txt"), "blkparse");
  }
  for (const auto& [file, format] : cases) {
    INFO(file);
    CHECK(convert::detect_file_format(file) == format);
  }

  const auto r = run(iotape_cmd() + " import auto " + dir.file("sample1") + " -o " + dir.file("auto.iot"));
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("looks like tencent") != std::string::npos);
  v1::TraceHeader h;
  read_rows(dir.file("auto.iot"), &h);
  CHECK(h.source_detail() == "import:tencent");
}

TEST_CASE("auto: fails clearly when unsure", "[interop][auto]") {
  TempDir dir;
  write_file(dir.file("prose"), "It was a dark and stormy night.\n");
  write_file(dir.file("mixed"), "1538323200,2048,8,0,1283\n0.0 0 0 8 1\n");
  write_file(dir.file("empty"), "");
  for (const std::string name : {"prose", "mixed", "empty"}) {
    INFO(name);
    CHECK_THROWS_AS(convert::detect_file_format(dir.file(name)), format::TraceError);
    const auto r = run(iotape_cmd() + " import auto " + dir.file(name) + " -o " + dir.file("x.iot"));
    CHECK(r.exit_code != 0);
    CHECK(r.output.find("cannot tell") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(dir.file("x.iot")));
  }
}

// Importers against independent truth: the real samples decoded by tiny
// parsers written here (and by blkparse for blktrace), hand-built inputs for
// every folding rule, and malformed inputs that must fail with a place.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

#include "convert/import/importer.h"
#include "format/blktrace_layout.h"
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
namespace blk = iotape::test::blk;

namespace {

// An IO with its device named and its process name owned, compared as a whole.
struct Row {
  std::string device{};
  int64_t queue_ns = format::kNoTime;
  int64_t issue_ns = 0;
  int64_t complete_ns = format::kNoTime;
  uint64_t offset = 0;
  uint64_t length = 0;
  format::Op op = format::Op::kRead;
  uint32_t flags = 0;
  int32_t status = 0;
  uint32_t pid = 0;
  std::string comm{};
  uint64_t cgroup = 0;
  int32_t cpu = -1;

  auto tie() const {
    return std::tie(issue_ns, device, offset, length, op, queue_ns, complete_ns, flags, status, pid, comm, cgroup,
                    cpu);
  }
  bool operator<(const Row& o) const { return tie() < o.tie(); }
  bool operator==(const Row& o) const { return tie() == o.tie(); }
};

std::ostream& operator<<(std::ostream& os, const Row& r) {
  return os << "{" << r.device << " q=" << r.queue_ns << " i=" << r.issue_ns << " c=" << r.complete_ns
            << " off=" << r.offset << " len=" << r.length << " op=" << format::op_name(r.op) << " flags=" << r.flags
            << " status=" << r.status << " pid=" << r.pid << " comm=" << r.comm << " cgroup=" << r.cgroup
            << " cpu=" << r.cpu << "}";
}

struct Imported {
  blockevents::ImportReport report;
  std::vector<Row> rows;
  v1::TraceHeader header;
  uint64_t file_bytes = 0;
};

// Imports as `iotape import` does (the importer's clock, a one-minute
// reorder window) and reads the trace back.
Imported import_and_read(const std::string& format, const std::vector<std::string>& inputs,
                         const std::string& out) {
  const convert::Importer* imp = convert::find_importer(format);
  REQUIRE(imp != nullptr);
  v1::TraceHeader h;
  h.set_clock(imp->clock);
  format::WriterOptions wo;
  wo.reorder_window_ns = 60'000'000'000;
  Imported r;
  {
    format::TraceWriter w(out, h, wo);
    r.report = imp->run(inputs, w);
    w.close();
    r.file_bytes = w.stats().file_bytes;
  }
  format::TraceReader reader(out);
  r.header = reader.header();
  format::Io io;
  while (reader.next(io)) {
    REQUIRE(io.device < static_cast<uint32_t>(r.header.devices_size()));
    r.rows.push_back({r.header.devices(static_cast<int>(io.device)).name(), io.queue_ns, io.issue_ns,
                      io.complete_ns, io.offset, io.length, io.op, io.flags, io.status, io.pid,
                      std::string(io.comm), io.cgroup, io.cpu});
  }
  REQUIRE_FALSE(reader.status().damaged);
  return r;
}

// Equal as multisets of records; the first differing record is shown.
void require_same(std::vector<Row> got, std::vector<Row> want) {
  REQUIRE(got.size() == want.size());
  std::sort(got.begin(), got.end());
  std::sort(want.begin(), want.end());
  for (size_t i = 0; i < got.size(); ++i)
    if (!(got[i] == want[i])) {
      INFO("record " << i << " of " << got.size());
      REQUIRE(got[i] == want[i]);
    }
}

template <typename T>
void put_le(std::string& out, T v) {
  char b[sizeof v];
  std::memcpy(b, &v, sizeof v);
  out.append(b, sizeof v);
}

template <typename T>
T get_le(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// ---- MSR Cambridge -------------------------------------------------------------

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> f;
  std::stringstream ss(line);
  std::string x;
  while (std::getline(ss, x, ',')) f.push_back(x);
  return f;
}

}  // namespace

TEST_CASE("msr: the hm_0 sample equals an independent parse, record by record", "[import][msr]") {
  auto path = test::real_trace("msr-hm0-sample.csv");
  if (!path) return;
  std::ifstream in(*path);
  std::string line;
  std::vector<Row> want;
  uint64_t reads = 0, writes = 0, read_bytes = 0, written_bytes = 0;
  while (std::getline(in, line)) {
    const auto f = split_csv(line);
    REQUIRE(f.size() == 7);
    Row r;
    r.device = f[1] + "_" + f[2];
    r.issue_ns = (std::stoll(f[0]) - 116444736000000000LL) * 100;
    r.complete_ns = r.issue_ns + std::stoll(f[6]) * 100;
    r.offset = std::stoull(f[4]);
    r.length = std::stoull(f[5]);
    r.op = f[3] == "Read" ? format::Op::kRead : format::Op::kWrite;
    (r.op == format::Op::kRead ? reads : writes)++;
    (r.op == format::Op::kRead ? read_bytes : written_bytes) += r.length;
    want.push_back(r);
  }
  // The sample's published figures (SOURCES.md) agree with the parse.
  CHECK(want.size() == 1000);
  CHECK(reads == 508);
  CHECK(read_bytes == 6'108'672);
  CHECK(writes == 492);
  CHECK(written_bytes == 3'580'928);

  TempDir dir;
  auto got = import_and_read("msr", {*path}, dir.file("msr.iot"));
  CHECK(got.report.records == 1000);
  CHECK(got.report.ios == 1000);
  CHECK(got.report.skipped == 0);
  CHECK(got.header.clock() == v1::CLOCK_DOMAIN_REALTIME);
  REQUIRE(got.header.devices_size() == 1);
  CHECK(got.header.devices(0).name() == "hm_0");
  require_same(got.rows, want);
}

TEST_CASE("msr: hosts and disks become devices, CRLF and blank lines are accepted", "[import][msr]") {
  TempDir dir;
  const std::string a = dir.file("a.csv"), b = dir.file("b.csv");
  write_file(a, "128166385295514663,hm,0,Read,4096,512,10\r\n\r\n128166385295514700,src1,2,Write,0,4096,20\r\n");
  write_file(b, "128166385295514800,hm,0,Write,8192,1024,0\n");
  auto got = import_and_read("msr", {a, b}, dir.file("out.iot"));
  REQUIRE(got.header.devices_size() == 2);
  CHECK(got.header.devices(0).name() == "hm_0");
  CHECK(got.header.devices(1).name() == "src1_2");
  // 2007-02-22 as Unix nanoseconds: (FILETIME - 11644473600 s in ticks) * 100.
  Row r1{"hm_0", format::kNoTime, 1172164929551466300, 1172164929551467300, 4096, 512, format::Op::kRead};
  Row r2{"src1_2", format::kNoTime, 1172164929551470000, 1172164929551472000, 0, 4096, format::Op::kWrite};
  Row r3{"hm_0", format::kNoTime, 1172164929551480000, 1172164929551480000, 8192, 1024, format::Op::kWrite};
  require_same(got.rows, {r1, r2, r3});
  CHECK(got.report.records == 3);
}

TEST_CASE("msr: timestamps centuries apart in one input", "[import][msr]") {
  TempDir dir;
  const std::string in = dir.file("old.csv");
  // 1690 and 2007: their difference in nanoseconds exceeds INT64_MAX.
  write_file(in, "28166385295514663,hm,0,Write,0,2048,2833\n128166385295029756,hm,0,Write,4096,2048,2833\n");
  auto got = import_and_read("msr", {in}, dir.file("out.iot"));
  REQUIRE(got.rows.size() == 2);
  CHECK(got.rows[0].issue_ns == (28166385295514663LL - 116444736000000000LL) * 100);
  CHECK(got.rows[1].issue_ns == (128166385295029756LL - 116444736000000000LL) * 100);
}

TEST_CASE("msr: malformed input fails with file and line", "[import][msr][malformed]") {
  const std::string good = "128166385295514663,hm,0,Write,9056014336,2048,2833\n";
  SECTION("empty file") { require_import_error("msr", "", ":1:", "empty file"); }
  SECTION("only blank lines") { require_import_error("msr", "\n\n", ":3:", "no MSR records"); }
  SECTION("another CSV format") {
    require_import_error("msr", "Timestamp,Response,IOType,LUN,Offset,Size\n", ":1:", "expected 7");
  }
  SECTION("binary data") { require_import_error("msr", std::string("\x00\x01\x02\xff", 4), ":1:", "fields"); }
  SECTION("truncated last line") { require_import_error("msr", good + "128166385295514663,hm,0,Wri", ":2:", "fields"); }
  SECTION("too many fields") { require_import_error("msr", "1,hm,0,Read,0,512,1,9\n", ":1:", "more than 7"); }
  SECTION("non-numeric offset") {
    require_import_error("msr", good + "128166385295514663,hm,0,Read,12ab,512,10\n", ":2:", "offset is not a number");
  }
  SECTION("empty field") { require_import_error("msr", "128166385295514663,hm,0,Read,,512,10\n", ":1:", "offset"); }
  SECTION("negative size") {
    require_import_error("msr", "128166385295514663,hm,0,Read,0,-4096,10\n", ":1:", "size is negative");
  }
  SECTION("unknown type") { require_import_error("msr", "128166385295514663,hm,0,Trim,0,4096,10\n", ":1:", "Trim"); }
  SECTION("offset past 2^64") {
    require_import_error("msr", "128166385295514663,hm,0,Read,99999999999999999999,512,1\n", ":1:", "offset out of range");
  }
  SECTION("offset + size overflow") {
    require_import_error("msr", "128166385295514663,hm,0,Read,18446744073709551615,4096,1\n", ":1:", "overflows");
  }
  SECTION("timestamp overflow") {
    require_import_error("msr", good + "18446744073709551615,hm,0,Read,0,512,1\n", ":2:", "timestamp");
    require_import_error("msr", "9223372036854775807,hm,0,Read,0,512,1\n", ":1:", "timestamp");
  }
  SECTION("response time overflow") {
    require_import_error("msr", "128166385295514663,hm,0,Read,0,512,92233720368547758\n", ":1:", "response time");
  }
  SECTION("disk number past 32 bits") {
    require_import_error("msr", "128166385295514663,hm,4294967296,Read,0,512,1\n", ":1:", "disk number");
  }
  SECTION("a line without end") { require_import_error("msr", std::string(10000, '7'), ":1:", "longer than"); }
}

// ---- vscsi ---------------------------------------------------------------------

namespace {

std::string vscsi_v1(uint16_t cmd, uint64_t lbn, uint32_t len, uint64_t ts_us, uint16_t ver = 0x0100) {
  std::string r;
  put_le<uint32_t>(r, 7);  // serial number
  put_le<uint32_t>(r, len);
  put_le<uint32_t>(r, 1);  // scatter-gather entries
  put_le<uint16_t>(r, cmd);
  put_le<uint16_t>(r, ver);
  put_le<uint64_t>(r, lbn);
  put_le<uint64_t>(r, ts_us);
  return r;
}

std::string vscsi_v2(uint16_t cmd, uint64_t lbn, uint32_t len, uint64_t ts_us, uint64_t rt_us) {
  std::string r;
  put_le<uint16_t>(r, cmd);
  put_le<uint16_t>(r, 0x0200);
  put_le<uint32_t>(r, 7);
  put_le<uint32_t>(r, len);
  put_le<uint32_t>(r, 1);
  put_le<uint64_t>(r, lbn);
  put_le<uint64_t>(r, ts_us);
  put_le<uint64_t>(r, rt_us);
  return r;
}

}  // namespace

TEST_CASE("vscsi: the CloudPhysics sample equals an independent decode, record by record", "[import][vscsi]") {
  auto path = test::real_trace("cloudphysics-sample.vscsi");
  if (!path) return;
  const std::string bytes = read_file(*path);
  REQUIRE(bytes.size() % 32 == 0);
  std::vector<Row> want;
  uint64_t reads = 0, writes = 0, read_bytes = 0, written_bytes = 0;
  for (size_t at = 0; at < bytes.size(); at += 32) {
    const char* p = bytes.data() + at;
    REQUIRE(get_le<uint16_t>(p + 14) >> 8 == 1);
    const uint16_t cmd = get_le<uint16_t>(p + 12);
    REQUIRE((cmd == 0x28 || cmd == 0x2a));  // READ(10), WRITE(10): all this sample has
    Row r;
    r.device = "cloudphysics-sample";
    r.op = cmd == 0x28 ? format::Op::kRead : format::Op::kWrite;
    r.length = get_le<uint32_t>(p + 4);
    r.offset = get_le<uint64_t>(p + 16) * 512;
    r.issue_ns = static_cast<int64_t>(get_le<uint64_t>(p + 24)) * 1000;
    (r.op == format::Op::kRead ? reads : writes)++;
    (r.op == format::Op::kRead ? read_bytes : written_bytes) += r.length;
    want.push_back(r);
  }
  CHECK(want.size() == 113'872);
  CHECK(reads == 46'974);
  CHECK(read_bytes == 1'797'412'352);
  CHECK(writes == 66'898);
  CHECK(written_bytes == 2'408'565'760);

  TempDir dir;
  auto got = import_and_read("vscsi", {*path}, dir.file("vscsi.iot"));
  CHECK(got.report.records == 113'872);
  CHECK(got.report.ios == 113'872);
  CHECK(got.header.clock() == v1::CLOCK_DOMAIN_RELATIVE);
  require_same(got.rows, want);
  // The trace format's size goal for this sample.
  const double bytes_per_io = static_cast<double>(got.file_bytes) / static_cast<double>(got.rows.size());
  INFO("bytes per IO: " << bytes_per_io);
  CHECK(bytes_per_io <= 5.0);
}

TEST_CASE("vscsi: version 2 records, response times and SCSI opcodes", "[import][vscsi]") {
  TempDir dir;
  const std::string in = dir.file("vm2.vscsi");
  struct Case {
    uint16_t cmd;
    format::Op op;
  };
  const Case cases[] = {{0x08, format::Op::kRead},  {0x28, format::Op::kRead},    {0xa8, format::Op::kRead},
                        {0x88, format::Op::kRead},  {0x0a, format::Op::kWrite},   {0x2a, format::Op::kWrite},
                        {0xaa, format::Op::kWrite}, {0x8a, format::Op::kWrite},   {0x35, format::Op::kFlush},
                        {0x91, format::Op::kFlush}, {0x42, format::Op::kDiscard}, {0x41, format::Op::kOther},
                        {0x93, format::Op::kOther}, {0x12, format::Op::kOther}};
  std::string bytes;
  std::vector<Row> want;
  uint64_t ts = 1'000'000;
  for (const Case& c : cases) {
    bytes += vscsi_v2(c.cmd, ts / 7, 4096, ts, 250);
    want.push_back({"vm2", format::kNoTime, static_cast<int64_t>(ts) * 1000, static_cast<int64_t>(ts + 250) * 1000,
                    ts / 7 * 512, 4096, c.op});
    ts += 1000;
  }
  write_file(in, bytes);
  auto got = import_and_read("vscsi", {in}, dir.file("out.iot"));
  require_same(got.rows, want);
}

TEST_CASE("vscsi: a file name that is not UTF-8 still makes a readable device name", "[import][vscsi]") {
  TempDir dir;
  const std::string in = dir.file("vm\xff\xfe.vscsi");
  write_file(in, vscsi_v1(0x28, 8, 4096, 5));
  auto got = import_and_read("vscsi", {in}, dir.file("out.iot"));
  REQUIRE(got.header.devices_size() == 1);
  CHECK(got.header.devices(0).name() == "vm??");
  CHECK(got.rows.size() == 1);
}

TEST_CASE("vscsi: malformed input fails with file and byte offset", "[import][vscsi][malformed]") {
  const std::string good = vscsi_v1(0x28, 100, 4096, 5);
  SECTION("empty file") { require_import_error("vscsi", "", ": byte 0:", "empty file"); }
  SECTION("a CSV file") {
    require_import_error("vscsi", "128166385295514663,hm,0,Write,9056014336,2048,2833\n", ": byte 0:",
                         "not a vscsi trace");
  }
  SECTION("shorter than one record") { require_import_error("vscsi", good.substr(0, 20), ": byte 0:", "truncated"); }
  SECTION("truncated record") { require_import_error("vscsi", good + good.substr(0, 10), ": byte 32:", "truncated"); }
  SECTION("truncated v2 record") {
    const std::string v2 = vscsi_v2(0x28, 1, 512, 1, 1);
    require_import_error("vscsi", v2 + v2.substr(0, 36), ": byte 40:", "truncated");
  }
  SECTION("version changes mid-file") {
    require_import_error("vscsi", good + vscsi_v1(0x28, 1, 512, 6, 0x0300), ": byte 32:", "version 3");
  }
  SECTION("block past 2^64 bytes") {
    require_import_error("vscsi", good + vscsi_v1(0x28, UINT64_MAX / 256, 512, 6), ": byte 32:", "out of range");
  }
  SECTION("block + length overflow") {
    require_import_error("vscsi", vscsi_v1(0x28, UINT64_MAX / 512, 4096, 6), ": byte 0:", "out of range");
  }
  SECTION("timestamp overflow") {
    require_import_error("vscsi", good + vscsi_v1(0x28, 1, 512, UINT64_MAX), ": byte 32:", "timestamp");
    require_import_error("vscsi", vscsi_v1(0x28, 1, 512, INT64_MAX / 1000 + 1), ": byte 0:", "timestamp");
  }
  SECTION("response time overflow") {
    require_import_error("vscsi", vscsi_v2(0x28, 1, 512, INT64_MAX / 1000, INT64_MAX / 1000), ": byte 0:",
                         "out of range");
  }
}

// ---- blktrace ------------------------------------------------------------------

namespace {

// One line of `blkparse -f "%a %M %m %S %N %T.%t %p %c %d %e %C\n"`.
struct Parsed {
  std::string action;
  uint32_t major = 0, minor = 0;
  uint64_t sector = 0, bytes = 0;
  int64_t time_ns = 0;
  uint32_t pid = 0;
  int32_t cpu = 0;
  std::string rwbs;
  int32_t error = 0;
  std::string comm{};
};

std::vector<Parsed> blkparse(const std::string& dir, const std::string& prefix, const std::string& out) {
  auto r = test::run("cd '" + dir + "' && blkparse -i '" + prefix +
                     "' -f '%a %M %m %S %N %T.%t %p %c %d %e %C\\n' -o '" + out + "'");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  std::vector<Parsed> events;
  std::ifstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ss(line);
    Parsed e;
    std::string time;
    if (!(ss >> e.action >> e.major >> e.minor >> e.sector >> e.bytes >> time >> e.pid >> e.cpu >> e.rwbs >> e.error))
      continue;  // the summary after the events
    const auto dot = time.find('.');
    REQUIRE(dot != std::string::npos);
    e.time_ns = std::stoll(time.substr(0, dot)) * 1'000'000'000 + std::stoll(time.substr(dot + 1));
    std::getline(ss >> std::ws, e.comm);
    events.push_back(e);
  }
  return events;
}

// An RWBS string as blkparse prints it: [F]{D|W|R|N}[F][A][S][M].
void rwbs_to(const std::string& rwbs, uint64_t bytes, format::Op* op, uint32_t* flags) {
  size_t i = 0;
  const bool flush = rwbs[i] == 'F';
  if (flush) ++i;
  const char kind = rwbs[i++];
  *op = kind == 'D' ? format::Op::kDiscard : kind == 'W' ? format::Op::kWrite : format::Op::kRead;
  if (flush && bytes == 0 && kind != 'D') *op = format::Op::kFlush;
  *flags = flush && *op != format::Op::kFlush ? format::flag::kPreflush : 0;
  for (; i < rwbs.size(); ++i)
    *flags |= rwbs[i] == 'F'   ? format::flag::kFua
              : rwbs[i] == 'A' ? format::flag::kReadahead
              : rwbs[i] == 'S' ? format::flag::kSync
              : rwbs[i] == 'M' ? format::flag::kMeta
                               : 0;
}

// IOs as blkparse's events show them, for traces without merges into a
// request after its D: each C takes the last D at its sector, that D the
// last Q there before it.
std::vector<Row> ios_from_blkparse(const std::vector<Parsed>& events) {
  std::vector<Row> rows;
  for (size_t c = 0; c < events.size(); ++c) {
    if (events[c].action != "C") continue;
    auto last_before = [&](size_t end, const std::string& action) {
      for (size_t i = end; i-- > 0;)
        if (events[i].action == action && events[i].sector == events[end].sector &&
            events[i].major == events[end].major && events[i].minor == events[end].minor)
          return i;
      FAIL("no " << action << " before event " << end);
      return size_t{0};
    };
    const size_t d = last_before(c, "D");
    const size_t q = last_before(d, "Q");
    Row r;
    r.device = std::to_string(events[c].major) + "," + std::to_string(events[c].minor);
    r.queue_ns = events[q].time_ns;
    r.issue_ns = events[d].time_ns;
    r.complete_ns = events[c].time_ns;
    r.offset = events[c].sector * 512;
    r.length = events[c].bytes;
    CHECK(events[d].bytes == events[c].bytes);
    rwbs_to(events[d].rwbs, events[d].bytes, &r.op, &r.flags);
    r.status = -events[c].error;
    r.pid = events[q].pid;
    r.comm = events[q].comm;
    r.cpu = events[q].cpu;
    rows.push_back(r);
  }
  return rows;
}

// The rows with every time moved by `delta`.
std::vector<Row> shifted(std::vector<Row> rows, int64_t delta) {
  for (Row& r : rows) {
    r.issue_ns += delta;
    if (r.queue_ns != format::kNoTime) r.queue_ns += delta;
    if (r.complete_ns != format::kNoTime) r.complete_ns += delta;
  }
  return rows;
}

int64_t first_issue(const std::vector<Row>& rows) {
  return std::min_element(rows.begin(), rows.end())->issue_ns;
}

// An IO as block events give it: SECTOR and BYTES as the events carry them.
Row event_row(std::string device, int64_t q, int64_t i, int64_t c, uint64_t sector, uint64_t bytes, format::Op op,
              uint32_t flags = 0, uint32_t pid = 0, std::string comm = "", int32_t cpu = -1) {
  return {.device = std::move(device), .queue_ns = q, .issue_ns = i, .complete_ns = c, .offset = sector * 512,
          .length = bytes, .op = op, .flags = flags, .pid = pid, .comm = std::move(comm), .cpu = cpu};
}

// The fixed part of the blktrace record at byte `at`, as written.
format::blktrace::Record record_at(const std::string& bytes, size_t at) {
  format::blktrace::Record r;
  std::memcpy(&r, bytes.data() + at, sizeof r);
  return r;
}

// A copy of a blktrace file in the other byte order (payloads kept: the
// importer reads only comm strings and big-endian payloads from them).
std::string byte_swapped(const std::string& bytes) {
  std::string out;
  for (size_t at = 0; at + sizeof(format::blktrace::Record) <= bytes.size();) {
    const format::blktrace::Record r = record_at(bytes, at);
    const format::blktrace::Record swapped = format::blktrace::byte_swapped(r);
    out.append(reinterpret_cast<const char*>(&swapped), sizeof swapped);
    out.append(bytes, at + sizeof r, r.pdu_len);
    at += sizeof r + r.pdu_len;
  }
  return out;
}

uint64_t count_records(const std::string& bytes) {
  uint64_t n = 0;
  for (size_t at = 0; at + sizeof(format::blktrace::Record) <= bytes.size(); ++n)
    at += sizeof(format::blktrace::Record) + record_at(bytes, at).pdu_len;
  return n;
}

}  // namespace

TEST_CASE("blktrace: the lvm-sda sample equals blkparse's view, IO by IO", "[import][blktrace]") {
  auto cpu0 = test::real_trace("lvm-sda.blktrace.0");
  auto cpu1 = test::real_trace("lvm-sda.blktrace.1");
  if (!cpu0 || !cpu1) return;
  const std::string samples = cpu0->substr(0, cpu0->rfind('/'));
  TempDir dir;
  const auto events = blkparse(samples, "lvm-sda", dir.file("parsed.txt"));
  const auto count = [&](const std::string& a) {
    return std::count_if(events.begin(), events.end(), [&](const Parsed& e) { return e.action == a; });
  };
  CHECK(count("Q") == 113);
  CHECK(count("D") == 109);
  REQUIRE(count("C") == 109);
  uint64_t completed_bytes = 0;
  for (const auto& e : events)
    if (e.action == "C") completed_bytes += e.bytes;
  CHECK(completed_bytes == 3'232'256);  // SOURCES.md; blkparse's summary rounds it to 3156KiB
  const auto want = ios_from_blkparse(events);

  auto got = import_and_read("blktrace", {*cpu0, *cpu1}, dir.file("lvm.iot"));
  REQUIRE(got.rows.size() == 109);
  uint64_t got_bytes = 0;
  for (const Row& r : got.rows) {
    CHECK(r.device == "8,0");
    got_bytes += r.length;
  }
  CHECK(got_bytes == completed_bytes);
  REQUIRE(got.header.devices_size() == 1);
  CHECK(got.header.devices(0).major() == 8);
  CHECK(got.header.devices(0).minor() == 0);
  CHECK(got.header.clock() == v1::CLOCK_DOMAIN_RELATIVE);
  CHECK(got.report.records == count_records(read_file(*cpu0)) + count_records(read_file(*cpu1)));
  CHECK(got.report.skipped == 0);
  CHECK(got.report.notes.empty());
  // blkparse prints times from the first event; the import keeps the kernel's clock.
  require_same(got.rows, shifted(want, first_issue(got.rows) - first_issue(want)));
}

TEST_CASE("blktrace: per-CPU files, a blkparse -d dump and a byte-swapped copy import alike", "[import][blktrace]") {
  auto cpu0 = test::real_trace("lvm-sda.blktrace.0");
  auto cpu1 = test::real_trace("lvm-sda.blktrace.1");
  if (!cpu0 || !cpu1) return;
  const std::string samples = cpu0->substr(0, cpu0->rfind('/'));
  TempDir dir;
  auto per_cpu = import_and_read("blktrace", {*cpu0, *cpu1}, dir.file("a.iot"));

  SECTION("blkparse -d dump") {
    auto r = test::run("cd '" + samples + "' && blkparse -i lvm-sda -d '" + dir.file("merged.bin") + "' -o /dev/null");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    auto merged = import_and_read("blktrace", {dir.file("merged.bin")}, dir.file("b.iot"));
    // The dump counts event times from the first event.
    require_same(shifted(merged.rows, first_issue(per_cpu.rows) - first_issue(merged.rows)), per_cpu.rows);
  }
  SECTION("other byte order") {
    write_file(dir.file("s.0"), byte_swapped(read_file(*cpu0)));
    write_file(dir.file("s.1"), byte_swapped(read_file(*cpu1)));
    auto swapped = import_and_read("blktrace", {dir.file("s.0"), dir.file("s.1")}, dir.file("c.iot"));
    require_same(swapped.rows, per_cpu.rows);
  }
}

TEST_CASE("blktrace: an fsync on a kernel with flush requests of their own", "[import][blktrace]") {
  // Since 4.8 the flush machinery issues a flush (no write category) of its
  // own and completes the fsync's empty preflush write without issuing it.
  const uint32_t sdb = blk::dev(8, 16);
  const uint32_t W = blk::kWrite, S = blk::kSync;
  std::string cpu0;
  auto e = [&](blk::Event ev) { ev.cpu = 0; blk::append(cpu0, ev); };
  e({.time = 10, .action = blk::kProcessName, .pid = 100, .device = sdb, .payload = blk::comm("fio")});
  e({.time = 1000, .action = blk::Q | W | S | blk::kFlush, .pid = 100, .device = sdb});
  e({.time = 1100, .action = blk::G | W | S | blk::kFlush, .pid = 100, .device = sdb});
  e({.time = 2000, .action = blk::D | blk::kFlush, .pid = 58, .device = sdb});
  e({.time = 2100, .action = blk::C | blk::kFlush, .device = sdb});
  e({.time = 2200, .action = blk::C | W | S, .device = sdb});
  TempDir dir;
  write_file(dir.file("t.blktrace.0"), cpu0);
  auto got = import_and_read("blktrace", {dir.file("t.blktrace.0")}, dir.file("t.iot"));
  auto io = [](int64_t q, int64_t i, int64_t c, format::Op op, uint32_t flags, uint32_t pid, std::string comm,
               int32_t cpu) { return event_row("8,16", q, i, c, 0, 0, op, flags, pid, std::move(comm), cpu); };
  // The write: its queue time stands as issue time, as the eBPF back end records it.
  require_same(got.rows,
               {io(1000, 1000, 2200, format::Op::kWrite, format::flag::kPreflush | format::flag::kSync, 100, "fio", 0),
                io(format::kNoTime, 2000, 2100, format::Op::kFlush, 0, 0, "", -1)});
}

TEST_CASE("blktrace: a requeued flush request is issued again before the fsyncs queued behind it", "[import][blktrace]") {
  // As libata showed it on a SATA drive: a flush (not NCQ) is requeued while
  // reads and writes are in flight; a second fsync queues its empty write at
  // the same place (sector 0) before the flush is issued again, and that
  // flush serves both.
  const uint32_t sdb = blk::dev(8, 16);
  const uint32_t W = blk::kWrite, S = blk::kSync;
  std::string cpu0;
  auto e = [&](blk::Event ev) { ev.cpu = 0; blk::append(cpu0, ev); };
  e({.time = 1000, .action = blk::Q | W | S | blk::kFlush, .pid = 100, .device = sdb});
  e({.time = 1100, .action = blk::G | W | S | blk::kFlush, .pid = 100, .device = sdb});
  e({.time = 2000, .action = blk::D | blk::kFlush, .pid = 58, .device = sdb});
  e({.time = 2050, .action = blk::R | blk::kFlush, .device = sdb});
  e({.time = 2100, .action = blk::Q | W | S | blk::kFlush, .pid = 101, .device = sdb});
  e({.time = 2150, .action = blk::G | W | S | blk::kFlush, .pid = 101, .device = sdb});
  e({.time = 3000, .action = blk::D | blk::kFlush, .pid = 58, .device = sdb});
  e({.time = 3100, .action = blk::C | blk::kFlush, .device = sdb});
  e({.time = 3200, .action = blk::C | W | S, .device = sdb});  // both empty writes: the flush served them
  e({.time = 3300, .action = blk::C | W | S, .device = sdb});
  TempDir dir;
  write_file(dir.file("t.blktrace.0"), cpu0);
  auto got = import_and_read("blktrace", {dir.file("t.blktrace.0")}, dir.file("t.iot"));
  auto io = [](int64_t q, int64_t i, int64_t c, format::Op op, uint32_t flags, uint32_t pid) {
    return event_row("8,16", q, i, c, 0, 0, op, flags, pid, "", pid ? 0 : -1);
  };
  CHECK(got.report.skipped == 0);
  require_same(got.rows, {io(1000, 1000, 3200, format::Op::kWrite, format::flag::kPreflush | format::flag::kSync, 100),
                          io(2100, 2100, 3300, format::Op::kWrite, format::flag::kPreflush | format::flag::kSync, 101),
                          io(format::kNoTime, 3000, 3100, format::Op::kFlush, 0, 0)});
}

TEST_CASE("blktrace: a read and a discard in flight from one sector each complete as themselves", "[import][blktrace]") {
  // As 5.10 showed it on an NVMe drive: a 64 KiB discard, a 40 KiB read from
  // its first sector issued and completed inside it, then a write from where
  // the read ended. The read's C is not a partial completion of the discard.
  const uint32_t nvme = blk::dev(259, 0);
  const uint32_t W = blk::kWrite, S = blk::kSync, T = blk::kDiscard;
  std::string cpu0;
  auto e = [&](blk::Event ev) { ev.cpu = 0; blk::append(cpu0, ev); };
  e({.time = 1000, .sector = 295168, .bytes = 65536, .action = blk::Q | W | S | T, .pid = 138, .device = nvme});
  e({.time = 1100, .sector = 295168, .bytes = 65536, .action = blk::D | W | S | T, .pid = 138, .device = nvme});
  e({.time = 1200, .sector = 295168, .bytes = 40960, .action = blk::Q, .pid = 137, .device = nvme});
  e({.time = 1300, .sector = 295168, .bytes = 40960, .action = blk::D, .pid = 137, .device = nvme});
  e({.time = 1400, .sector = 295168, .bytes = 40960, .action = blk::C, .device = nvme});
  e({.time = 1500, .sector = 295168, .bytes = 65536, .action = blk::C | W | S | T, .device = nvme});
  e({.time = 1600, .sector = 295248, .bytes = 45056, .action = blk::Q | W | S, .pid = 137, .device = nvme});
  e({.time = 1700, .sector = 295248, .bytes = 45056, .action = blk::D | W | S, .pid = 137, .device = nvme});
  e({.time = 1800, .sector = 295248, .bytes = 45056, .action = blk::C | W | S, .device = nvme});
  TempDir dir;
  write_file(dir.file("t.blktrace.0"), cpu0);
  auto got = import_and_read("blktrace", {dir.file("t.blktrace.0")}, dir.file("t.iot"));
  auto io = [](int64_t q, int64_t i, int64_t c, uint64_t sector, uint64_t bytes, format::Op op, uint32_t flags,
               uint32_t pid) { return event_row("259,0", q, i, c, sector, bytes, op, flags, pid, "", 0); };
  CHECK(got.report.skipped == 0);
  require_same(got.rows, {io(1000, 1100, 1500, 295168, 65536, format::Op::kDiscard, format::flag::kSync, 138),
                          io(1200, 1300, 1400, 295168, 40960, format::Op::kRead, 0, 137),
                          io(1600, 1700, 1800, 295248, 45056, format::Op::kWrite, format::flag::kSync, 137)});
}

TEST_CASE("blktrace: two writes in flight from one sector each complete as themselves", "[import][blktrace]") {
  // As fio's random writes met on a SCSI drive: a 4 KiB and then a 64 KiB
  // write from one sector in flight together, the later completing first.
  // The 64 KiB write's C is not the 4 KiB one's, nor is the 4 KiB write's C a
  // partial completion of the 64 KiB one (which would then wait for the
  // rest forever and be written without a completion). Then the same with
  // requeues: each R sends back the request of its length.
  const uint32_t sda = blk::dev(8, 0);
  const uint32_t W = blk::kWrite;
  std::string cpu0;
  auto e = [&](blk::Event ev) {
    ev.cpu = 0;
    blk::append(cpu0, ev);
  };
  e({.time = 1000, .sector = 2048, .bytes = 4096, .action = blk::Q | W, .pid = 200, .device = sda});
  e({.time = 1100, .sector = 2048, .bytes = 4096, .action = blk::D | W, .pid = 200, .device = sda});
  e({.time = 1200, .sector = 2048, .bytes = 65536, .action = blk::Q | W, .pid = 201, .device = sda});
  e({.time = 1300, .sector = 2048, .bytes = 65536, .action = blk::D | W, .pid = 201, .device = sda});
  e({.time = 1400, .sector = 2048, .bytes = 65536, .action = blk::C | W, .device = sda});
  e({.time = 1500, .sector = 2048, .bytes = 4096, .action = blk::C | W, .device = sda});
  e({.time = 2000, .sector = 4096, .bytes = 8192, .action = blk::Q | W, .pid = 200, .device = sda});
  e({.time = 2100, .sector = 4096, .bytes = 8192, .action = blk::D | W, .pid = 200, .device = sda});
  e({.time = 2200, .sector = 4096, .bytes = 16384, .action = blk::Q | W, .pid = 201, .device = sda});
  e({.time = 2300, .sector = 4096, .bytes = 16384, .action = blk::D | W, .pid = 201, .device = sda});
  e({.time = 2400, .sector = 4096, .bytes = 16384, .action = blk::R | W, .device = sda});
  e({.time = 2500, .sector = 4096, .bytes = 16384, .action = blk::D | W, .pid = 201, .device = sda});
  e({.time = 2600, .sector = 4096, .bytes = 8192, .action = blk::C | W, .device = sda});
  e({.time = 2700, .sector = 4096, .bytes = 16384, .action = blk::C | W, .device = sda});
  TempDir dir;
  write_file(dir.file("t.blktrace.0"), cpu0);
  auto got = import_and_read("blktrace", {dir.file("t.blktrace.0")}, dir.file("t.iot"));
  auto io = [](int64_t q, int64_t i, int64_t c, uint64_t sector, uint64_t bytes, uint32_t pid) {
    return event_row("8,0", q, i, c, sector, bytes, format::Op::kWrite, 0, pid, "", 0);
  };
  CHECK(got.report.skipped == 0);
  CHECK(got.report.notes == std::vector<std::string>{"1 requeues (R): those requests were issued again"});
  require_same(got.rows, {io(1000, 1100, 1500, 2048, 4096, 200), io(1200, 1300, 1400, 2048, 65536, 201),
                          io(2000, 2100, 2600, 4096, 8192, 200), io(2200, 2500, 2700, 4096, 16384, 201)});
}

TEST_CASE("blktrace: a requeue at sector 0 sends back the request of its kind", "[import][blktrace]") {
  // As libata showed it on a SATA drive: a discard (TRIM, not NCQ) of sector
  // 0 issued while a flush request is in flight there is deferred and
  // requeued; then the other way round, a flush deferred behind the discard.
  const uint32_t sdb = blk::dev(8, 16);
  const uint32_t W = blk::kWrite, T = blk::kDiscard;
  std::string cpu0;
  auto e = [&](blk::Event ev) { ev.cpu = 0; blk::append(cpu0, ev); };
  e({.time = 1000, .action = blk::D | blk::kFlush, .pid = 58, .device = sdb});
  e({.time = 1100, .bytes = 65536, .action = blk::Q | W | T, .pid = 101, .device = sdb});
  e({.time = 1200, .bytes = 65536, .action = blk::D | W | T, .pid = 101, .device = sdb});
  e({.time = 1250, .bytes = 65536, .action = blk::R | W | T, .device = sdb});
  e({.time = 1300, .action = blk::C | blk::kFlush, .device = sdb});
  e({.time = 1400, .bytes = 65536, .action = blk::D | W | T, .pid = 101, .device = sdb});
  e({.time = 1500, .action = blk::D | blk::kFlush, .pid = 58, .device = sdb});
  e({.time = 1550, .action = blk::R | blk::kFlush, .device = sdb});
  e({.time = 1600, .bytes = 65536, .action = blk::C | W | T, .device = sdb});
  e({.time = 1700, .action = blk::D | blk::kFlush, .pid = 58, .device = sdb});
  e({.time = 1800, .action = blk::C | blk::kFlush, .device = sdb});
  TempDir dir;
  write_file(dir.file("t.blktrace.0"), cpu0);
  auto got = import_and_read("blktrace", {dir.file("t.blktrace.0")}, dir.file("t.iot"));
  auto io = [](int64_t q, int64_t i, int64_t c, uint64_t bytes, format::Op op, uint32_t pid) {
    return event_row("8,16", q, i, c, 0, bytes, op, 0, pid, "", pid ? 0 : -1);
  };
  CHECK(got.report.skipped == 0);
  require_same(got.rows, {io(format::kNoTime, 1000, 1300, 0, format::Op::kFlush, 0),
                          io(1100, 1400, 1600, 65536, format::Op::kDiscard, 101),
                          io(format::kNoTime, 1700, 1800, 0, format::Op::kFlush, 0)});
}

TEST_CASE("blktrace: an fsync's empty write completing while the next flush request is in flight", "[import][blktrace]") {
  // Both complete at sector 0: the empty write's C is not the flush's.
  const uint32_t sdb = blk::dev(8, 16);
  const uint32_t W = blk::kWrite, S = blk::kSync;
  std::string cpu0;
  auto e = [&](blk::Event ev) { ev.cpu = 0; blk::append(cpu0, ev); };
  e({.time = 1000, .action = blk::Q | W | S | blk::kFlush, .pid = 100, .device = sdb});
  e({.time = 2000, .action = blk::D | blk::kFlush, .pid = 58, .device = sdb});
  e({.time = 2100, .action = blk::C | blk::kFlush, .device = sdb});
  e({.time = 2120, .action = blk::Q | W | S | blk::kFlush, .pid = 101, .device = sdb});
  e({.time = 2150, .action = blk::D | blk::kFlush, .pid = 58, .device = sdb});
  e({.time = 2200, .action = blk::C | W | S, .device = sdb});
  e({.time = 2300, .action = blk::C | blk::kFlush, .device = sdb});
  e({.time = 2400, .action = blk::C | W | S, .device = sdb});
  TempDir dir;
  write_file(dir.file("t.blktrace.0"), cpu0);
  auto got = import_and_read("blktrace", {dir.file("t.blktrace.0")}, dir.file("t.iot"));
  auto io = [](int64_t q, int64_t i, int64_t c, format::Op op, uint32_t flags, uint32_t pid) {
    return event_row("8,16", q, i, c, 0, 0, op, flags, pid, "", pid ? 0 : -1);
  };
  CHECK(got.report.skipped == 0);
  require_same(got.rows, {io(1000, 1000, 2200, format::Op::kWrite, format::flag::kPreflush | format::flag::kSync, 100),
                          io(2120, 2120, 2400, format::Op::kWrite, format::flag::kPreflush | format::flag::kSync, 101),
                          io(format::kNoTime, 2000, 2100, format::Op::kFlush, 0, 0),
                          io(format::kNoTime, 2150, 2300, format::Op::kFlush, 0, 0)});
}

TEST_CASE("blktrace: a discard of sector 0 queued behind an fsync's empty write", "[import][blktrace]") {
  // Both are queued at sector 0; the empty write is never issued, so the
  // discard's D is the discard's, and each C completes its own kind.
  const uint32_t sdb = blk::dev(8, 16);
  const uint32_t W = blk::kWrite, S = blk::kSync, DS = blk::kDiscard | blk::kWrite | blk::kSync;
  std::string cpu0;
  auto e = [&](blk::Event ev) { ev.cpu = 0; blk::append(cpu0, ev); };
  e({.time = 1000, .action = blk::Q | W | S | blk::kFlush, .pid = 100, .device = sdb});
  e({.time = 1100, .sector = 0, .bytes = 65536, .action = blk::Q | DS, .pid = 101, .device = sdb});
  e({.time = 1150, .sector = 0, .bytes = 65536, .action = blk::I | DS, .pid = 101, .device = sdb});
  e({.time = 1200, .action = blk::D | blk::kFlush, .pid = 58, .device = sdb});
  e({.time = 1300, .sector = 0, .bytes = 65536, .action = blk::D | DS, .pid = 58, .device = sdb});
  e({.time = 1400, .action = blk::C | blk::kFlush, .device = sdb});
  e({.time = 1500, .action = blk::C | W | S, .device = sdb});
  e({.time = 1600, .sector = 0, .bytes = 65536, .action = blk::C | DS, .device = sdb});
  TempDir dir;
  write_file(dir.file("t.blktrace.0"), cpu0);
  auto got = import_and_read("blktrace", {dir.file("t.blktrace.0")}, dir.file("t.iot"));
  auto io = [](int64_t q, int64_t i, int64_t c, uint64_t length, format::Op op, uint32_t flags, uint32_t pid) {
    return event_row("8,16", q, i, c, 0, length, op, flags, pid, "", pid ? 0 : -1);
  };
  CHECK(got.report.skipped == 0);
  require_same(got.rows,
               {io(1000, 1000, 1500, 0, format::Op::kWrite, format::flag::kPreflush | format::flag::kSync, 100),
                io(1100, 1300, 1600, 65536, format::Op::kDiscard, format::flag::kSync, 101),
                io(format::kNoTime, 1200, 1400, 0, format::Op::kFlush, 0, 0)});
}

TEST_CASE("blktrace: a journal commit's flush sequence is one write, as the kernel counts it", "[import][blktrace]") {
  // A preflush and FUA write on a drive with a write cache and no FUA, as the
  // blk tracer showed an ext4 journal commit: the preflush (a flush request),
  // the data, the post-flush, then the write completed again with no bytes.
  const uint32_t sdb = blk::dev(8, 16);
  const uint32_t W = blk::kWrite, S = blk::kSync, M = blk::kMeta;
  const uint64_t at = 229396;
  auto events = [&](bool queue_events) {
    std::string cpu0;
    auto e = [&](blk::Event ev) { ev.cpu = 0; blk::append(cpu0, ev); };
    e({.time = 10, .action = blk::kProcessName, .pid = 100, .device = sdb, .payload = blk::comm("jbd2/sdb-8")});
    if (queue_events) {
      e({.time = 1000, .sector = at, .bytes = 1024, .action = blk::Q | W | S | M | blk::kFlush | blk::kFua, .pid = 100, .device = sdb});
      e({.time = 1010, .sector = at, .bytes = 1024, .action = blk::G | W | S | M | blk::kFlush | blk::kFua, .pid = 100, .device = sdb});
    }
    e({.time = 1100, .action = blk::D | blk::kFlush, .pid = 44, .device = sdb});
    e({.time = 1300, .action = blk::C | blk::kFlush, .device = sdb});
    if (queue_events) e({.time = 1330, .sector = at, .bytes = 1024, .action = blk::I | W | S | M, .pid = 58, .device = sdb});
    e({.time = 1340, .sector = at, .bytes = 1024, .action = blk::D | W | S | M, .pid = 58, .device = sdb});
    e({.time = 1400, .sector = at, .bytes = 1024, .action = blk::C | W | S | M, .device = sdb});
    e({.time = 1420, .action = blk::D | blk::kFlush, .pid = 58, .device = sdb});
    e({.time = 1440, .action = blk::C | blk::kFlush, .device = sdb});
    e({.time = 1450, .sector = at, .bytes = 0, .action = blk::C | W | S | M, .device = sdb});
    return cpu0;
  };
  auto io = [](int64_t q, int64_t i, int64_t c, format::Op op, uint64_t sector, uint64_t length, uint32_t flags,
               uint32_t pid, std::string comm, int32_t cpu) {
    return event_row("8,16", q, i, c, sector, length, op, flags, pid, std::move(comm), cpu);
  };
  TempDir dir;
  for (const bool queue_events : {true, false}) {
    INFO((queue_events ? "every event" : "issue and completion events only"));
    write_file(dir.file("t.blktrace.0"), events(queue_events));
    auto got = import_and_read("blktrace", {dir.file("t.blktrace.0")}, dir.file("t.iot"));
    const std::vector<Row> expected =
        queue_events ? std::vector<Row>{io(format::kNoTime, 1100, 1300, format::Op::kFlush, 0, 0, 0, 0, "", -1),
                                        io(1000, 1340, 1400, format::Op::kWrite, at, 1024,
                                           format::flag::kSync | format::flag::kMeta, 100, "jbd2/sdb-8", 0),
                                        io(format::kNoTime, 1420, 1440, format::Op::kFlush, 0, 0, 0, 0, "", -1)}
                     : std::vector<Row>{io(format::kNoTime, 1100, 1300, format::Op::kFlush, 0, 0, 0, 0, "", -1),
                                        io(format::kNoTime, 1340, 1400, format::Op::kWrite, at, 1024,
                                           format::flag::kSync | format::flag::kMeta, 0, "", -1),
                                        io(format::kNoTime, 1420, 1440, format::Op::kFlush, 0, 0, 0, 0, "", -1)};
    require_same(got.rows, expected);
    std::string notes;
    for (const std::string& n : got.report.notes) notes += n + "\n";
    INFO(notes);
    CHECK(notes.find("matched no D") == std::string::npos);
    CHECK(notes.find("1 C events of no bytes ended a preflush or FUA write's flush sequence") != std::string::npos);
  }
}

TEST_CASE("blktrace: merges, splits, remaps, requeues, partial completions, flushes", "[import][blktrace]") {
  const uint32_t sdb = blk::dev(8, 16), sdb1 = blk::dev(8, 17), dm = blk::dev(253, 0);
  const uint32_t W = blk::kWrite;
  // Two per-CPU files: submissions on CPU 0, completions on CPU 1.
  std::string cpu0, cpu1;
  auto e0 = [&](blk::Event e) { e.cpu = 0; blk::append(cpu0, e); };
  auto e1 = [&](blk::Event e) { e.cpu = 1; blk::append(cpu1, e); };
  e0({.time = 10, .action = blk::kProcessName, .pid = 100, .device = sdb, .payload = blk::comm("fio")});
  e0({.time = 11, .action = blk::kProcessName, .pid = 200, .device = sdb, .payload = blk::comm("dd")});
  // A request grown by a back merge and a front merge: sectors 992..1016.
  e0({.time = 1000, .sector = 1000, .bytes = 4096, .action = blk::Q | W, .pid = 100, .device = sdb});
  e0({.time = 1100, .sector = 1000, .bytes = 4096, .action = blk::G | W, .pid = 100, .device = sdb});
  e0({.time = 1300, .sector = 1008, .bytes = 4096, .action = blk::Q | W, .pid = 100, .device = sdb});
  e0({.time = 1310, .sector = 1008, .bytes = 4096, .action = blk::M | W, .pid = 100, .device = sdb});
  e0({.time = 1400, .sector = 992, .bytes = 4096, .action = blk::Q | W, .pid = 100, .device = sdb});
  e0({.time = 1410, .sector = 992, .bytes = 4096, .action = blk::F | W, .pid = 100, .device = sdb});
  e0({.time = 1500, .sector = 992, .bytes = 12288, .action = blk::I | W, .pid = 100, .device = sdb});
  e0({.time = 2000, .sector = 992, .bytes = 12288, .action = blk::D | W | blk::kSync | blk::kFua, .pid = 7, .device = sdb});
  e1({.time = 3000, .sector = 992, .bytes = 12288, .action = blk::C | W, .device = sdb});
  // A bio queued on a dm device, remapped to a partition and then to the disk.
  e0({.time = 4000, .sector = 50, .bytes = 8192, .action = blk::Q, .pid = 200, .device = dm});
  e0({.time = 4100, .sector = 5000, .bytes = 8192, .action = blk::A, .pid = 200, .device = sdb, .payload = blk::remap(dm, sdb1, 50)});
  e0({.time = 4200, .sector = 7048, .bytes = 8192, .action = blk::A, .pid = 200, .device = sdb, .payload = blk::remap(sdb1, sdb, 5000)});
  e0({.time = 4300, .sector = 7048, .bytes = 8192, .action = blk::Q, .pid = 200, .device = sdb});
  e0({.time = 5000, .sector = 7048, .bytes = 8192, .action = blk::D | blk::kAhead, .device = sdb});
  e1({.time = 6000, .sector = 7048, .bytes = 8192, .action = blk::C | blk::kAhead, .device = sdb});
  e1({.time = 6100, .sector = 50, .bytes = 8192, .action = blk::C, .device = dm});  // dm is bio-based: no D
  e0({.time = 6200, .sector = 900, .bytes = 4096, .action = blk::Q | W, .pid = 200, .device = dm});
  e1({.time = 6300, .sector = 900, .bytes = 4096, .action = blk::C | W, .device = dm});
  // A bio split in two requests.
  e0({.time = 7000, .sector = 20000, .bytes = 16384, .action = blk::Q | W | blk::kCgroup, .pid = 100, .device = sdb,
      .payload = std::string("\x34\x12\0\0\0\0\0\0", 8)});
  e0({.time = 7010, .sector = 20000, .bytes = 8192, .action = blk::X | W, .pid = 100, .device = sdb, .payload = blk::be64(20016)});
  e0({.time = 7100, .sector = 20000, .bytes = 8192, .action = blk::D | W, .device = sdb});
  e0({.time = 7200, .sector = 20016, .bytes = 8192, .action = blk::D | W, .device = sdb});
  e1({.time = 7300, .sector = 20000, .bytes = 8192, .action = blk::C | W, .device = sdb});
  e1({.time = 7400, .sector = 20016, .bytes = 8192, .action = blk::C | W, .device = sdb});
  // Requeued once, then issued again.
  e0({.time = 8000, .sector = 30000, .bytes = 4096, .action = blk::Q, .pid = 100, .device = sdb});
  e0({.time = 8100, .sector = 30000, .bytes = 4096, .action = blk::D, .device = sdb});
  e0({.time = 8200, .sector = 30000, .bytes = 4096, .action = blk::R, .device = sdb});
  e0({.time = 8300, .sector = 30000, .bytes = 4096, .action = blk::D, .device = sdb});
  e1({.time = 8400, .sector = 30000, .bytes = 4096, .action = blk::C, .device = sdb});
  // Completed in two parts.
  e0({.time = 9000, .sector = 40000, .bytes = 8192, .action = blk::Q | W, .pid = 100, .device = sdb});
  e0({.time = 9100, .sector = 40000, .bytes = 8192, .action = blk::D | W, .device = sdb});
  e1({.time = 9200, .sector = 40000, .bytes = 4096, .action = blk::C | W, .device = sdb});
  e1({.time = 9300, .sector = 40008, .bytes = 4096, .action = blk::C | W, .device = sdb});
  // A flush with no Q; a write with a preflush; a failed discard.
  e0({.time = 10000, .action = blk::D | blk::kFlush, .device = sdb});
  e1({.time = 10100, .action = blk::C | blk::kFlush, .device = sdb});
  e0({.time = 11000, .sector = 50000, .bytes = 4096, .action = blk::Q | W | blk::kFlush, .pid = 100, .device = sdb});
  e0({.time = 11100, .sector = 50000, .bytes = 4096, .action = blk::D | W | blk::kFlush, .device = sdb});
  e1({.time = 11200, .sector = 50000, .bytes = 4096, .action = blk::C | W | blk::kFlush, .device = sdb});
  e0({.time = 12000, .sector = 60000, .bytes = 1 << 20, .action = blk::Q | W | blk::kDiscard, .pid = 100, .device = sdb});
  e0({.time = 12100, .sector = 60000, .bytes = 1 << 20, .action = blk::D | W | blk::kDiscard, .device = sdb});
  e1({.time = 12200, .sector = 60000, .bytes = 1 << 20, .action = blk::C | W | blk::kDiscard, .device = sdb,
      .error = static_cast<uint16_t>(-5)});
  // Passthrough commands, a completion of nothing, a request never completed.
  e0({.time = 13000, .bytes = 512, .action = blk::D | blk::kPc, .device = sdb});
  e1({.time = 13100, .bytes = 512, .action = blk::C | blk::kPc, .device = sdb});
  e1({.time = 14000, .sector = 99999, .bytes = 4096, .action = blk::C, .device = sdb});
  e0({.time = 15000, .sector = 123456, .bytes = 4096, .action = blk::Q, .pid = 100, .device = sdb});
  e0({.time = 15100, .sector = 123456, .bytes = 4096, .action = blk::D, .device = sdb});

  TempDir dir;
  write_file(dir.file("t.blktrace.0"), cpu0);
  write_file(dir.file("t.blktrace.1"), cpu1);
  auto got = import_and_read("blktrace", {dir.file("t.blktrace.0"), dir.file("t.blktrace.1")}, dir.file("t.iot"));

  auto io = [](int64_t q, int64_t i, int64_t c, uint64_t sector, uint64_t bytes, format::Op op, uint32_t flags,
               uint32_t pid, std::string comm,
               int32_t cpu) { return event_row("8,16", q, i, c, sector, bytes, op, flags, pid, std::move(comm), cpu); };
  std::vector<Row> want = {
      io(1000, 2000, 3000, 992, 12288, format::Op::kWrite, format::flag::kSync | format::flag::kFua, 100, "fio", 0),
      io(4000, 5000, 6000, 7048, 8192, format::Op::kRead, format::flag::kReadahead, 200, "dd", 0),
      io(7000, 7100, 7300, 20000, 8192, format::Op::kWrite, 0, 100, "fio", 0),
      io(7000, 7200, 7400, 20016, 8192, format::Op::kWrite, 0, 100, "fio", 0),
      io(8000, 8300, 8400, 30000, 4096, format::Op::kRead, 0, 100, "fio", 0),
      io(9000, 9100, 9300, 40000, 8192, format::Op::kWrite, 0, 100, "fio", 0),
      io(format::kNoTime, 10000, 10100, 0, 0, format::Op::kFlush, 0, 0, "", -1),
      io(11000, 11100, 11200, 50000, 4096, format::Op::kWrite, format::flag::kPreflush, 100, "fio", 0),
      io(12000, 12100, 12200, 60000, 1 << 20, format::Op::kDiscard, 0, 100, "fio", 0),
  };
  want[2].cgroup = want[3].cgroup = 0x1234;
  want[8].status = -5;
  require_same(got.rows, want);

  const auto& notes = got.report.notes;
  for (const auto& n : notes) UNSCOPED_INFO("note: " << n);
  auto has = [&](const std::string& text) {
    return std::any_of(notes.begin(), notes.end(), [&](const std::string& n) { return n.find(text) != std::string::npos; });
  };
  CHECK(has("3 C events matched no D"));
  CHECK_FALSE(has("never issued"));
  CHECK(has("1 D events had no Q"));
  CHECK(has("1 requests were issued but not completed"));
  CHECK(has("1 requeues"));
  CHECK(has("2 remap (A) events moved"));
  CHECK(has("2 passthrough (PC) events skipped"));
  CHECK(got.report.skipped == 5);
  CHECK(got.report.ios == want.size());
}

TEST_CASE("blktrace: traces without D, or without C, events give IOs with the times they have", "[import][blktrace]") {
  const uint32_t sda = blk::dev(8, 0), W = blk::kWrite;
  TempDir dir;
  auto import_cpus = [&](const std::string& cpu0, const std::string& cpu1) {
    write_file(dir.file("t.blktrace.0"), cpu0);
    write_file(dir.file("t.blktrace.1"), cpu1);
    return import_and_read("blktrace", {dir.file("t.blktrace.0"), dir.file("t.blktrace.1")}, dir.file("t.iot"));
  };
  auto row = [](int64_t q, int64_t i, int64_t c, uint64_t sector, uint64_t bytes, format::Op op, uint32_t flags = 0) {
    return event_row("8,0", q, i, c, sector, bytes, op, flags);
  };
  auto has = [](const Imported& got, const std::string& text) {
    for (const auto& n : got.report.notes) UNSCOPED_INFO("note: " << n);
    return std::any_of(got.report.notes.begin(), got.report.notes.end(),
                       [&](const std::string& n) { return n.find(text) != std::string::npos; });
  };
  std::string cpu0, cpu1;
  auto e0 = [&](blk::Event e) { e.cpu = 0; blk::append(cpu0, e); };
  auto e1 = [&](blk::Event e) { e.cpu = 1; blk::append(cpu1, e); };

  SECTION("C events only (blktrace -a complete): each C, as issue time") {
    e0({.time = 1000, .sector = 100, .bytes = 4096, .action = blk::C, .device = sda});
    e0({.time = 2000, .sector = 200, .bytes = 8192, .action = blk::C | W | blk::kSync, .device = sda, .error = 5});
    e1({.time = 1500, .sector = 300, .bytes = 4096, .action = blk::C | W | blk::kFua, .device = sda});
    const auto got = import_cpus(cpu0, cpu1);
    std::vector<Row> want = {
        row(format::kNoTime, 1000, format::kNoTime, 100, 4096, format::Op::kRead),
        row(format::kNoTime, 1500, format::kNoTime, 300, 4096, format::Op::kWrite, format::flag::kFua),
        row(format::kNoTime, 2000, format::kNoTime, 200, 8192, format::Op::kWrite, format::flag::kSync)};
    want[2].status = -5;
    require_same(got.rows, want);
    CHECK(got.report.ios == 3);
    CHECK(got.report.skipped == 0);
    CHECK(has(got, "the input carries only C events, no D"));
    CHECK(has(got, "3 IOs have no issue time"));
    CHECK(got.header.metadata().at("import.issue_times") == "Q, else C: the input has no D events");
  }
  SECTION("D events only (blktrace -a issue): issue times") {
    e0({.time = 1000, .sector = 100, .bytes = 4096, .action = blk::D, .device = sda});
    e1({.time = 1200, .sector = 500, .bytes = 4096, .action = blk::D | W | blk::kFlush, .device = sda});
    const auto got = import_cpus(cpu0, cpu1);
    require_same(got.rows,
                 {row(format::kNoTime, 1000, format::kNoTime, 100, 4096, format::Op::kRead),
                  row(format::kNoTime, 1200, format::kNoTime, 500, 4096, format::Op::kWrite, format::flag::kPreflush)});
    CHECK(has(got, "the input carries only D events, no C"));
    CHECK(has(got, "2 IOs have no completion time"));
    CHECK_FALSE(has(got, "not completed when the trace ended"));
    CHECK_FALSE(got.header.metadata().contains("import.issue_times"));
  }
  SECTION("D and C events only (blktrace -a issue,complete): an fsync's empty write is its C alone") {
    e0({.time = 1000, .sector = 100, .bytes = 4096, .action = blk::D | W | blk::kSync, .pid = 7, .device = sda});
    e1({.time = 1300, .sector = 100, .bytes = 4096, .action = blk::C | W | blk::kSync, .device = sda});
    e0({.time = 1400, .action = blk::D | blk::kFlush, .device = sda});  // the flush request
    e1({.time = 1500, .action = blk::C | blk::kFlush, .device = sda});
    e1({.time = 1501, .action = blk::C | W | blk::kSync, .device = sda});  // the empty write, never issued
    const auto got = import_cpus(cpu0, cpu1);
    require_same(got.rows, {row(format::kNoTime, 1000, 1300, 100, 4096, format::Op::kWrite, format::flag::kSync),
                            row(format::kNoTime, 1400, 1500, 0, 0, format::Op::kFlush),
                            row(format::kNoTime, 1501, 1501, 0, 0, format::Op::kWrite,
                                format::flag::kSync | format::flag::kPreflush)});
    CHECK(got.report.skipped == 0);
    CHECK(has(got, "2 D events had no Q"));
  }
  SECTION("C events before the first D: they matched no D, as before") {
    e1({.time = 500, .sector = 900, .bytes = 4096, .action = blk::C, .device = sda});
    e0({.time = 1000, .sector = 100, .bytes = 4096, .action = blk::Q, .pid = 7, .device = sda});
    e0({.time = 1100, .sector = 100, .bytes = 4096, .action = blk::D, .device = sda});
    e1({.time = 1300, .sector = 100, .bytes = 4096, .action = blk::C, .device = sda});
    const auto got = import_cpus(cpu0, cpu1);
    require_same(got.rows, {event_row("8,0", 1000, 1100, 1300, 100, 4096, format::Op::kRead, 0, 7, "", 0)});
    CHECK(got.report.notes == std::vector<std::string>{"1 C events matched no D (issued before the trace started, "
                                                       "or a bio-based device)"});
    CHECK(got.report.skipped == 1);
  }
}

TEST_CASE("blktrace: malformed input fails with file and byte offset", "[import][blktrace][malformed]") {
  std::string good;
  blk::append(good, {.time = 5, .sector = 8, .bytes = 4096, .action = blk::Q, .device = blk::dev(8, 0)});
  SECTION("empty file") { require_import_error("blktrace", "", ": byte 0:", "empty file"); }
  SECTION("a CSV file") {
    require_import_error("blktrace", "128166385295514663,hm,0,Write,9056014336,2048,2833\n", ": byte 0:",
                         "bad magic");
  }
  SECTION("truncated record") { require_import_error("blktrace", good + good.substr(0, 20), ": byte 48:", "truncated"); }
  SECTION("truncated payload") {
    std::string r;
    blk::append(r, {.time = 5, .action = blk::kProcessName, .payload = blk::comm("fio")});
    require_import_error("blktrace", good + r.substr(0, 52), ": byte 48:", "payload");
  }
  SECTION("garbage after a record") { require_import_error("blktrace", good + std::string(48, 'x'), ": byte 48:", "bad magic"); }
  SECTION("unsupported version") {
    std::string r = good;
    r[0] = 0x06;
    require_import_error("blktrace", good + r, ": byte 48:", "version 6");
  }
  SECTION("timestamp overflow") {
    std::string r;
    blk::append(r, {.time = UINT64_MAX, .action = blk::Q});
    require_import_error("blktrace", good + r, ": byte 48:", "timestamp");
  }
  SECTION("sector past 2^64 bytes") {
    std::string r;
    blk::append(r, {.time = 6, .sector = UINT64_MAX / 2, .bytes = 512, .action = blk::D});
    blk::append(r, {.time = 7, .sector = UINT64_MAX / 2, .bytes = 512, .action = blk::C});
    require_import_error("blktrace", good + r, ": byte 96:", "out of range");
  }
  SECTION("remap without its payload") {
    std::string r;
    blk::append(r, {.time = 6, .sector = 8, .bytes = 512, .action = blk::A, .payload = "abc"});
    require_import_error("blktrace", good + r, ": byte 48:", "remap");
  }
  SECTION("cgroup flag without a cgroup id") {
    std::string r;
    blk::append(r, {.time = 6, .action = blk::Q | blk::kCgroup});
    require_import_error("blktrace", good + r, ": byte 48:", "cgroup");
  }
}

// ---- the command ---------------------------------------------------------------

TEST_CASE("iotape import: writes the trace, or nothing when the input is bad", "[import][cli]") {
  TempDir dir;
  const std::string good = dir.file("good.csv"), bad = dir.file("bad.csv");
  write_file(good, "128166385295514663,hm,0,Read,4096,512,10\n");
  write_file(bad, "128166385295514663,hm,0,Read,4096,512,10\n128166385295514663,hm,0,Read,x,512,10\n");
  auto ok = test::run(test::iotape_binary() + " import msr " + good + " -o " + dir.file("good.iot"));
  INFO(ok.output);
  CHECK(ok.exit_code == 0);
  CHECK(ok.output.find("imported 1 IOs") != std::string::npos);
  auto fail = test::run(test::iotape_binary() + " import msr " + bad + " -o " + dir.file("bad.iot"));
  INFO(fail.output);
  CHECK(fail.exit_code != 0);
  CHECK(fail.output.find(bad + ":2:") != std::string::npos);
  CHECK_FALSE(std::ifstream(dir.file("bad.iot")).good());
}

// The trace format: every field round-trips, damage is found and contained,
// seeking works with and without the index.
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zstd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <span>
#include <stdexcept>
#include <thread>

#include "format/chunk_codec.h"
#include "format/chunk_wire.h"
#include "format/decode_ahead.h"
#include "format/error.h"
#include "format/frame.h"
#include "format/reader.h"
#include "format/writer.h"
#include "host/cpu_idle.h"
#include "tests/test_support.h"

using namespace iotape;
using iotape::test::read_file;
using iotape::test::TempDir;
using iotape::test::write_file;

namespace {

// An IO with owned strings, for comparing what was written with what is read.
struct OwnedIo {
  format::Io io;
  std::string comm;
};

std::vector<OwnedIo> random_ios(size_t n, uint32_t seed, uint32_t devices = 3) {
  std::mt19937_64 rng(seed);
  static const std::vector<std::string> comms = {"", "fio", "kworker/u256:1", "postgres: wal", "名前", "x"};
  std::vector<OwnedIo> out(n);
  int64_t t = 1'700'000'000'000'000'000;  // a Unix-epoch-sized start
  for (size_t i = 0; i < n; ++i) {
    format::Io& io = out[i].io;
    t += static_cast<int64_t>(rng() % 200'000);
    io.issue_ns = t;
    io.queue_ns = rng() % 4 ? t - static_cast<int64_t>(rng() % 50'000) : format::kNoTime;
    io.complete_ns = rng() % 5 ? t + static_cast<int64_t>(rng() % 5'000'000) : format::kNoTime;
    io.offset = (rng() % (1ull << 40)) & ~511ull;
    if (rng() % 3 == 0 && i > 0) io.offset = out[i - 1].io.end();  // sequential runs
    io.length = 512 * (1 + rng() % 256);
    io.device = static_cast<uint32_t>(rng() % devices);
    io.op = static_cast<format::Op>(rng() % format::kOpCount);
    io.flags = static_cast<uint32_t>(rng() % 128);
    io.status = rng() % 50 == 0 ? -5 : 0;
    io.pid = rng() % 10 == 0 ? 0 : static_cast<uint32_t>(1000 + rng() % 5);
    out[i].comm = comms[rng() % comms.size()];
    io.cgroup = rng() % 2 ? 4242 + rng() % 3 : 0;
    io.cpu = static_cast<int32_t>(rng() % 3) - 1;
    io.source_index = rng() % 2 ? static_cast<int64_t>(i + rng() % 7) - 3 : -1;
    if (io.source_index < -1) io.source_index = -1;
  }
  for (auto& o : out) o.io.comm = o.comm;
  return out;
}

v1::TraceHeader test_header(uint32_t devices) {
  v1::TraceHeader h;
  h.set_source(v1::SOURCE_SYNTH);
  h.set_host("testhost");
  h.set_clock(v1::CLOCK_DOMAIN_RELATIVE);
  for (uint32_t d = 0; d < devices; ++d) {
    auto* dev = h.add_devices();
    dev->set_major(8);
    dev->set_minor(16 * d);
    dev->set_name("sd" + std::string(1, static_cast<char>('a' + d)));
  }
  return h;
}

void write_trace(const std::string& path, const std::vector<OwnedIo>& ios, format::WriterOptions opt = {},
                 bool close = true) {
  format::TraceWriter w(path, test_header(3), opt);
  for (const auto& o : ios) w.append(o.io);
  if (close) w.close();
}

void require_same(const format::Io& a, const format::Io& b) {
  INFO("issue " << a.issue_ns);
  REQUIRE(a.issue_ns == b.issue_ns);
  REQUIRE(a.queue_ns == b.queue_ns);
  REQUIRE(a.complete_ns == b.complete_ns);
  REQUIRE(a.offset == b.offset);
  REQUIRE(a.length == b.length);
  REQUIRE(a.device == b.device);
  REQUIRE(a.op == b.op);
  REQUIRE(a.flags == b.flags);
  REQUIRE(a.status == b.status);
  REQUIRE(a.pid == b.pid);
  REQUIRE(a.comm == b.comm);
  REQUIRE(a.cgroup == b.cgroup);
  REQUIRE(a.cpu == b.cpu);
  REQUIRE(a.source_index == b.source_index);
}

// A trace of `devices` devices that adds nvme0n1 (259:0) before the IO `at`,
// which it gives that IO and those after it, losing `dropped` events there
// and 5 more at the end.
void write_adding_device(const std::string& path, const std::vector<OwnedIo>& ios, uint32_t devices, size_t at,
                         uint64_t dropped, format::WriterOptions opt) {
  format::TraceWriter w(path, test_header(devices), opt);
  for (size_t i = 0; i < ios.size(); ++i) {
    if (i == at) {
      v1::Device d;
      d.set_major(259);
      d.set_minor(0);
      d.set_name("nvme0n1");
      REQUIRE(w.add_device(d) == devices);
      w.add_dropped(dropped);
    }
    format::Io io = ios[i].io;
    if (i >= at) io.device = devices;
    w.append(io);
  }
  w.add_dropped(5);
  w.close();
}

std::vector<format::Io> read_all(format::TraceReader& r, std::vector<std::string>* comms) {
  std::vector<format::Io> out;
  for (auto b = r.next_batch(); !b.empty(); b = r.next_batch())
    for (const format::Io& io : b) {
      out.push_back(io);
      comms->emplace_back(io.comm);
    }
  for (size_t i = 0; i < out.size(); ++i) out[i].comm = (*comms)[i];
  return out;
}

// Byte offsets of every frame in a trace file (header, chunks, index), found
// by walking the frame headers the way docs/format.md describes.
std::vector<uint64_t> frame_offsets(const std::string& data) {
  std::vector<uint64_t> out;
  uint64_t p = sizeof format::frame::kFileMagic;
  std::string why;
  while (p + format::frame::kHeaderSize <= data.size()) {
    auto h = format::frame::decode_header(data.data() + p, &why);
    if (!h) break;
    out.push_back(p);
    p += format::frame::kHeaderSize + h->stored_len;
  }
  return out;
}

}  // namespace

// What the fast chunk parser must do with any bytes: take them as protobuf
// does, or leave them to protobuf. True when it took them.
bool fast_parse_agrees(const std::string& wire) {
  v1::Chunk fast, slow;
  const bool by_protobuf = slow.ParseFromString(wire);
  if (!format::parse_chunk_fast(wire, &fast)) return false;
  REQUIRE(by_protobuf);
  REQUIRE(fast.SerializeAsString() == slow.SerializeAsString());
  return true;
}

TEST_CASE("the fast chunk parser makes what protobuf makes of a writer's chunks, and leaves other bytes to it") {
  SECTION("chunks of random IOs, of every size up to two 64-byte blocks of a column and beyond") {
    for (size_t n : {1, 2, 7, 8, 9, 63, 64, 65, 71, 72, 73, 128, 1000, 16384}) {
      const auto ios = random_ios(n, static_cast<uint32_t>(n));
      std::vector<format::Io> rows;
      for (const auto& o : ios) rows.push_back(o.io);
      v1::Chunk c;
      format::encode_chunk(rows, 5, &c);
      c.set_dropped_events(3);
      c.set_late_ios(1ull << 40);
      INFO(n << " IOs");
      CHECK(fast_parse_agrees(c.SerializeAsString()));
    }
  }
  SECTION("varints of every length from 1 to 10 bytes, starting at every place in a block") {
    std::mt19937_64 rng(7);
    v1::Chunk c;
    for (int i = 0; i < 5000; ++i) {
      const int bits = static_cast<int>(rng() % 65);  // 0..64 significant bits: 1..10 bytes
      const uint64_t v = bits == 0 ? 0 : (rng() | (1ull << (bits - 1))) >> (64 - bits);
      c.add_queue_to_issue(v);
      c.add_issue_delta(static_cast<int64_t>(v));
      c.add_device(static_cast<uint32_t>(v));
      c.add_status(static_cast<int32_t>(v));
      c.add_pid_delta(-static_cast<int64_t>(v));
    }
    c.set_count(5000);
    c.set_base_issue_ns(-1);
    c.add_comm_table(std::string("\xff\0x", 3));
    c.add_comm_table("");
    c.set_devices_added_base(2);
    c.add_devices_added()->set_name("nvme0n1");
    c.add_devices_added()->set_size_bytes(UINT64_MAX);
    const std::string wire = c.SerializeAsString();
    CHECK(fast_parse_agrees(wire));
    // Every cut of it: a cut at a field's end is a chunk protobuf takes too.
    size_t taken = 0;
    for (size_t len = 0; len < wire.size(); len += 1 + len / 64) taken += fast_parse_agrees(wire.substr(0, len));
    CHECK(taken > 0);
  }
  SECTION("bytes it leaves to protobuf") {
    v1::Chunk c;
    c.set_count(2);
    c.add_op(1);
    c.add_op(2);
    const std::string wire = c.SerializeAsString();
    v1::Chunk out;
    // A field of a later version (50, a varint): protobuf keeps it as unknown.
    CHECK_FALSE(format::parse_chunk_fast(wire + std::string("\x90\x03\x01", 3), &out));
    // op sent unpacked (field 14, wire type 0), as proto2 writers do.
    CHECK_FALSE(format::parse_chunk_fast(wire + std::string("\x70\x01", 2), &out));
    // A varint of 11 bytes, and a column whose last varint runs past its end.
    CHECK_FALSE(format::parse_chunk_fast(std::string("\x08") + std::string(10, '\x80') + "\x01", &out));
    CHECK_FALSE(format::parse_chunk_fast(std::string("\x72\x02\x01\x80", 4), &out));
    // A length past the end, and a group (wire type 3).
    CHECK_FALSE(format::parse_chunk_fast(std::string("\x72\x05\x01", 3), &out));
    CHECK_FALSE(format::parse_chunk_fast(std::string("\x0b\x0c", 2), &out));
    // The reader still reads what protobuf takes.
    CHECK(out.ParseFromString(wire + std::string("\x70\x01", 2)));
    CHECK(out.op_size() == 3);
  }
}

TEST_CASE("every field of every IO round-trips across chunks") {
  TempDir dir;
  const auto ios = random_ios(10'000, 1);
  format::WriterOptions opt;
  opt.chunk_ios = 777;  // many chunks, one partial
  write_trace(dir.file("t.iot"), ios, opt);
  format::TraceReader r(dir.file("t.iot"));
  std::vector<std::string> comms;
  auto got = read_all(r, &comms);
  REQUIRE(got.size() == ios.size());
  for (size_t i = 0; i < got.size(); ++i) require_same(got[i], ios[i].io);
  CHECK_FALSE(r.status().damaged);
  REQUIRE(r.has_index());
  CHECK(r.index()->ios == ios.size());
  CHECK(r.index()->chunks.size() == (10'000 + 776) / 777);
  CHECK(r.header().host() == "testhost");
  CHECK(r.header().format_version() == 1);
  CHECK(r.header().creator() == "iotape");
}

TEST_CASE("extreme values round-trip") {
  TempDir dir;
  std::vector<OwnedIo> ios(4);
  ios[0].io.issue_ns = INT64_MIN + 1;
  ios[0].io.complete_ns = INT64_MAX;
  ios[1].io.issue_ns = INT64_MAX;
  ios[1].io.queue_ns = INT64_MIN + 1;
  ios[1].io.offset = UINT64_MAX - 1;
  ios[1].io.length = 1;
  ios[2].io.issue_ns = 0;
  ios[2].io.offset = 0;
  ios[2].io.length = UINT64_MAX;
  ios[2].io.pid = UINT32_MAX;
  ios[2].io.cgroup = UINT64_MAX;
  ios[2].io.status = INT32_MIN;
  ios[3].io.issue_ns = -5;
  ios[3].io.cpu = INT32_MAX;
  ios[3].io.source_index = INT64_MAX;
  ios[3].io.flags = UINT32_MAX;
  ios[3].comm = std::string(300, 'c') + "\xff\xfe not UTF-8";  // kernels hold any bytes
  ios[3].io.comm = ios[3].comm;
  write_trace(dir.file("x.iot"), ios);
  format::TraceReader r(dir.file("x.iot"));
  std::vector<std::string> comms;
  auto got = read_all(r, &comms);
  REQUIRE(got.size() == 4);
  for (size_t i = 0; i < 4; ++i) require_same(got[i], ios[i].io);
}

TEST_CASE("absent fields leave their columns empty") {
  std::vector<format::Io> ios(100);
  for (size_t i = 0; i < ios.size(); ++i) {
    ios[i].issue_ns = static_cast<int64_t>(i) * 1000;
    ios[i].offset = i * 4096;
    ios[i].length = 4096;
  }
  v1::Chunk c;
  format::encode_chunk(ios, 0, &c);
  CHECK(c.time_quantum_ns() == 1000);
  CHECK(c.offset_shift() == 12);
  CHECK(c.queue_to_issue_size() == 0);
  CHECK(c.issue_to_complete_size() == 0);
  CHECK(c.pid_delta_size() == 0);
  CHECK(c.comm_size() == 0);
  CHECK(c.cpu_size() == 0);
  CHECK(c.cgroup_delta_size() == 0);
  CHECK(c.source_delta_size() == 0);
  CHECK(c.device_size() == 0);
  CHECK(c.status_size() == 0);
  CHECK(c.offset_delta_size() == 0);  // perfectly sequential
  // Columns present: issue deltas (all 1 after the quantum) and lengths (all 1).
  CHECK(c.issue_delta_size() == 100);
  CHECK(c.length_size() == 100);
  std::vector<format::Io> back;
  std::string why;
  REQUIRE(format::check_chunk(c, 1, &why));
  format::decode_chunk(c, &back);
  for (size_t i = 0; i < ios.size(); ++i) require_same(back[i], ios[i]);
}

TEST_CASE("each column decodes on its own to the IOs that were encoded") {
  auto ios = random_ios(3000, 17);
  for (size_t i = 0; i < ios.size(); ++i) {  // a time quantum and an offset unit: both scaled on the way back
    format::Io& io = ios[i].io;
    io.issue_ns = io.issue_ns / 1000 * 1000;
    if (io.has_queue()) io.queue_ns = io.issue_ns - static_cast<int64_t>(i % 7) * 1000;
    if (io.has_complete()) io.complete_ns = io.issue_ns + static_cast<int64_t>(i % 11) * 1000;
    io.offset &= ~4095ull;
    io.length = 4096 * (1 + i % 5);
    if (i % 13 == 0 && i > 0) std::swap(io.issue_ns, ios[i - 1].io.issue_ns);  // negative issue deltas
  }
  std::vector<format::Io> batch;
  for (const auto& o : ios) batch.push_back(o.io);
  v1::Chunk c;
  format::encode_chunk(batch, 500, &c);
  REQUIRE(c.time_quantum_ns() == 1000);
  REQUIRE(c.offset_shift() == 12);
  std::string why;
  REQUIRE(format::check_chunk(c, 3, &why));
  // Uneven ranges: the running sums carry over from one call to the next.
  const std::vector<uint32_t> cuts = {0, 1, 8, 100, 101, 2048, 3000};
  std::vector<int64_t> issue(ios.size(), 0), queue(ios.size(), 0), complete(ios.size(), 0);
  std::vector<uint64_t> offset(ios.size()), length(ios.size()), cgroup(ios.size());
  std::vector<uint32_t> device(ios.size()), flags(ios.size()), pid(ios.size()), comm(ios.size());
  std::vector<int32_t> status(ios.size()), cpu(ios.size());
  std::vector<int64_t> source(ios.size());
  std::vector<format::Op> op(ios.size());
  auto into = [](auto& v) { return [&v](uint32_t i, auto x) { v[i] = x; }; };
  format::ChunkColumns cols(c);
  REQUIRE(cols.size() == ios.size());
  for (size_t k = 0; k + 1 < cuts.size(); ++k) {
    const uint32_t b = cuts[k], e = cuts[k + 1];
    auto issue_at = [&](uint32_t i) { return issue[i]; };
    // Columns in an order unlike the rows', each from its own pass.
    cols.source_index(b, e, into(source));
    cols.cgroup(b, e, into(cgroup));
    cols.offset(b, e, into(offset));
    cols.issue_ns(b, e, into(issue));
    cols.complete_ns(b, e, issue_at, into(complete));
    cols.queue_ns(b, e, issue_at, into(queue));
    cols.length(b, e, into(length));
    cols.device(b, e, into(device));
    cols.op(b, e, into(op));
    cols.flags(b, e, into(flags));
    cols.status(b, e, into(status));
    cols.pid(b, e, into(pid));
    cols.comm(b, e, into(comm));
    cols.cpu(b, e, into(cpu));
  }
  for (size_t i = 0; i < ios.size(); ++i) {
    format::Io io;
    io.issue_ns = issue[i];
    io.queue_ns = queue[i];
    io.complete_ns = complete[i];
    io.offset = offset[i];
    io.length = length[i];
    io.device = device[i];
    io.op = op[i];
    io.flags = flags[i];
    io.status = status[i];
    io.pid = pid[i];
    io.comm = cols.comm_name(comm[i]);
    io.cgroup = cgroup[i];
    io.cpu = cpu[i];
    io.source_index = source[i];
    require_same(io, ios[i].io);
  }
}

TEST_CASE("check_chunk names the first IO with an operation, process or device out of range") {
  const auto ios = random_ios(100, 23);
  std::vector<format::Io> batch;
  for (const auto& o : ios) batch.push_back(o.io);
  v1::Chunk good;
  format::encode_chunk(batch, 1000, &good);
  std::string why;
  REQUIRE(format::check_chunk(good, 3, &why));
  // Device 2 of 2 is out of range.
  REQUIRE_FALSE(format::check_chunk(good, 2, &why));
  size_t first_dev2 = 0;
  while (batch[first_dev2].device != 2) ++first_dev2;
  CHECK(why == "IO " + std::to_string(1000 + first_dev2) + " names device 2 of 2");
  // Values planted in the middle of a block of eight and in the tail of the column.
  for (int at : {13, 98}) {
    INFO("at IO " << at);
    v1::Chunk c = good;
    c.set_op(at + 1, 7);
    c.set_op(at, format::kOpCount);
    REQUIRE_FALSE(format::check_chunk(c, 3, &why));
    CHECK(why == "IO " + std::to_string(1000 + at) + " has unknown operation 6");
    c = good;
    c.set_comm(at, static_cast<uint32_t>(c.comm_table_size()) + 1);
    REQUIRE_FALSE(format::check_chunk(c, 3, &why));
    CHECK(why == "IO " + std::to_string(1000 + at) + " names process " + std::to_string(c.comm_table_size() + 1) +
                     " of " + std::to_string(c.comm_table_size()));
  }
  v1::Chunk c = good;
  c.mutable_length()->RemoveLast();
  REQUIRE_FALSE(format::check_chunk(c, 3, &why));
  CHECK(why == "column length has 99 values for 100 IOs");
}

TEST_CASE("the reorder window sorts and counts what falls outside it") {
  TempDir dir;
  auto ios = random_ios(5000, 2);
  // Swap neighbours: out of order by less than 1 ms.
  for (size_t i = 0; i + 1 < ios.size(); i += 2) std::swap(ios[i], ios[i + 1]);
  for (auto& o : ios) o.io.comm = o.comm;
  // And one IO that arrives far too late.
  OwnedIo late = ios[100];
  late.io.issue_ns = ios[0].io.issue_ns - 1'000'000'000;
  late.comm = "late";
  late.io.comm = late.comm;
  format::WriterOptions opt;
  opt.reorder_window_ns = 1'000'000;
  opt.chunk_ios = 1000;
  {
    format::TraceWriter w(dir.file("r.iot"), test_header(3), opt);
    for (size_t i = 0; i < ios.size(); ++i) {
      w.append(ios[i].io);
      if (i == 3000) w.append(late.io);
    }
    w.close();
    CHECK(w.stats().late_ios == 1);
  }
  format::TraceReader r(dir.file("r.iot"));
  std::vector<std::string> comms;
  auto got = read_all(r, &comms);
  REQUIRE(got.size() == ios.size() + 1);
  CHECK(r.late_ios() == 1);
  size_t out_of_order = 0;
  for (size_t i = 1; i < got.size(); ++i) out_of_order += got[i].issue_ns < got[i - 1].issue_ns;
  CHECK(out_of_order == 1);  // only the late IO, written where it arrived
  CHECK(std::count_if(got.begin(), got.end(), [](const format::Io& io) { return io.comm == "late"; }) == 1);
}

TEST_CASE("dropped events and late devices are kept in the trace") {
  TempDir dir;
  auto ios = random_ios(3000, 3, 1);
  format::WriterOptions opt;
  opt.chunk_ios = 1000;
  write_adding_device(dir.file("d.iot"), ios, 1, 1500, 7, opt);
  for (bool with_index : {true, false}) {
    if (!with_index) {
      // Cut the index off: the chunks alone must carry devices and losses.
      const std::string data = read_file(dir.file("d.iot"));
      auto frames = frame_offsets(data);
      write_file(dir.file("d.iot"), data.substr(0, frames.back()));
    }
    format::TraceReader r(dir.file("d.iot"));
    CHECK(r.has_index() == with_index);
    std::vector<std::string> comms;
    auto got = read_all(r, &comms);
    REQUIRE(got.size() == 3000);
    CHECK(r.dropped_events() == 12);
    REQUIRE(r.header().devices_size() == 2);
    CHECK(r.header().devices(1).name() == "nvme0n1");
    CHECK(got[2999].device == 1);
    CHECK_FALSE(r.status().damaged);
  }
}

TEST_CASE("a trace cut at any chunk boundary or byte reads up to the damage") {
  TempDir dir;
  const auto ios = random_ios(2000, 4);
  format::WriterOptions opt;
  opt.chunk_ios = 100;
  write_trace(dir.file("full.iot"), ios, opt);
  const std::string data = read_file(dir.file("full.iot"));
  const auto frames = frame_offsets(data);
  REQUIRE(frames.size() == 1 + 20 + 1);  // header, chunks, index

  auto check_cut = [&](uint64_t cut) {
    INFO("cut at byte " << cut << " of " << data.size());
    write_file(dir.file("cut.iot"), data.substr(0, cut));
    const uint64_t first_chunk = frames[1];
    if (cut < first_chunk) {
      // Nothing but (part of) the header: not readable as a trace, cleanly refused.
      REQUIRE_THROWS_AS(format::TraceReader(dir.file("cut.iot")), format::TraceError);
      return;
    }
    format::TraceReader r(dir.file("cut.iot"));
    std::vector<std::string> comms;
    auto got = read_all(r, &comms);
    // Complete chunks before the cut are all there, exactly.
    size_t complete = 0;
    for (size_t f = 1; f + 1 < frames.size(); ++f)
      if (frames[f + 1] <= cut) ++complete;
    REQUIRE(got.size() == std::min<size_t>(complete * 100, ios.size()));
    for (size_t i = 0; i < got.size(); ++i) require_same(got[i], ios[i].io);
    // Cut inside the tail: every frame, the index too, is whole.
    const bool in_tail = cut >= data.size() - format::frame::kTailSize;
    const bool at_boundary = std::find(frames.begin(), frames.end(), cut) != frames.end() || in_tail;
    REQUIRE(r.status().damaged == !at_boundary);
    if (!at_boundary) {
      REQUIRE_THAT(r.status().message, Catch::Contains("cut.iot: byte "));
      REQUIRE(r.status().file_offset <= cut);
    }
  };
  for (uint64_t f : frames) check_cut(f);
  for (uint64_t k = 0; k <= format::frame::kTailSize; ++k) check_cut(data.size() - k);
  std::mt19937 rng(5);
  for (int i = 0; i < 300; ++i) check_cut(rng() % data.size());
}

TEST_CASE("frames across the reader's 256 KiB read blocks, and larger than one, read back, and cuts past them too") {
  TempDir dir;
  const auto ios = random_ios(120000, 31);
  for (uint32_t chunk_ios : {700u, 16384u}) {  // many frames across block ends; frames larger than a block
    INFO("chunk_ios " << chunk_ios);
    write_trace(dir.file("big.iot"), ios, {.chunk_ios = chunk_ios});
    const std::string data = read_file(dir.file("big.iot"));
    const auto frames = frame_offsets(data);
    REQUIRE(data.size() > 4 * (256 << 10));
    uint64_t largest = 0;
    for (size_t f = 1; f < frames.size(); ++f) largest = std::max(largest, frames[f] - frames[f - 1]);
    CHECK((chunk_ios == 700 ? largest < (256 << 10) : largest > (256 << 10)));
    for (unsigned ahead : {0u, 4u}) {
      format::TraceReader r(dir.file("big.iot"), {.decode_ahead = ahead});
      std::vector<std::string> comms;
      const auto got = read_all(r, &comms);
      REQUIRE(got.size() == ios.size());
      for (size_t i = 0; i < got.size(); ++i) require_same(got[i], ios[i].io);
      CHECK_FALSE(r.status().damaged);
    }
    std::mt19937 rng(chunk_ios);
    for (int i = 0; i < 6; ++i) {
      const uint64_t cut = (256 << 10) + rng() % (data.size() - (256 << 10));
      INFO("cut at " << cut);
      write_file(dir.file("cut.iot"), data.substr(0, cut));
      format::TraceReader r(dir.file("cut.iot"));
      std::vector<std::string> comms;
      const auto got = read_all(r, &comms);
      size_t complete = 0;
      for (size_t f = 1; f + 1 < frames.size(); ++f) complete += frames[f + 1] <= cut;
      REQUIRE(got.size() == std::min<size_t>(complete * chunk_ios, ios.size()));
      for (size_t k = 0; k < got.size(); ++k) require_same(got[k], ios[k].io);
      CHECK(r.status().damaged);
    }
  }
}

TEST_CASE("next_chunk hands out the chunks next_batch decodes, with the same damage") {
  TempDir dir;
  const auto ios = random_ios(2000, 8);
  format::WriterOptions opt;
  opt.chunk_ios = 300;
  write_trace(dir.file("full.iot"), ios, opt);
  const std::string data = read_file(dir.file("full.iot"));
  const auto frames = frame_offsets(data);
  const uint64_t cut = frames[4] + 50;  // inside the fourth chunk
  write_file(dir.file("cut.iot"), data.substr(0, cut));
  format::TraceReader rows(dir.file("cut.iot"));
  format::TraceReader whole(dir.file("cut.iot"));
  std::vector<format::Io> decoded;
  size_t n = 0;
  for (format::ChunkView v = whole.next_chunk(); v.chunk; v = whole.next_chunk()) {
    CHECK(v.first_row == 0);
    auto batch = rows.next_batch();
    format::decode_chunk(*v.chunk, &decoded);
    REQUIRE(decoded.size() == batch.size());
    for (size_t i = 0; i < batch.size(); ++i) require_same(decoded[i], ios[n + i].io);
    n += batch.size();
  }
  CHECK(rows.next_batch().empty());
  CHECK(n == 900);
  REQUIRE(whole.status().damaged);
  CHECK(whole.status().message == rows.status().message);
  CHECK(whole.status().file_offset == frames[4]);

  // Rows that next() or seek_time() passed are skipped by first_row.
  format::TraceReader r(dir.file("full.iot"));
  format::Io io;
  for (int k = 0; k < 5; ++k) REQUIRE(r.next(io));
  format::ChunkView v = r.next_chunk();
  REQUIRE(v.chunk);
  CHECK(v.first_row == 5);
  CHECK(r.next_chunk().chunk->first_index() == 300);
  r.seek_time(ios[1234].io.issue_ns);
  v = r.next_chunk();
  REQUIRE(v.chunk);
  CHECK(v.chunk->first_index() + v.first_row == 1234);
}

TEST_CASE("flipped bytes are detected, never decoded into garbage") {
  TempDir dir;
  const auto ios = random_ios(2000, 6);
  format::WriterOptions opt;
  opt.chunk_ios = 250;
  write_trace(dir.file("full.iot"), ios, opt);
  const std::string data = read_file(dir.file("full.iot"));
  const auto frames = frame_offsets(data);
  std::mt19937 rng(7);
  int damaged = 0;
  for (int i = 0; i < 400; ++i) {
    std::string bad = data;
    const size_t at = rng() % bad.size();
    bad[at] = static_cast<char>(bad[at] ^ (1 + rng() % 255));
    write_file(dir.file("bad.iot"), bad);
    INFO("flipped byte " << at);
    std::vector<format::Io> got;
    std::vector<std::string> comms;
    try {
      format::TraceReader r(dir.file("bad.iot"));
      got = read_all(r, &comms);
      damaged += r.status().damaged;
    } catch (const format::TraceError& e) {
      REQUIRE(at < frames[1]);  // only header damage may refuse the file
      REQUIRE(std::string(e.what()).find("bad.iot") != std::string::npos);
      continue;
    }
    // Whatever came back is an exact prefix of the original IOs.
    REQUIRE(got.size() <= ios.size());
    for (size_t k = 0; k < got.size(); ++k) require_same(got[k], ios[k].io);
  }
  CHECK(damaged > 300);
}

TEST_CASE("skip_damaged reads past a corrupt chunk") {
  TempDir dir;
  const auto ios = random_ios(1000, 8);
  format::WriterOptions opt;
  opt.chunk_ios = 100;
  write_trace(dir.file("t.iot"), ios, opt);
  std::string data = read_file(dir.file("t.iot"));
  const auto frames = frame_offsets(data);
  data[frames[4] + format::frame::kHeaderSize + 10] ^= 0x55;  // inside chunk 3's payload
  write_file(dir.file("t.iot"), data);

  format::TraceReader strict(dir.file("t.iot"));
  std::vector<std::string> c1;
  CHECK(read_all(strict, &c1).size() == 300);
  CHECK(strict.status().damaged);
  CHECK(strict.status().file_offset == frames[4]);
  CHECK(strict.status().message.find("checksum") != std::string::npos);

  format::TraceReader lenient(dir.file("t.iot"), format::ReaderOptions{.skip_damaged = true});
  std::vector<std::string> c2;
  auto got = read_all(lenient, &c2);
  REQUIRE(got.size() == 900);
  require_same(got[300], ios[400].io);
  CHECK(lenient.status().skipped_regions == 1);
}

TEST_CASE("chunks hold at most 16,384 IOs and 10 s of issue time by default") {
  TempDir dir;
  // 40,000 IOs at one instant: chunks of 16,384, 16,384 and 7,232 IOs.
  std::vector<OwnedIo> dense = random_ios(40'000, 11);
  for (auto& o : dense) o.io.issue_ns = 1'000, o.io.queue_ns = format::kNoTime, o.io.complete_ns = format::kNoTime;
  write_trace(dir.file("dense.iot"), dense, format::WriterOptions{});
  format::TraceReader d(dir.file("dense.iot"));
  REQUIRE(d.index());
  std::vector<uint32_t> counts;
  for (const auto& e : d.index()->chunks) counts.push_back(e.count);
  CHECK(counts == std::vector<uint32_t>{16'384, 16'384, 7'232});

  // 100 IOs 0.5 s apart (0 .. 49.5 s): an IO 10 s after its chunk's first starts
  // the next, so 5 chunks of 20 IOs, each spanning 9.5 s.
  std::vector<OwnedIo> sparse = random_ios(100, 12);
  for (size_t i = 0; i < sparse.size(); ++i) {
    format::Io& io = sparse[i].io;
    io.issue_ns = static_cast<int64_t>(i) * 500'000'000;
    io.queue_ns = io.complete_ns = format::kNoTime;
  }
  write_trace(dir.file("sparse.iot"), sparse, format::WriterOptions{});
  format::TraceReader s(dir.file("sparse.iot"));
  REQUIRE(s.index());
  REQUIRE(s.index()->chunks.size() == 5);
  for (int k = 0; k < 5; ++k) {
    CHECK(s.index()->chunks[k].count == 20);
    CHECK(s.index()->chunks[k].min_issue_ns == k * 10'000'000'000);
    CHECK(s.index()->chunks[k].max_issue_ns == k * 10'000'000'000 + 9'500'000'000);
  }
  std::vector<std::string> comms;
  const auto got = read_all(s, &comms);
  REQUIRE(got.size() == sparse.size());
  for (size_t i = 0; i < got.size(); ++i) require_same(got[i], sparse[i].io);
}

TEST_CASE("metadata set after the first chunk is read back with the header's, rotated parts in order") {
  TempDir dir;
  const auto ios = random_ios(300, 13);
  format::WriterOptions opt;
  opt.chunk_ios = 100;
  for (int part = 0; part < 2; ++part) {
    v1::TraceHeader h = test_header(3);
    (*h.mutable_metadata())["capture.backend"] = "ebpf";
    format::TraceWriter w(dir.file("p" + std::to_string(part) + ".iot"), h, opt);
    for (size_t i = part * 150u; i < part * 150u + 150; ++i) w.append(ios[i].io);
    w.set_metadata("capture.unmatched_completions", std::to_string(part + 1));  // the last part's total wins
    if (part == 0) w.set_metadata("capture.part0_only", "x");
    w.close();
  }
  format::TraceReader one(dir.file("p0.iot"));
  CHECK(one.header().metadata().size() == 1);  // the header keeps what was known at its writing
  CHECK(one.metadata() == std::map<std::string, std::string>{
                              {"capture.backend", "ebpf"}, {"capture.part0_only", "x"}, {"capture.unmatched_completions", "1"}});
  format::TraceReader both({dir.file("p0.iot"), dir.file("p1.iot")});
  CHECK(both.metadata() == std::map<std::string, std::string>{
                               {"capture.backend", "ebpf"}, {"capture.part0_only", "x"}, {"capture.unmatched_completions", "2"}});
  // A file whose writer died before the index has no end keys.
  const std::string data = read_file(dir.file("p0.iot"));
  write_file(dir.file("open.iot"), data.substr(0, frame_offsets(data).back()));
  format::TraceReader open(dir.file("open.iot"));
  CHECK_FALSE(open.index());
  CHECK(open.metadata() == std::map<std::string, std::string>{{"capture.backend", "ebpf"}});
}

TEST_CASE("seek_time lands on the first IO at or after the time, with and without index") {
  TempDir dir;
  const auto ios = random_ios(5000, 9);
  format::WriterOptions opt;
  opt.chunk_ios = 300;
  write_trace(dir.file("t.iot"), ios, opt);
  std::string no_index = read_file(dir.file("t.iot"));
  no_index.resize(frame_offsets(no_index).back());
  write_file(dir.file("n.iot"), no_index);
  for (const char* name : {"t.iot", "n.iot"}) {
    format::TraceReader r(dir.file(name));
    CHECK(r.has_index() == (std::string(name) == "t.iot"));
    for (size_t target : {size_t{0}, size_t{1}, size_t{299}, size_t{300}, size_t{2500}, size_t{4999}}) {
      INFO(name << " target " << target);
      r.seek_time(ios[target].io.issue_ns);
      format::Io io;
      REQUIRE(r.next(io));
      // IOs may share an issue time; the first of them is the answer.
      size_t expect = target;
      while (expect > 0 && ios[expect - 1].io.issue_ns == ios[target].io.issue_ns) --expect;
      REQUIRE(io.issue_ns == ios[expect].io.issue_ns);
      REQUIRE(io.offset == ios[expect].io.offset);
      // Batches continue where the seek landed, too.
      r.seek_time(ios[target].io.issue_ns);
      auto batch = r.next_batch();
      REQUIRE_FALSE(batch.empty());
      REQUIRE(batch.front().offset == ios[expect].io.offset);
      const int64_t last = batch.back().issue_ns;  // the span is reused by the next call
      auto following = r.next_batch();
      if (!following.empty()) REQUIRE(following.front().issue_ns >= last);
    }
    r.seek_time(ios.back().io.issue_ns + 1);
    format::Io io;
    CHECK_FALSE(r.next(io));
  }
}

TEST_CASE("several files read as one trace") {
  TempDir dir;
  const auto ios = random_ios(3000, 10);
  format::WriterOptions opt;
  opt.chunk_ios = 400;
  std::vector<OwnedIo> a(ios.begin(), ios.begin() + 1000), b(ios.begin() + 1000, ios.end());
  write_trace(dir.file("p0.iot"), a, opt);
  write_trace(dir.file("p1.iot"), b, opt);
  format::TraceReader r({dir.file("p0.iot"), dir.file("p1.iot")});
  std::vector<std::string> comms;
  auto got = read_all(r, &comms);
  REQUIRE(got.size() == 3000);
  for (size_t i = 0; i < got.size(); ++i) require_same(got[i], ios[i].io);
  r.seek_time(ios[2000].io.issue_ns);
  format::Io io;
  REQUIRE(r.next(io));
  CHECK(io.issue_ns == ios[2000].io.issue_ns);
  // Back into the first file after reading into the second: the second is
  // read again from its start, with and without decode_ahead.
  for (const unsigned ahead : {0u, 2u}) {
    INFO("decode_ahead " << ahead);
    format::TraceReader back({dir.file("p0.iot"), dir.file("p1.iot")}, {.decode_ahead = ahead});
    back.seek_time(ios[2500].io.issue_ns);
    REQUIRE(back.next(io));
    back.seek_time(ios[500].io.issue_ns);
    size_t expect = 500;
    while (expect > 0 && ios[expect - 1].io.issue_ns == ios[500].io.issue_ns) --expect;
    std::vector<std::string> rest_comms;
    const auto rest = read_all(back, &rest_comms);
    REQUIRE(rest.size() == ios.size() - expect);
    for (size_t i = 0; i < rest.size(); ++i) require_same(rest[i], ios[expect + i].io);
  }
}

TEST_CASE("a writer killed without close leaves every flushed chunk readable") {
  TempDir dir;
  const auto ios = random_ios(1000, 11);
  const std::string path = dir.file("killed.iot");
  pid_t child = ::fork();
  if (child == 0) {
    format::WriterOptions opt;
    opt.durability = format::Durability::kWrite;
    opt.flush_interval_ns = 0;  // every tick flushes
    format::TraceWriter w(path, test_header(3), opt);
    for (size_t i = 0; i < 600; ++i) w.append(ios[i].io);
    w.tick();
    for (size_t i = 600; i < 1000; ++i) w.append(ios[i].io);  // never flushed
    ::kill(::getpid(), SIGKILL);
  }
  int st = 0;
  ::waitpid(child, &st, 0);
  REQUIRE(WIFSIGNALED(st));
  format::TraceReader r(path);
  std::vector<std::string> comms;
  auto got = read_all(r, &comms);
  REQUIRE(got.size() == 600);
  for (size_t i = 0; i < got.size(); ++i) require_same(got[i], ios[i].io);
  CHECK_FALSE(r.has_index());
  CHECK_FALSE(r.status().damaged);
}

TEST_CASE("a full disk stops the writer with a clear error and a valid file") {
  if (!iotape::test::require_root("mount a small tmpfs")) return;
  TempDir dir;
  REQUIRE(::mount("tmpfs", dir.path().c_str(), "tmpfs", 0, "size=64k") == 0);
  struct Unmount {
    std::string p;
    ~Unmount() { ::umount2(p.c_str(), MNT_DETACH); }
  } unmount{dir.path()};
  // Random data does not compress: a few thousand IOs overflow 64 KiB.
  const auto ios = random_ios(20'000, 12);
  format::WriterOptions opt;
  opt.chunk_ios = 200;
  std::string message;
  uint64_t written = 0;
  {
    format::TraceWriter w(dir.file("full.iot"), test_header(3), opt);
    try {
      for (const auto& o : ios) w.append(o.io);
      w.close();
    } catch (const format::TraceError& e) {
      message = e.what();
    }
    written = w.stats().ios;
  }
  REQUIRE_THAT(message, Catch::Contains("full.iot") && Catch::Contains("No space left on device"));
  REQUIRE(written > 0);
  format::TraceReader r(dir.file("full.iot"));
  std::vector<std::string> comms;
  auto got = read_all(r, &comms);
  CHECK(got.size() == written);
  CHECK_FALSE(r.status().damaged);
}

namespace {

// What a reader's stage (ReaderOptions::each_batch) saw, kept apart from the
// test's thread: Catch's checks are made after reading, on this thread.
struct StageLog {
  std::vector<OwnedIo> ios;
  size_t calls = 0;
  bool devices_known = true;  // every IO's device was in the header it came with
  // The IOs, their names pointing at their own copies.
  const std::vector<OwnedIo>& owned() {
    for (auto& o : ios) o.io.comm = o.comm;
    return ios;
  }
  format::ReaderStage stage() {
    return [this](std::span<const format::Io> batch, const v1::TraceHeader& h) {
      ++calls;
      for (const format::Io& io : batch) {
        ios.push_back({io, std::string(io.comm)});
        devices_known &= io.device < static_cast<uint32_t>(std::max(h.devices_size(), 1));
      }
    };
  }
};

// Reads `paths` twice, serially and with decode_ahead, in the same mixed steps
// (batches, single IOs, whole chunks, seeks), and requires the same IOs and
// the same state (devices, losses, damage) after every step. Without seeks
// the reader with decode_ahead has a stage, which must see the IOs it
// returned, in order, each once. Returns the IOs.
size_t require_decode_ahead_same(const std::vector<std::string>& paths, format::ReaderOptions opt,
                                 const std::vector<int64_t>& seeks = {}) {
  format::TraceReader serial(paths, opt);
  opt.decode_ahead = 2;
  auto log = std::make_unique<StageLog>();
  if (seeks.empty()) opt.each_batch = log->stage();
  std::vector<OwnedIo> returned;
  format::TraceReader ahead(paths, opt);
  auto same_state = [&] {
    REQUIRE(ahead.header().devices_size() == serial.header().devices_size());
    REQUIRE(ahead.dropped_events() == serial.dropped_events());
    REQUIRE(ahead.late_ios() == serial.late_ios());
    REQUIRE(ahead.status().damaged == serial.status().damaged);
    REQUIRE(ahead.status().message == serial.status().message);
    REQUIRE(ahead.status().file_offset == serial.status().file_offset);
    REQUIRE(ahead.status().skipped_regions == serial.status().skipped_regions);
  };
  CHECK(ahead.metadata() == serial.metadata());
  CHECK(ahead.has_index() == serial.has_index());
  size_t ios = 0;
  std::vector<format::Io> decoded;
  for (size_t step = 0, seek = 0;; ++step) {
    INFO("step " << step);
    if (step % 7 == 6 && seek < seeks.size()) {
      serial.seek_time(seeks[seek]);
      ahead.seek_time(seeks[seek++]);
    } else if (step % 3 == 1) {
      format::Io a, b;
      const bool more = serial.next(a);
      REQUIRE(ahead.next(b) == more);
      if (!more) break;
      require_same(b, a);
      returned.push_back({b, std::string(b.comm)});
      ++ios;
    } else if (step % 3 == 2) {
      const format::ChunkView a = serial.next_chunk(), b = ahead.next_chunk();
      REQUIRE(bool(b.chunk) == bool(a.chunk));
      if (!a.chunk) break;
      REQUIRE(b.first_row == a.first_row);
      REQUIRE(b.chunk->SerializeAsString() == a.chunk->SerializeAsString());
      std::vector<format::Io> rows;
      format::decode_chunk(*b.chunk, &rows);
      for (size_t i = b.first_row; i < rows.size(); ++i) returned.push_back({rows[i], std::string(rows[i].comm)});
      ios += a.chunk->count() - a.first_row;
    } else {
      const auto a = serial.next_batch();
      const std::vector<format::Io> rows(a.begin(), a.end());
      const auto b = ahead.next_batch();
      REQUIRE(b.size() == rows.size());
      if (rows.empty()) break;
      for (size_t i = 0; i < rows.size(); ++i) require_same(b[i], rows[i]);
      for (const format::Io& io : b) returned.push_back({io, std::string(io.comm)});
      ios += rows.size();
    }
    same_state();
  }
  same_state();
  if (seeks.empty()) {
    const auto& staged = log->owned();
    REQUIRE(staged.size() == returned.size());
    for (size_t i = 0; i < returned.size(); ++i) {
      INFO("IO " << i);
      returned[i].io.comm = returned[i].comm;
      require_same(staged[i].io, returned[i].io);
    }
    CHECK(log->devices_known);
  }
  return ios;
}

}  // namespace

TEST_CASE("decode_ahead reads what the serial reader reads: cut, corrupt, rotated, seeking") {
  TempDir dir;
  const auto ios = random_ios(6000, 21);
  // Parts of many chunks and of few; chunks shorter than a slice the thread
  // decodes and stages at a time, and longer.
  const uint32_t chunk = GENERATE(250u, 700u);
  static_assert(format::kDecodeSlice > 250 && format::kDecodeSlice < 700);
  const format::WriterOptions opt{.chunk_ios = chunk};
  // Two rotated parts; the second adds a device and counts lost events.
  write_trace(dir.file("p0.iot"), {ios.begin(), ios.begin() + 2500}, opt);
  write_adding_device(dir.file("p1.iot"), {ios.begin() + 2500, ios.end()}, 3, 1500, 9, opt);
  const std::vector<std::string> parts = {dir.file("p0.iot"), dir.file("p1.iot")};
  CHECK(require_decode_ahead_same(parts, {}) == ios.size());
  const std::vector<int64_t> seeks = {ios[3000].io.issue_ns, ios[10].io.issue_ns, ios[5990].io.issue_ns,
                                      ios.back().io.issue_ns + 1, ios[0].io.issue_ns};
  require_decode_ahead_same(parts, {}, seeks);

  // The second part cut short, at frame boundaries and inside frames, with and without its index.
  const std::string data = read_file(dir.file("p1.iot"));
  const auto frames = frame_offsets(data);
  std::mt19937 rng(22);
  std::vector<uint64_t> cuts(frames.begin() + 1, frames.end());
  for (int i = 0; i < 20; ++i) cuts.push_back(frames[1] + rng() % (data.size() - frames[1]));
  for (uint64_t cut : cuts) {
    INFO("cut at byte " << cut);
    write_file(dir.file("cut.iot"), data.substr(0, cut));
    const std::vector<std::string> cut_parts = {dir.file("p0.iot"), dir.file("cut.iot")};
    CHECK(require_decode_ahead_same(cut_parts, {}) >= 2500);
    require_decode_ahead_same(cut_parts, {}, seeks);
  }

  // A corrupt chunk: the stream ends there, or is read past with skip_damaged.
  std::string corrupt = data;
  corrupt[frames[5] + format::frame::kHeaderSize + 10] ^= 0x55;
  write_file(dir.file("bad.iot"), corrupt);
  const std::vector<std::string> bad_parts = {dir.file("p0.iot"), dir.file("bad.iot")};
  CHECK(require_decode_ahead_same(bad_parts, {}) == 2500 + 4 * chunk);
  CHECK(require_decode_ahead_same(bad_parts, {.skip_damaged = true}) == ios.size() - chunk);

  // Chunks whose checksums hold but whose contents do not: found only when
  // parsed or checked, by whichever thread opens them.
  v1::Chunk short_columns;
  short_columns.set_count(5);
  short_columns.add_op(1);  // one operation for five IOs
  for (const std::string& payload : {std::string("\x08"), short_columns.SerializeAsString()}) {
    INFO("payload " << payload.size() << " bytes");
    const format::frame::FrameHeader h{format::frame::Kind::kChunk, format::frame::Codec::kRaw,
                                       static_cast<uint32_t>(payload.size()), static_cast<uint32_t>(payload.size()),
                                       format::frame::crc32(payload)};
    char header[format::frame::kHeaderSize];
    format::frame::encode_header(h, header);
    write_file(dir.file("unsound.iot"),
               data.substr(0, frames[5]) + std::string(header, sizeof header) + payload + data.substr(frames[6]));
    const std::vector<std::string> unsound = {dir.file("p0.iot"), dir.file("unsound.iot")};
    CHECK(require_decode_ahead_same(unsound, {}) == 2500 + 4 * chunk);
    CHECK(require_decode_ahead_same(unsound, {.skip_damaged = true}) == ios.size() - chunk);
    require_decode_ahead_same(unsound, {.skip_damaged = true}, seeks);
  }
}

TEST_CASE("a reader's stage sees every IO once and in order, its error reaches the caller, and it asks for decode_ahead") {
  TempDir dir;
  const auto ios = random_ios(60000, 24);
  // Chunks of one slice, and of several, which the reader's thread stages slice by slice as it decodes them.
  const uint32_t chunk = GENERATE(100u, 1000u);
  static_assert(format::kDecodeSlice >= 100 && format::kDecodeSlice < 1000);
  write_trace(dir.file("t.iot"), ios, {.chunk_ios = chunk});
  // The caller slow, as a report is: the stage runs ahead on the reader's thread.
  auto log = std::make_unique<StageLog>();
  {
    format::TraceReader r(dir.file("t.iot"), {.decode_ahead = 2, .each_batch = log->stage()});
    size_t n = 0;
    for (auto b = r.next_batch(); !b.empty(); b = r.next_batch()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      n += b.size();
    }
    CHECK(n == ios.size());
  }
  const auto& staged_ios = log->owned();
  REQUIRE(staged_ios.size() == ios.size());
  if (chunk > format::kDecodeSlice) CHECK(log->calls > ios.size() / chunk);
  for (size_t i = 0; i < ios.size(); ++i) require_same(staged_ios[i].io, ios[i].io);

  // A stage that throws once it has seen more than 1500 IOs: the caller gets
  // the error before the end, once it has read the chunks before.
  size_t seen = 0;
  format::TraceReader r(dir.file("t.iot"),
                        {.decode_ahead = 2, .each_batch = [&](std::span<const format::Io> b, const v1::TraceHeader&) {
                           if ((seen += b.size()) > 1500) throw std::runtime_error("stage failed");
                         }});
  size_t read = 0;
  const auto read_all_batches = [&] {
    for (auto b = r.next_batch(); !b.empty(); b = r.next_batch()) read += b.size();
  };
  CHECK_THROWS_WITH(read_all_batches(), "stage failed");
  CHECK(read >= 1500 / chunk * chunk);  // the chunks before the one it failed at

  const auto none = [](std::span<const format::Io>, const v1::TraceHeader&) {};
  CHECK_THROWS_AS(format::TraceReader(dir.file("t.iot"), {.each_batch = none}), std::logic_error);
  format::TraceReader staged(dir.file("t.iot"), {.decode_ahead = 2, .each_batch = none});
  CHECK_THROWS_AS(staged.seek_time(ios[10].io.issue_ns), std::logic_error);
}

TEST_CASE("DecodeAhead hands items over in order, at most depth ahead, and the producer's error after them") {
  std::atomic<int> made = 0;
  format::DecodeAhead<int> pipe(2, [&](int& out) {
    if (made == 5) throw std::runtime_error("unreadable");
    out = made++;
    return true;
  });
  pipe.start();
  CHECK(pipe.next() == 0);
  for (int i = 0; i < 500 && made < 3; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(made == 3);  // the one held and two ahead, no more
  for (int i = 1; i < 5; ++i) CHECK(pipe.next() == i);
  CHECK_THROWS_WITH(pipe.next(), "unreadable");
  CHECK_THROWS_WITH(pipe.next(), "unreadable");
  pipe.stop();
  made = 3;
  pipe.start();
  CHECK(pipe.next() == 3);
}

TEST_CASE("DecodeAhead lets the consumer keep an item past next(), and works idle while every item is out") {
  std::atomic<int> made = 0, idle_calls = 0;
  std::atomic<bool> idle_work = true;
  format::DecodeAhead<int> pipe(
      1,
      [&](int& out) {
        out = made++;
        return true;
      },
      [&] {
        ++idle_calls;
        return idle_work.exchange(false);  // one piece of work, then none
      });
  pipe.start();
  int& first = pipe.next();
  CHECK(first == 0);
  auto kept = pipe.keep_held();
  CHECK(pipe.next() == 1);
  CHECK(*kept == 0);  // not produced into while kept
  for (int i = 0; i < 500 && made < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(made == 2);        // every item out: one kept, one held
  CHECK(idle_calls == 2);  // worked once, then found nothing and waited
  pipe.give_back(std::move(kept));
  CHECK(pipe.next() == 2);
  pipe.stop();
}

TEST_CASE(
    "DecodeAhead tells the producer whether the consumer waits for the "
    "item it makes") {
  std::atomic<bool> got_first = false;
  bool waited_for_first = false, waited_for_second = true;
  int made = 0;
  format::DecodeAhead<int>* self = nullptr;
  format::DecodeAhead<int> pipe(1, [&](int& out) {
    if (made == 0) {  // the consumer asks before the first item exists
      for (int i = 0; i < 5000 && !self->consumer_waiting(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      waited_for_first = self->consumer_waiting();
    } else {  // the consumer holds the first item and does not ask yet
      while (!got_first) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      waited_for_second = self->consumer_waiting();
    }
    out = made++;
    return made < 2;
  });
  self = &pipe;
  pipe.start();
  CHECK(pipe.next() == 0);
  got_first = true;
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(pipe.next() == 1);
  pipe.stop();
  CHECK(waited_for_first);
  CHECK_FALSE(waited_for_second);
}

TEST_CASE("decode_ahead keeps the caller's IOs valid until its next call, whatever the thread decodes") {
  TempDir dir;
  const auto ios = random_ios(3000, 23);
  write_trace(dir.file("t.iot"), ios, {.chunk_ios = 100});
  format::TraceReader r(dir.file("t.iot"), {.decode_ahead = 1});
  size_t n = 0;
  for (auto b = r.next_batch(); !b.empty(); b = r.next_batch()) {
    // Time for the thread to fill every buffer it has before the batch is read.
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    for (const format::Io& io : b) require_same(io, ios[n++].io);
  }
  CHECK(n == ios.size());
}

TEST_CASE("files that are not traces are refused with the file and offset") {
  TempDir dir;
  write_file(dir.file("empty.iot"), "");
  write_file(dir.file("text.iot"), "hello, I am a CSV file\n1,2,3\n");
  REQUIRE_THROWS_WITH(format::TraceReader(dir.file("empty.iot")),
                      Catch::Contains("empty.iot: byte 0: not an iotape trace"));
  REQUIRE_THROWS_WITH(format::TraceReader(dir.file("text.iot")), Catch::Contains("text.iot: byte 0"));
  REQUIRE_THROWS_WITH(format::TraceReader(dir.file("missing.iot")), Catch::Contains("missing.iot: cannot open trace"));
}

TEST_CASE("the same IOs and metadata give the same bytes") {
  TempDir dir;
  const auto ios = random_ios(2000, 13);
  for (const char* name : {"a.iot", "b.iot"}) {
    v1::TraceHeader h = test_header(3);
    for (int k = 0; k < 50; ++k) (*h.mutable_metadata())["key" + std::to_string(k)] = std::to_string(k);
    format::TraceWriter w(dir.file(name), h);
    for (const auto& o : ios) w.append(o.io);
    for (int k = 0; k < 50; ++k) w.set_metadata("late" + std::to_string(k), "v");
    w.close();
  }
  CHECK(read_file(dir.file("a.iot")) == read_file(dir.file("b.iot")));
}

TEST_CASE("IOs with equal issue times keep their arrival order through the reorder window") {
  TempDir dir;
  format::WriterOptions opt;
  opt.reorder_window_ns = 1'000'000;
  {
    format::TraceWriter w(dir.file("ties.iot"), test_header(1), opt);
    for (uint64_t i = 0; i < 5000; ++i) {
      format::Io io;
      io.issue_ns = static_cast<int64_t>(i / 100) * 1000;  // runs of 100 equal times
      io.offset = i * 4096;
      io.length = 4096;
      w.append(io);
    }
    w.close();
  }
  format::TraceReader r(dir.file("ties.iot"));
  format::Io io;
  for (uint64_t i = 0; r.next(io); ++i) REQUIRE(io.offset == i * 4096);
}

TEST_CASE("chunks encode to the same bytes as in earlier versions") {
  // Names as a writer passes them: interned, so a repeated name is the same view.
  static const std::string names[] = {"fio", "kworker/u256:1", "fio", "名前"};
  auto interned = [](std::vector<OwnedIo> ios) {
    for (size_t i = 0; i < ios.size(); ++i) ios[i].io.comm = i % 5 ? names[i / 9 % 4] : std::string_view();
    return ios;
  };
  // Every time a multiple of 1000 (a microsecond source): the quantum is 1000,
  // or 1 when `odd` is an IO whose issue time is 1 ns off.
  auto microseconds = [](std::vector<OwnedIo> ios, size_t odd) {
    for (size_t i = 0; i < ios.size(); ++i) {
      format::Io& io = ios[i].io;
      auto us = [](int64_t t) { return t == format::kNoTime ? t : t / 1000 * 1000; };
      io.issue_ns = us(io.issue_ns) + (i == odd ? 1 : 0);
      io.queue_ns = us(io.queue_ns);
      io.complete_ns = us(io.complete_ns);
      if (i % 3 == 0 && i > 0) std::swap(io.issue_ns, ios[i - 1].io.issue_ns);  // negative issue deltas
    }
    return ios;
  };
  // Size and CRC of the encoded chunk, as the encoder of earlier versions made it.
  auto digest = [](const std::vector<OwnedIo>& ios, uint64_t first_index) {
    std::vector<format::Io> batch;
    for (const auto& o : ios) batch.push_back(o.io);
    v1::Chunk c;
    format::encode_chunk(batch, first_index, &c);
    const std::string bytes = c.SerializeAsString();
    return std::to_string(bytes.size()) + ":" + std::to_string(format::frame::crc32(bytes));
  };
  const auto ios = random_ios(3000, 31);
  CHECK(digest(ios, 0) == "70203:2440446248");
  CHECK(digest(interned(ios), 77) == "71693:2868333693");
  CHECK(digest(microseconds(ios, SIZE_MAX), 0) == "59474:3535224679");
  CHECK(digest(microseconds(interned(ios), 2999), 5) == "70408:2058145307");
  CHECK(digest(microseconds(ios, 0), 0) == "70426:1944585487");
  CHECK(digest(microseconds(ios, 1500), 0) == "70426:1520178126");
  std::vector<OwnedIo> one(ios.begin(), ios.begin() + 1);
  CHECK(digest(one, 9) == "62:3127135077");
}

TEST_CASE("compress gives the bytes of a one-shot ZSTD_compress, call after call") {
  std::mt19937_64 rng(5);
  for (int k = 0; k < 40; ++k) {
    std::string raw(rng() % 300'000, '\0');
    for (size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<char>(rng() % (1 + k % 7 * 40));
    const int level = k % 5 == 0 ? 1 + static_cast<int>(rng() % 19) : 9;
    std::string want(ZSTD_compressBound(raw.size()), '\0');
    want.resize(ZSTD_compress(want.data(), want.size(), raw.data(), raw.size(), level));
    INFO("call " << k << ", " << raw.size() << " bytes at level " << level);
    REQUIRE(format::frame::compress(raw, level) == want);
  }
}

TEST_CASE("describe_cpu_idle: driver, governor, CPU 0's idle states and haltpoll's poll time from sysfs") {
  TempDir sys;
  const std::string idle = sys.path() + "/devices/system/cpu/cpuidle", cpu0 = sys.path() + "/devices/system/cpu/cpu0/cpuidle";
  CHECK(host::describe_cpu_idle(sys.path()).empty());  // no cpuidle at all
  std::filesystem::create_directories(idle);
  for (const char* state : {"state0", "state1", "state2"}) std::filesystem::create_directories(cpu0 + "/" + state);
  write_file(idle + "/current_driver", "intel_idle\n");
  write_file(idle + "/current_governor_ro", "menu\n");
  write_file(cpu0 + "/state0/name", "POLL\n");
  write_file(cpu0 + "/state0/disable", "0\n");
  write_file(cpu0 + "/state1/name", "C1E\n");
  write_file(cpu0 + "/state1/disable", "0\n");
  write_file(cpu0 + "/state2/name", "C6\n");
  write_file(cpu0 + "/state2/disable", "1\n");
  CHECK(host::describe_cpu_idle(sys.path()) == "driver intel_idle, governor menu, states POLL + C1E + C6 (disabled)");
  write_file(idle + "/current_governor", "haltpoll\n");
  std::filesystem::create_directories(sys.path() + "/module/haltpoll/parameters");
  write_file(sys.path() + "/module/haltpoll/parameters/guest_halt_poll_ns", "200000\n");
  CHECK(host::describe_cpu_idle(sys.path()) ==
        "driver intel_idle, governor haltpoll, states POLL + C1E + C6 (disabled), guest_halt_poll_ns 200000");
}

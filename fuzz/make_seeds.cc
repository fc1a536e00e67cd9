// Writes small seed inputs for the fuzz targets into DIR/NAME, one folder per
// fuzz_NAME target: valid inputs of every kind the importers read, the
// exports of a trace with several chunks, late devices and an index (for the
// importers of what iotape exports) and compressed copies of a text input.
// Made here so no corpus is kept.
#include <bzlib.h>
#include <lzma.h>
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "convert/export/exporter.h"
#include "format/chunk_codec.h"
#include "format/frame.h"
#include "format/reader.h"
#include "format/writer.h"
#include "fuzz/frames_input.h"
#include "tests/blktrace_records.h"

namespace {

namespace blk = iotape::test::blk;

void write(const std::filesystem::path& path, const std::string& bytes) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

template <typename T>
void put(std::string& out, T v) {
  char b[sizeof v];
  std::memcpy(b, &v, sizeof v);
  out.append(b, sizeof v);
}

std::string vscsi(int version) {
  std::string s;
  for (uint16_t cmd : {0x28, 0x2a, 0x35, 0x42, 0x12}) {
    if (version == 1) {
      put<uint32_t>(s, 1), put<uint32_t>(s, 4096), put<uint32_t>(s, 1), put<uint16_t>(s, cmd);
      put<uint16_t>(s, 0x0100), put<uint64_t>(s, cmd * 8u), put<uint64_t>(s, 1000u + cmd);
    } else {
      put<uint16_t>(s, cmd), put<uint16_t>(s, 0x0200), put<uint32_t>(s, 1), put<uint32_t>(s, 4096);
      put<uint32_t>(s, 1), put<uint64_t>(s, cmd * 8u), put<uint64_t>(s, 1000u + cmd), put<uint64_t>(s, 70);
    }
  }
  return s;
}

// Two per-CPU files as one fuzz input holds them (see import_bytes).
std::string two_files(const std::string& cpu0, const std::string& cpu1) {
  return std::string(1, static_cast<char>(cpu0.size() / 8)) + cpu0 + cpu1;
}

// Events of every kind the blktrace importer folds, as two per-CPU files.
std::string blktrace() {
  const uint32_t sda = blk::dev(8, 0), sda1 = blk::dev(8, 1), W = blk::kWrite;
  std::string cpu0, cpu1;
  auto a = [](std::string& out, blk::Event e) { blk::append(out, e); };
  a(cpu0, {.time = 1, .action = blk::kProcessName, .pid = 9, .device = sda, .payload = blk::comm("fio")});
  a(cpu0, {.time = 10, .sector = 100, .bytes = 4096, .action = blk::Q | W | blk::kSync, .pid = 9, .device = sda});
  a(cpu0, {.time = 11, .sector = 100, .bytes = 4096, .action = blk::G | W, .pid = 9, .device = sda});
  a(cpu0, {.time = 12, .sector = 108, .bytes = 4096, .action = blk::Q | W, .pid = 9, .device = sda});
  a(cpu0, {.time = 13, .sector = 108, .bytes = 4096, .action = blk::M | W, .pid = 9, .device = sda});
  a(cpu0, {.time = 14, .sector = 92, .bytes = 4096, .action = blk::Q | W, .pid = 9, .device = sda});
  a(cpu0, {.time = 15, .sector = 92, .bytes = 4096, .action = blk::F | W, .pid = 9, .device = sda});
  a(cpu0, {.time = 16, .sector = 92, .bytes = 12288, .action = blk::I | W, .pid = 9, .device = sda});
  a(cpu0, {.time = 20, .sector = 92, .bytes = 12288, .action = blk::D | W, .device = sda});
  a(cpu1, {.time = 30, .sector = 92, .bytes = 12288, .action = blk::C | W, .device = sda, .cpu = 1});
  a(cpu0, {.time = 40, .sector = 500, .bytes = 8192, .action = blk::A, .device = sda, .payload = blk::remap(sda1, sda, 400)});
  a(cpu0, {.time = 41, .sector = 500, .bytes = 8192, .action = blk::Q | blk::kCgroup, .pid = 9, .device = sda,
           .payload = std::string("\x07\0\0\0\0\0\0\0", 8)});
  a(cpu0, {.time = 42, .sector = 500, .bytes = 4096, .action = blk::X, .device = sda, .payload = blk::be64(508)});
  a(cpu0, {.time = 43, .sector = 500, .bytes = 4096, .action = blk::D | blk::kAhead, .device = sda});
  a(cpu0, {.time = 44, .sector = 500, .bytes = 4096, .action = blk::R, .device = sda});
  a(cpu0, {.time = 45, .sector = 500, .bytes = 4096, .action = blk::D | blk::kAhead, .device = sda});
  a(cpu1, {.time = 50, .sector = 500, .bytes = 2048, .action = blk::C, .device = sda, .cpu = 1});
  a(cpu1, {.time = 51, .sector = 504, .bytes = 2048, .action = blk::C, .device = sda, .cpu = 1, .error = 5});
  a(cpu0, {.time = 60, .action = blk::D | blk::kFlush, .device = sda});
  a(cpu1, {.time = 61, .action = blk::C | blk::kFlush, .device = sda, .cpu = 1});
  a(cpu0, {.time = 70, .bytes = 512, .action = blk::D | blk::kPc, .device = sda});
  a(cpu1, {.time = 71, .sector = 77, .bytes = 512, .action = blk::C | blk::kDiscard | W, .device = sda, .cpu = 1});
  return two_files(cpu0, cpu1);
}

// Events of one kind only, as a filter mask (blktrace -a) records them, with
// the second CPU's clock far ahead of the first's.
std::string blktrace_only(uint32_t what) {
  const uint32_t sda = blk::dev(8, 0);
  std::string cpu0, cpu1;
  blk::append(cpu0, {.time = 10, .sector = 100, .bytes = 4096, .action = what, .device = sda});
  blk::append(cpu0, {.time = 20, .sector = 200, .bytes = 8192, .action = what | blk::kWrite, .device = sda});
  blk::append(cpu1, {.time = 9'000'000'000'000, .sector = 300, .bytes = 4096, .action = what | blk::kSync,
                     .device = sda, .cpu = 1});
  return two_files(cpu0, cpu1);
}

// Issue and completion events only (blktrace -a issue,complete, or `record
// --blk-events issue-complete`): a write, and an fsync's flush request and
// empty write, the latter seen only at its completion.
std::string blktrace_issue_complete() {
  const uint32_t sda = blk::dev(8, 0);
  std::string cpu0, cpu1;
  blk::append(cpu0, {.time = 10, .sector = 100, .bytes = 4096, .action = blk::D | blk::kWrite, .device = sda});
  blk::append(cpu1, {.time = 20, .sector = 100, .bytes = 4096, .action = blk::C | blk::kWrite, .device = sda, .cpu = 1});
  blk::append(cpu0, {.time = 30, .action = blk::D | blk::kFlush, .device = sda});
  blk::append(cpu1, {.time = 40, .action = blk::C | blk::kFlush, .device = sda, .cpu = 1});
  blk::append(cpu1, {.time = 41, .action = blk::C | blk::kWrite | blk::kSync, .device = sda, .cpu = 1});
  return two_files(cpu0, cpu1);
}

// blkparse text as found in the wild: column headings and comments, an old
// kernel's barrier and the kernel's newer RWBS letters, completions only, and
// events printed CPU by CPU, out of time order.
constexpr const char* kBlkparseHeadings =
    "#Maj,Mn CPU   SeqNo  Seconds  PID  Evt Typ Sector +Len Description\n"
    "#----------------------------------------------------------------\n"
    "  8,0    0        1     0.000000000  77  Q   R 64 + 8 [fio]\n"
    "# between events\n"
    "  8,0    0        2     0.000005000  77  D   R 64 + 8 [fio]\n"
    "  8,0    0        3     0.000090000   0  C   R 64 + 8 [0]\n";
constexpr const char* kBlkparseLetters =
    "  8,17   0   1   0.5  99  Q WBSM 4000 + 8 [kjournald]\n"
    "  8,16   0   2   0.6  99  A WBSM 6048 + 8 <- (8,17) 4000\n"
    "  8,16   0   3   0.7  99  Q WBSM 6048 + 8 [kjournald]\n"
    "  8,16   0   4   0.8  99  D WBSM 6048 + 8 [kjournald]\n"
    "  8,16   0   5   0.9   0  C WBSM 6048 + 8 [0]\n"
    "  8,16   0   6   1.0  99  D NB 0 + 0 [kjournald]\n"
    "  8,16   0   7   1.1  99  D DE 80 + 16 [fstrim]\n"
    "  8,16   0   8   1.2  99  D FWFSU 96 + 8 [db]\n"
    "  8,16   0   9   1.3  99  D ZRA 0 + 0 [zonefs]\n"
    "  8,16   0  10   1.4  99  D ZA 128 + 8 [zonefs]\n";
constexpr const char* kBlkparseCompletions =
    "  8,0    1        1  7200.000100000     0  C   R 300 + 8 [0]\n"
    "  8,0    1        2  7200.000200000     0  C  WS 400 + 16 [0]\n"
    "  8,0    0        1     0.000100000     0  C   R 100 + 8 [0]\n"
    "  8,0    0        2     0.000200000     0  C   W 200 + 8 [-5]\n";
constexpr const char* kBlkparseCpuBlocks =
    "# blkparse, one CPU after the other\n"
    "  8,0    1        1     0.002000000     0  C  WBS 512 + 8 [0]\n"
    "  8,0    1        2     0.004000000     0  C   RA 1024 + 32 [0]\n"
    "  8,0    0        1     0.000100000   41  Q  WBS 512 + 8 [jbd2]\n"
    "  8,0    0        2     0.000200000   41  G  WBS 512 + 8 [jbd2]\n"
    "  8,0    0        3     0.001000000   41  D  WBS 512 + 8 [jbd2]\n"
    "  8,0    0        4     0.003000000   42  Q   RA 1024 + 32 [cat]\n"
    "  8,0    0        5     0.003100000   42  D   RA 1024 + 32 [cat]\n";

// The compressed forms the decompressing stream reads (zstd from the frame codec).
std::string gzip(const std::string& text) {
  z_stream z{};
  if (deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) std::abort();  // 16: gzip
  std::string out(deflateBound(&z, text.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) std::abort();
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string bzip2(const std::string& text) {
  auto len = static_cast<unsigned>(text.size() + text.size() / 100 + 600);  // bzip2's documented bound
  std::string out(len, '\0');
  if (BZ2_bzBuffToBuffCompress(out.data(), &len, const_cast<char*>(text.data()), static_cast<unsigned>(text.size()),
                               9, 0, 0) != BZ_OK)
    std::abort();
  out.resize(len);
  return out;
}

std::string xz(const std::string& text) {
  std::string out(lzma_stream_buffer_bound(text.size()), '\0');
  size_t len = 0;
  if (lzma_easy_buffer_encode(6, LZMA_CHECK_CRC64, nullptr, reinterpret_cast<const uint8_t*>(text.data()),
                              text.size(), reinterpret_cast<uint8_t*>(out.data()), &len, out.size()) != LZMA_OK)
    std::abort();
  out.resize(len);
  return out;
}

// `trace` as `iotape export FORMAT` writes it.
void export_to(const std::string& trace, const char* format, const std::filesystem::path& path) {
  std::filesystem::create_directories(path.parent_path());
  iotape::format::TraceReader reader(trace);
  std::FILE* out = std::fopen(path.c_str(), "wb");
  if (!out) std::abort();
  iotape::convert::find_exporter(format)->run(reader, out);
  if (std::fclose(out) != 0) std::abort();
}

void trace(const std::string& path) {
  iotape::format::WriterOptions options;
  options.chunk_ios = 4;
  iotape::format::TraceWriter w(path, {}, options);
  iotape::v1::Device d;
  d.set_major(8);
  d.set_name("sda");
  w.add_device(d);
  for (int i = 0; i < 10; ++i) {
    if (i == 5) w.add_device(d);
    iotape::format::Io io;
    io.issue_ns = 1000 * i;
    io.complete_ns = 1000 * i + 300;
    io.queue_ns = 1000 * i - 50;
    io.offset = 4096 * (i % 3);
    io.length = 4096;
    io.op = static_cast<iotape::format::Op>(i % iotape::format::kOpCount);
    io.flags = 1u << (i % 7);
    io.status = i == 3 ? -5 : 0;
    io.device = i >= 5 ? 1 : 0;
    io.pid = 100 + i % 2;
    io.comm = i % 2 ? "fio" : "dd";
    io.cpu = i % 2;
    w.append(io);
    if (i == 7) w.add_dropped(3);
  }
  w.close();
}

// IO records as fuzz_report reads them: an hour of reads and writes on
// three devices, a few in flight at once, one without a completion.
std::string report_ios() {
  std::string out;
  for (int i = 0; i < 40; ++i) {
    const int64_t issue = int64_t{90'000'000'000} * i + 1'000'000;
    put(out, issue);
    put(out, uint32_t{2000});
    put(out, i == 7 ? int64_t{-1} : issue + 150'000 + 40'000 * (i % 5));
    put(out, uint64_t{4096} * static_cast<uint64_t>(i * 37 % 1000));
    put(out, uint32_t{4096} << (i % 4));
    put(out, static_cast<uint8_t>(i % 3 == 0));
    put(out, static_cast<uint8_t>(i % 3));
    put(out, static_cast<uint8_t>(i % 2));
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  const std::string msr =
      "128166385295514663,hm,0,Write,9056014336,2048,2833\r\n128166385295514878,hm,1,Read,11855351808,512,2617\n\n"
      "128166385301451520,web,0,Write,3163095040,40960,3438\n";
  write(dir / "msr" / "hm.csv", msr);
  write(dir / "vscsi" / "v1.vscsi", vscsi(1));
  write(dir / "vscsi" / "v2.vscsi", vscsi(2));
  write(dir / "blktrace" / "events", blktrace());
  write(dir / "blktrace" / "complete-only", blktrace_only(blk::C));
  write(dir / "blktrace" / "issue-only", blktrace_only(blk::D));
  write(dir / "blktrace" / "issue-complete", blktrace_issue_complete());
  write(dir / "blkparse" / "headings.txt", kBlkparseHeadings);
  write(dir / "blkparse" / "letters.txt", kBlkparseLetters);
  write(dir / "blkparse" / "completions.txt", kBlkparseCompletions);
  write(dir / "blkparse" / "cpu-blocks.txt", kBlkparseCpuBlocks);
  write(dir / "fio_iolog" / "v2.log",
        "fio version 2 iolog\n/dev/sdb add\n/dev/sdb open\n/dev/sdb write 4096 8192\n/dev/sdb wait 15 0\n"
        "/dev/sdb read 0 4096\n/dev/sdb trim 8192 4096\n/dev/sdb sync 0 0\n/dev/sdb close\n");
  write(dir / "systor" / "systor.csv",
        "Timestamp,Response,IOType,LUN,Offset,Size\n1450535590.151316,0.000494,R,1,12314624,4096\n"
        "1450535590.150001,0.001,W,2,0,8192\n1450535590.152,,R,1,4096,512\n1450535590.153,0.0002,,1,0,4096\n");
  write(dir / "tencent" / "cbs.csv", "1538323200,2048,8,0,1283\n1538323199,100,16,1,1283\n1538323200,0,1,1,7\n");
  write(dir / "alibaba" / "ali.csv",
        "device_id,opcode,offset,length,timestamp\n0,R,126703644672,4096,1577808144249644\n"
        "3,W,0,512,1577808144249000\n");
  write(dir / "spc" / "spc.csv", "0,303567,3584,w,0.000000\n1,55590,3072,r,0.026214,extra\n0,303574,3584,W,0.0262\n");
  write(dir / "disksim" / "disksim.txt", "0.000000 0 1000 8 1\n1.5   1   2000  16  0\n12.25\t0\t8\t1\t3\n");
  write(dir / "decompress" / "plain", msr);
  write(dir / "decompress" / "msr.gz", gzip(msr));
  write(dir / "decompress" / "two-members.gz", gzip(msr.substr(0, 60)) + gzip(msr.substr(60)));
  write(dir / "decompress" / "msr.bz2", bzip2(msr));
  write(dir / "decompress" / "msr.xz", xz(msr));
  write(dir / "decompress" / "msr.zst", iotape::format::frame::compress(msr, 3));

  write(dir / "report" / "ios", report_ios());

  std::filesystem::create_directories(dir / "reader");
  const auto iot = dir / "reader" / "trace.iot";
  trace(iot.string());
  std::ifstream in(iot, std::ios::binary);
  const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  write(dir / "reader" / "trace.frames", std::string(1, '\0') + iotape::fuzz::frames_from_file(bytes));
  {
    iotape::format::TraceReader reader(iot.string());
    iotape::v1::Chunk chunk;
    iotape::format::encode_chunk(reader.next_batch(), 0, &chunk);
    write(dir / "chunk_wire" / "chunk", chunk.SerializeAsString());
  }
  // The importers of other tools' formats read what iotape writes for them too.
  export_to(iot, "blkparse", dir / "blkparse" / "trace.txt");
  export_to(iot, "fio-iolog", dir / "fio_iolog" / "v3.log");
  export_to(iot, "csv", dir / "iotape_csv" / "trace.csv");
  export_to(iot, "jsonl", dir / "jsonl" / "trace.jsonl");
  return 0;
}

// Writes small seed inputs for the fuzz targets into DIR/{msr,vscsi,blktrace,reader}:
// valid inputs of every kind the importers read, and a trace with several
// chunks, late devices and an index. Made here so no corpus is kept.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "fuzz/frames_input.h"
#include "tests/blktrace_records.h"
#include "traces/writer.h"

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

// Events of every kind the blktrace importer folds, as two per-CPU files (see
// import_bytes for how one fuzz input holds both).
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
  return std::string(1, static_cast<char>(cpu0.size() / 8)) + cpu0 + cpu1;
}

void trace(const std::string& path) {
  iotape::WriterOptions options;
  options.chunk_ios = 4;
  iotape::TraceWriter w(path, {}, options);
  iotape::v1::Device d;
  d.set_name("sda");
  w.add_device(d);
  for (int i = 0; i < 10; ++i) {
    if (i == 5) w.add_device(d);
    iotape::Io io;
    io.issue_ns = 1000 * i;
    io.complete_ns = 1000 * i + 300;
    io.queue_ns = 1000 * i - 50;
    io.offset = 4096 * (i % 3);
    io.length = 4096;
    io.op = static_cast<iotape::Op>(i % iotape::kOpCount);
    io.device = i >= 5 ? 1 : 0;
    io.pid = 100 + i % 2;
    io.comm = i % 2 ? "fio" : "dd";
    io.cpu = i % 2;
    w.append(io);
    if (i == 7) w.add_dropped(3);
  }
  w.close();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  write(dir / "msr" / "hm.csv",
        "128166385295514663,hm,0,Write,9056014336,2048,2833\r\n128166385295514878,hm,1,Read,11855351808,512,2617\n\n"
        "128166385301451520,web,0,Write,3163095040,40960,3438\n");
  write(dir / "vscsi" / "v1.vscsi", vscsi(1));
  write(dir / "vscsi" / "v2.vscsi", vscsi(2));
  write(dir / "blktrace" / "events", blktrace());
  std::filesystem::create_directories(dir / "reader");
  const auto iot = dir / "reader" / "trace.iot";
  trace(iot.string());
  std::ifstream in(iot, std::ios::binary);
  const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  write(dir / "reader" / "trace.frames", std::string(1, '\0') + iotape::fuzz::frames_from_file(bytes));
  return 0;
}

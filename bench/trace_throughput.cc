// Write and read throughput of the trace format on one core, against the
// simplest alternative: the same IOs as raw fixed-size records in zstd blocks.
// Times are the thread's CPU time, so other load on the machine barely moves them.
//
//   trace_throughput [IOS] [DIR]     (defaults: 10,000,000 IOs in /dev/shm)
#include <sys/resource.h>
#include <time.h>
#include <zstd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "format/reader.h"
#include "format/writer.h"

using namespace iotape;

namespace {

double cpu_s() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

// A capture-like stream: mostly small random IOs with sequential runs, a few
// processes, completions a few hundred microseconds after issue.
std::vector<format::Io> make_ios(size_t n) {
  std::mt19937_64 rng(42);
  static const char* comms[] = {"postgres", "kworker/u8:2", "firefox", "jbd2/nvme0n1p2", "fio"};
  static const uint64_t sizes[] = {4096, 4096, 4096, 8192, 16384, 32768, 131072, 512};
  std::vector<format::Io> ios(n);
  int64_t t = 1'000'000'000;
  uint64_t next_seq = 0;
  for (size_t i = 0; i < n; ++i) {
    format::Io& io = ios[i];
    t += static_cast<int64_t>(rng() % 100'000);
    io.issue_ns = t;
    io.queue_ns = t - static_cast<int64_t>(2'000 + rng() % 20'000);
    io.complete_ns = t + static_cast<int64_t>(20'000 + rng() % 400'000);
    io.length = sizes[rng() % 8];
    io.offset = rng() % 2 ? next_seq : (rng() % (1ull << 38)) & ~4095ull;
    next_seq = io.offset + io.length;
    io.op = rng() % 3 ? format::Op::kRead : format::Op::kWrite;
    const int p = static_cast<int>(rng() % 5);
    io.pid = 1000 + static_cast<uint32_t>(p);
    io.comm = comms[p];
    io.cpu = static_cast<int32_t>(rng() % 8);
  }
  return ios;
}

// The raw record a naive format would store (72 bytes, no interning).
struct RawRecord {
  int64_t issue_ns, queue_ns, complete_ns;
  uint64_t offset, length;
  uint32_t device, flags, pid;
  int32_t status, cpu;
  uint8_t op;
  char comm[11];
};

long max_rss_kb() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t n = argc > 1 ? std::stoull(argv[1]) : 10'000'000;
  const std::string dir = argc > 2 ? argv[2] : "/dev/shm";
  const std::string path = dir + "/iotape-bench.iot";
  const int level = format::WriterOptions{}.zstd_level;
  const uint32_t chunk = format::WriterOptions{}.chunk_ios;
  auto ios = make_ios(n);
  std::printf("%zu IOs, zstd level %d, %u IOs per chunk\n", n, level, chunk);

  // iotape write
  double t0 = cpu_s();
  uint64_t file_bytes;
  {
    format::TraceWriter w(path, v1::TraceHeader{});
    for (const format::Io& io : ios) w.append(io);
    w.close();
    file_bytes = w.stats().file_bytes;
  }
  const double write_s = cpu_s() - t0;

  // iotape read
  const long rss_before_read = max_rss_kb();
  t0 = cpu_s();
  uint64_t read = 0, checksum = 0;
  {
    format::TraceReader r(path);
    for (auto b = r.next_batch(); !b.empty(); b = r.next_batch()) {
      read += b.size();
      for (const format::Io& io : b) checksum += io.offset;
    }
  }
  const double read_s = cpu_s() - t0;
  const long rss_after_read = max_rss_kb();
  std::filesystem::remove(path);

  // Raw records, zstd-compressed block by block at the same level.
  std::vector<RawRecord> raw(chunk);
  std::vector<std::string> blocks;
  uint64_t raw_bytes = 0;
  ZSTD_CCtx* cctx = ZSTD_createCCtx();  // reused, as iotape's writer does
  t0 = cpu_s();
  for (size_t i = 0; i < n; i += chunk) {
    const size_t m = std::min<size_t>(chunk, n - i);
    for (size_t k = 0; k < m; ++k) {
      const format::Io& io = ios[i + k];
      RawRecord& r = raw[k];
      r = {io.issue_ns, io.queue_ns, io.complete_ns, io.offset, io.length, io.device, io.flags, io.pid,
           io.status, io.cpu, static_cast<uint8_t>(io.op), {}};
      std::memcpy(r.comm, io.comm.data(), std::min<size_t>(io.comm.size(), sizeof r.comm));
    }
    std::string out(ZSTD_compressBound(m * sizeof(RawRecord)), '\0');
    out.resize(ZSTD_compressCCtx(cctx, out.data(), out.size(), raw.data(), m * sizeof(RawRecord), level));
    raw_bytes += out.size();
    blocks.push_back(std::move(out));
  }
  const double raw_write_s = cpu_s() - t0;
  ZSTD_freeCCtx(cctx);
  t0 = cpu_s();
  uint64_t raw_checksum = 0;
  ZSTD_DCtx* dctx = ZSTD_createDCtx();
  for (const auto& b : blocks) {
    const size_t got = ZSTD_decompressDCtx(dctx, raw.data(), raw.size() * sizeof(RawRecord), b.data(), b.size());
    for (size_t k = 0; k < got / sizeof(RawRecord); ++k) raw_checksum += raw[k].offset;
  }
  ZSTD_freeDCtx(dctx);
  const double raw_read_s = cpu_s() - t0;

  if (read != n || checksum != raw_checksum) {
    std::fprintf(stderr, "read back %lu IOs (checksum %lu vs %lu): mismatch\n", read, checksum, raw_checksum);
    return 1;
  }
  auto mio = [n](double s) { return n / s / 1e6; };
  std::printf("%-28s %10s %10s %10s\n", "", "write M/s", "read M/s", "B/IO");
  std::printf("%-28s %10.2f %10.2f %10.2f\n", "iotape trace", mio(write_s), mio(read_s),
              static_cast<double>(file_bytes) / n);
  std::printf("%-28s %10.2f %10.2f %10.2f\n", "raw 72 B records + zstd", mio(raw_write_s), mio(raw_read_s),
              static_cast<double>(raw_bytes) / n);
  std::printf("ratio iotape/raw: write %.2f, read %.2f, size %.3f\n", raw_write_s / write_s, raw_read_s / read_s,
              static_cast<double>(file_bytes) / raw_bytes);
  std::printf("peak RSS: %ld MB after generating the IOs (%zu MB of them) and writing; reading added %ld MB\n",
              rss_before_read / 1024, n * sizeof(format::Io) >> 20, (rss_after_read - rss_before_read) / 1024);
  return 0;
}

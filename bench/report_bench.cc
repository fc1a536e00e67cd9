// report_bench: how fast `iotape report` analyses a large trace, and in how
// much memory. Generates a synthetic trace (default 100M IOs) with
// TraceWriter, then, each in a fresh child process so that peak RSS is its
// own, (1) only reads the trace and (2) runs the full analysis, and with
// --iotape (3) runs that binary's `report --html` (the week page). Prints IOs
// per CPU-second (the analysis is one thread, so that is per core) and peak
// RSS. --span stretches the gaps between issues so the trace covers that much
// time (a week: 7d), as the page's bins and hours see a long recording.
//
//   report_bench [--ios N] [--span DURATION] [--trace PATH] [--keep] [--iotape PATH]
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "analysis/report.h"
#include "format/reader.h"
#include "format/writer.h"
#include "units/units.h"

using namespace iotape;

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A desktop-like mix: 70% reads, sizes 4K..256K, 1-8 outstanding, 40 us to
// ~5 ms latencies, 64 processes. A xorshift generator keeps it reproducible.
void generate(const std::string& path, uint64_t n, int64_t span_ns) {
  v1::TraceHeader h;
  h.set_source(v1::SOURCE_SYNTH);
  format::TraceWriter w(path, h);
  v1::Device d;
  d.set_major(259);
  d.set_minor(0);
  d.set_name("nvme0n1");
  w.add_device(d);
  static const uint64_t kSizes[] = {4096, 4096, 4096, 8192, 16384, 32768, 65536, 131072, 262144, 512};
  static const char* kComms[] = {"firefox", "kworker/u8:2", "postgres", "jbd2/nvme0n1p2", "cc1plus", "rsync", "fio", "code"};
  uint64_t x = 0x9E3779B97F4A7C15ull;
  auto rnd = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  int64_t t = 0;
  uint64_t next_offset[2] = {0, 0};
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t r = rnd();
    format::Io io;
    io.op = (r & 0xff) < 179 ? format::Op::kRead : format::Op::kWrite;
    io.length = kSizes[(r >> 8) % std::size(kSizes)];
    const int dir = io.op == format::Op::kWrite;
    io.offset = (r >> 12) % 4 == 0 ? next_offset[dir] : ((r >> 16) % (1ull << 26)) * 4096;  // ~25% sequential
    next_offset[dir] = io.offset + io.length;
    const int64_t gap = 2000 + static_cast<int64_t>((r >> 30) % 40000);  // 2-42 us between issues, or stretched
    t += span_ns > 0 ? gap * (span_ns / static_cast<int64_t>(n)) / 22'000 : gap;
    io.issue_ns = t;
    io.complete_ns = t + 40'000 + static_cast<int64_t>(((r >> 40) % 1000) * ((r >> 50) % 8 == 0 ? 5000 : 100));
    const uint32_t proc = static_cast<uint32_t>((r >> 56) % 64);
    io.pid = 1000 + proc;
    io.comm = kComms[proc % std::size(kComms)];
    w.append(io);
  }
  w.close();
}

struct Measured {
  double seconds = 0;      // wall clock
  double cpu_seconds = 0;  // user + system: what "per core" means on a busy machine
  long max_rss_kb = 0;
  uint64_t ios = 0;
};

// Runs `work` in a child process and returns its time, IOs and peak RSS.
template <class F>
Measured in_child(F work) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error("pipe");
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    const double t0 = now_s();
    const uint64_t ios = work();
    Measured m;
    m.seconds = now_s() - t0;
    m.ios = ios;
    rusage ru{};
    ::getrusage(RUSAGE_SELF, &ru);
    m.max_rss_kb = ru.ru_maxrss;
    m.cpu_seconds = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                    static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
    if (::write(fds[1], &m, sizeof m) != static_cast<ssize_t>(sizeof m)) ::_exit(1);
    ::_exit(0);
  }
  ::close(fds[1]);
  Measured m;
  const bool ok = ::read(fds[0], &m, sizeof m) == static_cast<ssize_t>(sizeof m);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!ok || !WIFEXITED(status) || WEXITSTATUS(status) != 0) throw std::runtime_error("child failed");
  return m;
}

// Runs a program (argv[0] a path) and returns its wall time and peak RSS.
Measured exec_child(const std::vector<std::string>& args) {
  const double t0 = now_s();
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int null = ::open("/dev/null", O_WRONLY);  // the report's text: not the bench's output
    ::dup2(null, 1);
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  int status = 0;
  rusage ru{};
  ::wait4(pid, &status, 0, &ru);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) throw std::runtime_error(args[0] + " failed");
  Measured m;
  m.seconds = now_s() - t0;
  m.max_rss_kb = ru.ru_maxrss;
  m.cpu_seconds = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                  static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Throughput and peak memory of iotape report on a large synthetic trace"};
  uint64_t n = 100'000'000;
  std::string path = "/var/tmp/iotape-report-bench.iot";
  bool keep = false;
  app.add_option("--ios", n, "IOs in the generated trace")->capture_default_str();
  app.add_option("--trace", path, "Where to write the trace (reused with --keep if it exists)")->capture_default_str();
  app.add_flag("--keep", keep, "Keep the trace, and reuse an existing one");
  std::string span = "0", iotape;
  app.add_option("--span", span, "Trace time the IOs spread over, e.g. 7d (0: 2-42 us between issues)");
  app.add_option("--iotape", iotape, "Also measure this iotape binary's `report --html` on the trace");
  CLI11_PARSE(app, argc, argv);

  if (!(keep && std::filesystem::exists(path))) {
    const double t0 = now_s();
    generate(path, n, units::parse_duration(span, "--span"));
    fmt::print("generated {} IOs in {:.1f} s: {} ({:.2f} B/IO)\n", n, now_s() - t0, path,
               static_cast<double>(std::filesystem::file_size(path)) / static_cast<double>(n));
  }
  const Measured read = in_child([&] {
    format::TraceReader r(path);
    uint64_t ios = 0;
    for (auto b = r.next_batch(); !b.empty(); b = r.next_batch()) ios += b.size();
    return ios;
  });
  const Measured report = in_child([&] {
    format::TraceReader r(path);
    const analysis::Report rep = analysis::analyse(r);
    return rep.ios;
  });
  std::vector<std::pair<const char*, Measured>> rows = {{"read only", read}, {"report", report}};
  if (!iotape.empty()) {
    const std::string page = path + ".html";
    rows.emplace_back("week page", exec_child({iotape, "report", path, "--html", page}));
    rows.back().second.ios = report.ios;
    std::filesystem::remove(page);
  }
  for (const auto& [name, m] : rows)
    fmt::print("{:<10}: {} IOs in {:.2f} s wall, {:.2f} s CPU = {:.2f} M IOs per CPU-second, peak RSS {:.1f} MiB\n",
               name, m.ios, m.seconds, m.cpu_seconds, m.ios / m.cpu_seconds / 1e6, m.max_rss_kb / 1024.0);
  fmt::print("analysis cost over reading: {:.2f}x the CPU time\n", report.cpu_seconds / read.cpu_seconds);
  if (!keep) std::filesystem::remove(path);
  return 0;
}

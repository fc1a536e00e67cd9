// report_bench: how fast `iotape report` analyses a large trace, and in how
// much memory, with the chunks decoded in the analysing thread (as before
// ReaderOptions::decode_ahead) and on a second thread. Generates a synthetic
// trace (default 100M IOs) with TraceWriter, or takes one (--trace with
// --keep), then, each in a fresh child process so that peak RSS is its own,
// (1) only reads the trace and (2) runs the full analysis, each both ways, and
// with --iotape (3) runs that binary's `report --html` (the week page).
// Prints IOs per second of wall clock (what a user waits), per CPU-second
// (what the machine spends) and peak RSS. --span stretches the gaps between
// issues so the trace covers that much time (a week: 7d), as the page's bins
// and hours see a long recording.
//
//   report_bench [--ios N] [--span DURATION] [--trace PATH] [--keep] [--decode-ahead K] [--rounds R]
//                [--iotape PATH]
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
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
// ~5 ms latencies, queued 1-5 us before issue, 64 processes. A xorshift generator keeps it reproducible.
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
    io.queue_ns = t - 1000 - static_cast<int64_t>((r >> 20) % 4000);  // as blktrace records them (btt needs Q)
    io.complete_ns = t + 40'000 + static_cast<int64_t>(((r >> 40) % 1000) * ((r >> 50) % 8 == 0 ? 5000 : 100));
    const uint32_t proc = static_cast<uint32_t>((r >> 56) % 64);
    io.pid = 1000 + proc;
    io.comm = kComms[proc % std::size(kComms)];
    w.append(io);
  }
  w.close();
}

struct Measured {
  double seconds = 0;         // wall clock
  double cpu_seconds = 0;     // user + system: what "per core" means on a busy machine
  double caller_seconds = 0;  // of that, the calling thread's; the rest is the decoding thread's
  long max_rss_kb = 0;
  uint64_t ios = 0;
  // On two cores of their own the threads overlap: the busier one sets the pace.
  double paced_seconds() const { return std::max(caller_seconds, cpu_seconds - caller_seconds); }
};

double cpu_of(int who) {
  rusage ru{};
  ::getrusage(who, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

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
    m.caller_seconds = cpu_of(RUSAGE_THREAD);
    m.cpu_seconds = cpu_of(RUSAGE_SELF);
    rusage ru{};
    ::getrusage(RUSAGE_SELF, &ru);
    m.max_rss_kb = ru.ru_maxrss;
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
  unsigned decode_ahead = format::kToolDecodeAhead;
  int rounds = 3;
  app.add_option("--rounds", rounds, "Rounds of each run, the fastest kept")->capture_default_str();
  app.add_option("--decode-ahead", decode_ahead, "Batches of chunks decoded ahead in the second runs")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  if (!(keep && std::filesystem::exists(path))) {
    const double t0 = now_s();
    generate(path, n, units::parse_duration(span, "--span"));
    fmt::print("generated {} IOs in {:.1f} s: {} ({:.2f} B/IO)\n", n, now_s() - t0, path,
               static_cast<double>(std::filesystem::file_size(path)) / static_cast<double>(n));
  }
  // Alternated rounds, the fastest of each kept: other load on the machine
  // only ever slows a run down.
  struct Run {
    std::string name;
    Measured m;
  };
  std::vector<Run> runs;
  for (int round = 0; round < rounds; ++round) {
    size_t k = 0;
    for (const unsigned ahead : {0u, decode_ahead}) {
      const std::string how = ahead ? fmt::format("{} ahead", ahead) : "1 thread";
      const Measured read = in_child([&] {
        format::TraceReader r(path, {.decode_ahead = ahead});
        uint64_t ios = 0;
        for (auto b = r.next_batch(); !b.empty(); b = r.next_batch()) ios += b.size();
        return ios;
      });
      const Measured report = in_child([&] {
        format::TraceReader r(path, {.decode_ahead = ahead});
        return analysis::analyse(r).ios;
      });
      for (const auto& [name, m] : {std::pair{"read only, " + how, read}, std::pair{"report, " + how, report}}) {
        if (round == 0) runs.push_back({name, m});
        if (m.seconds < runs[k].m.seconds) runs[k].m = m;
        ++k;
      }
    }
  }
  if (!iotape.empty()) {
    const std::string page = path + ".html";
    Measured m = exec_child({iotape, "report", path, "--html", page});
    m.ios = runs[3].m.ios;
    runs.push_back({"week page", m});
    std::filesystem::remove(page);
  }
  for (const auto& [name, m] : runs)
    fmt::print(
        "{:<20}: {} IOs in {:.2f} s wall, {:.2f} s CPU ({:.2f} s in the calling thread) = {:.2f} M IOs/s wall, "
        "{:.2f} M IOs/s on two free cores, {:.2f} M IOs per CPU-second, peak RSS {:.1f} MiB\n",
        name, m.ios, m.seconds, m.cpu_seconds, m.caller_seconds, m.ios / m.seconds / 1e6,
        m.ios / m.paced_seconds() / 1e6, m.ios / m.cpu_seconds / 1e6, m.max_rss_kb / 1024.0);
  fmt::print("report with decode ahead: {:.2f}x the IOs/s of one thread (wall clock), {:.2f}x on two free cores\n",
             runs[1].m.seconds / runs[3].m.seconds, runs[1].m.paced_seconds() / runs[3].m.paced_seconds());
  if (!keep) std::filesystem::remove(path);
  return 0;
}

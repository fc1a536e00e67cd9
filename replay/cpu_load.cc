#include "replay/cpu_load.h"

#include <sys/resource.h>

#include <fstream>
#include <string>
#include <tuple>
#include <utility>

namespace iotape::replay {
namespace {

// User + system CPU time of RUSAGE_SELF or RUSAGE_THREAD.
int64_t cpu_ns(int who) {
  rusage u{};
  ::getrusage(who, &u);
  return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1'000'000'000LL +
         (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1'000LL;
}

// All CPUs' busy and total time so far, from /proc/stat's first line.
std::pair<uint64_t, uint64_t> host_cpu_ticks() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  uint64_t v[8] = {};
  in >> cpu;
  for (auto& x : v) in >> x;
  const uint64_t idle = v[3] + v[4];
  uint64_t total = 0;
  for (auto x : v) total += x;
  return {total - idle, total};
}

}  // namespace

int64_t thread_cpu_ns() { return cpu_ns(RUSAGE_THREAD); }

CpuLoad::CpuLoad() : process_start_(cpu_ns(RUSAGE_SELF)) {
  std::tie(host_busy_start_, host_total_start_) = host_cpu_ticks();
}

int64_t CpuLoad::process_cpu_ns() const { return cpu_ns(RUSAGE_SELF) - process_start_; }

double CpuLoad::host_busy() const {
  const auto [busy, total] = host_cpu_ticks();
  return total > host_total_start_
             ? static_cast<double>(busy - host_busy_start_) / static_cast<double>(total - host_total_start_)
             : 0.0;
}

}  // namespace iotape::replay

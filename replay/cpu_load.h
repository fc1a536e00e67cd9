// CPU load over a stretch of work, as reviews print it beside the speeds:
// this process's own CPU time (all threads, user + system) and the share of
// all CPUs' time the host was busy (/proc/stat).
// Read from any thread: it only reads clocks and /proc.
#pragma once

#include <cstdint>

namespace iotape::replay {

// Nanoseconds of CPU the calling thread has used (user + system).
int64_t thread_cpu_ns();

class CpuLoad {
 public:
  CpuLoad();  // starts measuring
  int64_t process_cpu_ns() const;  // since construction
  double host_busy() const;        // 0..1, since construction

 private:
  int64_t process_start_ = 0;
  uint64_t host_busy_start_ = 0, host_total_start_ = 0;
};

}  // namespace iotape::replay

// The host's clocks, as iotape reads them: CLOCK_BOOTTIME for recordings
// (it keeps counting through suspend, so a week's trace keeps one time line)
// and CLOCK_MONOTONIC for replays (io_uring and timers measure with it).
// Plain reads of the kernel's clocks (vDSO, no system call): any thread, any
// time; inline, as the replay's issue loop reads one per IO.
#pragma once

#include <time.h>

#include <cstdint>

namespace iotape::host {

inline int64_t clock_ns(clockid_t clock) {
  timespec ts;
  ::clock_gettime(clock, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// CLOCK_BOOTTIME now, the clock of every recorded timestamp.
inline int64_t boottime_ns() { return clock_ns(CLOCK_BOOTTIME); }

// CLOCK_MONOTONIC now, the clock of a replay's times.
inline int64_t monotonic_ns() { return clock_ns(CLOCK_MONOTONIC); }

}  // namespace iotape::host

// Whether a replay measured the drive or the host: the issue threads' CPU
// use (each thread's own, RUSAGE_THREAD), the time they waited on the host
// (for a CPU while ready to run, from schedstat, or for iotape's own decoder
// and result threads), and how busy the targets' devices were
// (/sys/dev/block/MAJ:MIN/stat io_ticks, the time the device had IO in
// flight). An issue thread that ran or waited on the host nearly all the
// time while a device was idle part of it means the replay went as fast as
// this host, not the drive, can go: a thread starved by other work limits it
// as surely as one busy itself. A thread polling for a completion (1 to 7 IOs
// in flight: issue_loop.cc) is busy meanwhile, so at low queue depth a fast
// device's replay counts the host's wake-up path against it too.
//
// Threads: a DeviceBusy is read by the thread that made it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "replay/target.h"

namespace iotape::replay {

// An issue thread's or device's busy share at or above this is saturated.
constexpr double kSaturated = 0.9;

// Nanoseconds the calling thread has waited for a CPU while ready to run
// (/proc/thread-self/schedstat; 0 where the kernel keeps no such count).
int64_t thread_cpu_wait_ns();
// How one issue thread spent the replay.
struct ThreadUse {
  double busy = 0;     // its CPU time / the replay's duration
  double waiting = 0;  // its time waiting on the host (a CPU, the decoder, the result) / the replay's duration
};

// How the calling thread spends its time from construction on: its CPU time
// and its wait for a CPU while ready to run. Read by the thread that made it.
class ThreadUseMeter {
 public:
  ThreadUseMeter();
  int64_t cpu_ns() const;   // its CPU time since construction
  int64_t wait_ns() const;  // its wait for a CPU since construction
  // Both as shares of `wall_ns`, the time measured.
  ThreadUse use(int64_t wall_ns) const;

 private:
  int64_t cpu_ns_, wait_ns_;
};

// The share of a closed loop (closed_loop.h: the next IO issued as one
// finishes, the thread asleep in the kernel while every IO is at the device,
// never polling) that the host took: the busiest issue thread's time on a CPU
// or waiting for one, or, when larger, the share the busiest device was idle
// (`device_busy`: its io_ticks share; 1 where no device has statistics). A
// loop that always has its next IO leaves the device idle only while iotape
// does not issue it, whether its thread runs, waits for a CPU or sleeps on
// the host (a page fault, memory reclaim). The devices' busy time alone
// cannot tell the other way: a queue kept full keeps a device busy all the
// time, whoever is the limit.
double closed_loop_host_share(const ThreadUse& thread, double device_busy);
// Limited by the host: finished IOs waited for iotape to issue the next at
// least kSaturated of the time.
bool closed_loop_host_limited(const ThreadUse& thread, double device_busy);

// The busy time of the devices under the targets (a block target's own, a
// file's filesystem's), each once, from now on.
class DeviceBusy {
 public:
  explicit DeviceBusy(const std::vector<Target>& targets);
  struct Share {
    std::string device;  // "loop3"
    double busy = 0;     // 0..1 of `wall_ns`
  };
  // Each device's busy time since construction as a share of `wall_ns` (the
  // replay's duration: setting up before it did no IO); devices without
  // block statistics (tmpfs, overlay) are left out.
  std::vector<Share> shares(int64_t wall_ns) const;

 private:
  struct Device {
    std::string name, stat_path;
    uint64_t io_ticks_ms = 0;
  };
  std::vector<Device> devices_;
};

// The busiest device's share; 1 where no device has statistics (nothing
// says it was idle).
double busiest(const std::vector<DeviceBusy::Share>& shares);

// "loop3:0.412 sdb:0.950": the shares as the result records them.
std::string describe(const std::vector<DeviceBusy::Share>& shares);

// The warning a replay deserves when some issue thread was saturated (busy
// and waiting together) while every device with statistics was not; empty
// otherwise (or when no device has statistics).
std::string host_limit_warning(const std::vector<ThreadUse>& threads, const std::vector<DeviceBusy::Share>& devices);

}  // namespace iotape::replay

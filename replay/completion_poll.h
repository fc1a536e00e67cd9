// CompletionPoll: whether an issue loop polls for its next completion before
// it sleeps, with few IOs in flight.
//
// A poll pays where the completion comes sooner than a sleeping thread wakes
// (10-20 us on a VM): afap QD1 on a tmpfs loop device (reads in 5-10 us),
// 84-89K IOPS polling against 61K sleeping. Where the device takes longer
// than the poll, it is CPU spent for nothing, and a vCPU that spins slows the
// device it waits for: afap QD1 on a direct-IO loop device over a virtio disk
// (reads in about 45 us), 17.4-19.0K IOPS and 25 us of CPU per IO polling,
// against 20.7-24.8K and 8-10 us sleeping (fio 22.2-23.3K, 9.4 us).
//
// So the loop polls while polls find completions. After kMissesToStop polls
// in a row ran their whole budget and found none, it sleeps at once, and
// polls again only at every kProbeEvery-th wait, in case the device got
// faster: one poll that finds a completion starts polling again.
//
// Threads: one per issue loop, used by its thread only.
#pragma once

#include <cstdint>

namespace iotape::replay {

class CompletionPoll {
 public:
  static constexpr int64_t kPollNs = 20'000;
  static constexpr uint32_t kMissesToStop = 4;
  static constexpr uint32_t kProbeEvery = 64;

  // How long the next wait for a completion polls before sleeping: kPollNs,
  // or 0 while polls keep missing (except for the probes).
  int64_t budget() {
    if (misses_in_row_ < kMissesToStop) return kPollNs;
    return ++waits_since_probe_ % kProbeEvery == 0 ? kPollNs : 0;
  }
  // What a poll that ran its whole budget (not cut short by a deadline)
  // found: a completion, or none.
  void found(bool completion) {
    if (completion) {
      ++hits_;
      misses_in_row_ = 0;
      waits_since_probe_ = 0;
    } else {
      ++misses_;
      ++misses_in_row_;
    }
  }
  uint64_t hits() const { return hits_; }
  uint64_t misses() const { return misses_; }

 private:
  uint32_t misses_in_row_ = 0;
  uint32_t waits_since_probe_ = 0;
  uint64_t hits_ = 0, misses_ = 0;
};

}  // namespace iotape::replay

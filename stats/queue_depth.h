// QueueDepth: the depth each IO saw at its issue, in the buckets reports and
// replay fidelity share.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "format/io.h"

namespace iotape::stats {

// Queue depth seen by each IO at its issue: the IOs outstanding then,
// counting the IO itself. The completion times of the outstanding IOs are
// kept sorted (bounded by the device's queue depth): most IOs complete after
// most of those before them, so a new one goes near the end, and completions
// leave from the front, cheaper than a heap's sifts. An IO completing at the
// very instant another is issued no longer counts. IOs without a completion
// time are counted at their issue but never outstanding.
class QueueDepth {
 public:
  static constexpr std::array<std::string_view, 8> kBucketNames = {"1",    "2",     "3",     "4-5",
                                                                   "6-10", "11-20", "21-32", ">32"};
  void add(const format::Io& io);
  uint64_t ios() const { return ios_; }
  double mean() const { return ios_ ? static_cast<double>(sum_) / static_cast<double>(ios_) : 0.0; }
  uint64_t max() const { return max_; }
  const std::array<uint64_t, 8>& buckets() const { return buckets_; }
  static int bucket_of(uint64_t qd);

 private:
  void insert(int64_t complete_ns);

  // [first_, end): completion times, ascending; those before first_
  // completed, and [0] is never outstanding, so that first_ - 1 can hold a
  // sentinel for insert.
  std::vector<int64_t> outstanding_ = {0};
  size_t first_ = 1;
  std::array<uint64_t, 8> buckets_{};
  uint64_t ios_ = 0;
  uint64_t sum_ = 0;
  uint64_t max_ = 0;
};

}  // namespace iotape::stats

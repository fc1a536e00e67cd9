// QueueDepth: the depth each IO saw at its issue, in the buckets reports and
// replay fidelity share.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

#include "format/io.h"

namespace iotape::stats {

// Queue depth seen by each IO at its issue: the IOs outstanding then,
// counting the IO itself. An IO is outstanding until its completion; one
// completing at the very instant another is issued no longer counts, and IOs
// without a completion time are counted at their issue but never
// outstanding. IOs come in issue order; one issued before an IO already
// seen (written late) sees the depth as of that IO's issue.
//
// While few are outstanding their completion times are kept as they come
// and counted in one pass (a loop without branches, which a deep queue
// completing out of order costs less than keeping them in order); in a
// queue deeper than kDeep they are kept sorted, so that each IO moves past
// only the completions since the last.
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
  static constexpr uint64_t kDeep = 64;
  uint64_t outstanding_unsorted();
  uint64_t outstanding_sorted();
  void insert_sorted(int64_t complete_ns);

  std::vector<int64_t> completions_;  // [first_, end): of the IOs that may be outstanding
  size_t first_ = 0;                  // sorted: those before it completed; unsorted: 0
  bool sorted_ = false;
  // Every time so far within 2^62 ns of the first issue, in [near_lo_,
  // near_hi_]: counted unsorted, by a subtraction that cannot overflow.
  bool near_ = true;
  int64_t near_lo_ = 0, near_hi_ = 0;
  int64_t now_ = std::numeric_limits<int64_t>::min();  // the latest issue seen
  std::array<uint64_t, 8> buckets_{};
  uint64_t ios_ = 0;
  uint64_t sum_ = 0;
  uint64_t max_ = 0;
};

}  // namespace iotape::stats

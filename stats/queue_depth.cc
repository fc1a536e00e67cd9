#include "stats/queue_depth.h"

#include <algorithm>
#include <cstdint>

namespace iotape::stats {

int QueueDepth::bucket_of(uint64_t qd) {
  // A table: depths vary from one IO to the next, and a chain of comparisons
  // mispredicts.
  static constexpr std::array<uint8_t, 33> kBuckets = {0, 0, 1, 2, 3, 3, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5,
                                                       5, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6};
  return qd <= 32 ? kBuckets[qd] : 7;
}

void QueueDepth::add(const format::Io& io) {
  while (first_ < outstanding_.size() && outstanding_[first_] <= io.issue_ns) ++first_;
  const uint64_t qd = outstanding_.size() - first_ + 1;
  ++buckets_[bucket_of(qd)];
  ++ios_;
  sum_ += qd;
  max_ = std::max(max_, qd);
  // Space of the completed ones is reclaimed once it outweighs the rest.
  if (first_ >= 64 && first_ * 2 >= outstanding_.size()) {
    outstanding_.erase(outstanding_.begin() + 1, outstanding_.begin() + static_cast<ptrdiff_t>(first_));
    first_ = 1;
  }
  if (io.has_complete() && io.complete_ns > io.device_start_ns()) insert(io.complete_ns);
}

void QueueDepth::insert(int64_t complete_ns) {
  outstanding_.push_back(complete_ns);
  int64_t* const begin = outstanding_.data() + first_;
  int64_t* at = outstanding_.data() + outstanding_.size() - 1;
  constexpr ptrdiff_t kNear = 64;
  if (at - begin > kNear && *(at - kNear) > complete_ns) {
    // Far from the end (a deep queue completing out of order): a search.
    int64_t* const to = std::upper_bound(begin, at, complete_ns);
    std::move_backward(to, at, at + 1);
    *to = complete_ns;
    return;
  }
  // Near the end, as most are: moved there in one pass, without a call to
  // memmove, and one comparison a step: the completed slot before `begin`
  // holds the least time as a sentinel.
  begin[-1] = INT64_MIN;
  for (; *(at - 1) > complete_ns; --at) *at = *(at - 1);
  *at = complete_ns;
}

}  // namespace iotape::stats

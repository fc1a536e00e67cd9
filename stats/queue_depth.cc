#include "stats/queue_depth.h"

#include <algorithm>

namespace iotape::stats {

int QueueDepth::bucket_of(uint64_t qd) {
  if (qd <= 3) return qd == 0 ? 0 : static_cast<int>(qd) - 1;
  if (qd <= 5) return 3;
  if (qd <= 10) return 4;
  if (qd <= 20) return 5;
  if (qd <= 32) return 6;
  return 7;
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
    outstanding_.erase(outstanding_.begin(), outstanding_.begin() + static_cast<ptrdiff_t>(first_));
    first_ = 0;
  }
  if (io.has_complete() && io.complete_ns > io.device_start_ns()) {
    // A few steps back from the end find most places; a search the others.
    const auto begin = outstanding_.begin() + static_cast<ptrdiff_t>(first_);
    auto at = outstanding_.end();
    for (int step = 0; step < 64 && at != begin && *(at - 1) > io.complete_ns; ++step) --at;
    if (at != begin && *(at - 1) > io.complete_ns) at = std::upper_bound(begin, at, io.complete_ns);
    outstanding_.insert(at, io.complete_ns);
  }
}

}  // namespace iotape::stats

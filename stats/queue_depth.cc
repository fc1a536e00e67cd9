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
  while (!outstanding_.empty() && outstanding_.top() <= io.issue_ns) outstanding_.pop();
  const uint64_t qd = outstanding_.size() + 1;
  ++buckets_[bucket_of(qd)];
  ++ios_;
  sum_ += qd;
  max_ = std::max(max_, qd);
  if (io.has_complete() && io.complete_ns > io.device_start_ns()) outstanding_.push(io.complete_ns);
}

}  // namespace iotape::stats

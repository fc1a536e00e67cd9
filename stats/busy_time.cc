#include "stats/busy_time.h"

#include <algorithm>

namespace iotape::stats {

void BusyTime::add(int64_t start, int64_t end) {
  if (end <= start) return;
  if (!open_) {
    open_ = true;
    seg_start_ = start;
    seg_end_ = end;
  } else if (start > seg_end_) {
    closed_ns_ = plus_length(closed_ns_, seg_start_, seg_end_);
    seg_start_ = start;
    seg_end_ = end;
  } else if (start >= seg_start_ || end >= seg_start_) {
    seg_start_ = std::min(seg_start_, start);
    seg_end_ = std::max(seg_end_, end);
  } else {
    closed_ns_ = plus_length(closed_ns_, start, end);  // late, and wholly before the open segment
  }
}

}  // namespace iotape::stats

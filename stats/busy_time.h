// BusyTime: the time with at least one IO outstanding, the headline figure of
// storage reviews (`iotape report`) and of a replay's fidelity.
#pragma once

#include <algorithm>
#include <cstdint>

namespace iotape::stats {

// Length of the union of [start, end) intervals given in non-decreasing start
// order: the time with at least one IO outstanding. Sorted starts make the
// union a sweep that keeps only the open segment, so no per-IO state is kept.
// An interval that starts before the open segment (a late IO the writer could
// not sort) is merged when it touches the segment and otherwise counted on
// its own, which can only overstate the union by its overlap with earlier
// segments.
class BusyTime {
 public:
  // In line, as a report adds every IO to several.
  [[gnu::always_inline]] void add(int64_t start, int64_t end) {
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
  int64_t total_ns() const { return open_ ? plus_length(closed_ns_, seg_start_, seg_end_) : closed_ns_; }

 private:
  // sum + (end - start), for end >= start and sum >= 0, up to INT64_MAX:
  // only a made-up trace's times come near it.
  static int64_t plus_length(int64_t sum, int64_t start, int64_t end) {
    const uint64_t length = static_cast<uint64_t>(end) - static_cast<uint64_t>(start);
    return length >= static_cast<uint64_t>(INT64_MAX - sum) ? INT64_MAX : sum + static_cast<int64_t>(length);
  }
  bool open_ = false;
  int64_t seg_start_ = 0;
  int64_t seg_end_ = 0;
  int64_t closed_ns_ = 0;
};

}  // namespace iotape::stats

// The bin of a time series that the last time fell in: IOs come in issue
// order, so most times fall in the same bin as the one before, and this
// finds it without a division. Used by the week page's timeline and offset
// map, whose bins double in width as a trace grows (forget() then).
#pragma once

#include <cstddef>
#include <cstdint>

namespace iotape::analysis {

struct LastBin {
  size_t index = 0;
  int64_t from = 0, to = -1;  // [from, to) from the series' origin; empty at first and after forget()

  bool holds(int64_t rel) const { return rel >= from && rel < to; }
  // [start, end) is not empty and lies within the bin.
  bool holds(int64_t start, int64_t end) const { return start < end && start >= from && end <= to; }
  // The bin `rel` (>= 0) falls in, with bins `width` long; remembered.
  size_t find(int64_t rel, int64_t width) {
    if (holds(rel)) return index;
    index = static_cast<size_t>(rel / width);
    from = static_cast<int64_t>(index) * width;
    to = from + width;
    return index;
  }
  void forget() { to = -1; }
};

}  // namespace iotape::analysis

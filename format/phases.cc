#include "format/phases.h"

#include <algorithm>

namespace iotape::format {

PhaseMap::PhaseMap(const v1::TraceHeader& h) : by_source_(h.source() == v1::SOURCE_REPLAY) {
  for (int i = 0; i < h.phases_size(); ++i) {
    const v1::Phase& p = h.phases(i);
    if (p.ios() > 0) ranges_.push_back({p.first_index(), p.first_index() + p.ios(), p.start_ns(), i});
  }
  by_time_ = ranges_;
  std::sort(ranges_.begin(), ranges_.end(), [](const Range& a, const Range& b) { return a.first < b.first; });
  std::sort(by_time_.begin(), by_time_.end(), [](const Range& a, const Range& b) { return a.start_ns < b.start_ns; });
}

int PhaseMap::of(const Io& io, uint64_t position) const {
  if (by_source_) {
    if (io.source_index < 0) return -1;
    position = static_cast<uint64_t>(io.source_index);
  }
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), position,
                             [](uint64_t v, const Range& r) { return v < r.first; });
  if (it == ranges_.begin()) return -1;
  --it;
  return position < it->end ? it->phase : -1;
}

int PhaseMap::at_time(int64_t issue_ns) const {
  auto it = std::upper_bound(by_time_.begin(), by_time_.end(), issue_ns,
                             [](int64_t v, const Range& r) { return v < r.start_ns; });
  return it == by_time_.begin() ? -1 : std::prev(it)->phase;
}

}  // namespace iotape::format

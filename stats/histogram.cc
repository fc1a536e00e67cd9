#include "stats/histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace iotape::stats {

namespace {
constexpr uint64_t kSub = uint64_t{1} << LogLinearHistogram::kSubBits;
}

uint64_t LogLinearHistogram::lowest_in(uint32_t index) {
  if (index < kSub) return index;
  const int shift = static_cast<int>(index >> kSubBits) - 1;
  const uint64_t mantissa = index & (kSub - 1);
  return (kSub + mantissa) << shift;
}

uint64_t LogLinearHistogram::highest_in(uint32_t index) {
  if (index < kSub) return index;
  const int shift = static_cast<int>(index >> kSubBits) - 1;
  return lowest_in(index) + ((uint64_t{1} << shift) - 1);
}

void LogLinearHistogram::merge(const LogLinearHistogram& other) {
  if (other.count_ == 0) return;
  if (other.counts_.size() > counts_.size()) counts_.resize(other.counts_.size());
  for (size_t i = 0; i < other.counts_.size(); ++i) counts_[i] += other.counts_[i];
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
  count_ += other.count_;
  sum_ += other.sum_;
}

uint64_t LogLinearHistogram::percentile(double p) const {
  if (count_ == 0) return 0;
  const double wanted = std::ceil(std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(count_));
  const uint64_t rank = std::max<uint64_t>(1, static_cast<uint64_t>(wanted));
  uint64_t seen = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    seen += counts_[i];
    if (seen >= rank) {
      const auto idx = static_cast<uint32_t>(i);
      const uint64_t low = lowest_in(idx);
      const uint64_t mid = low + (highest_in(idx) - low + 1) / 2;
      return std::clamp(mid, min_, max_);
    }
  }
  return max_;
}

std::vector<LogLinearHistogram::Bucket> LogLinearHistogram::buckets() const {
  std::vector<Bucket> out;
  for (size_t i = 0; i < counts_.size(); ++i)
    if (counts_[i]) out.push_back({lowest_in(static_cast<uint32_t>(i)), highest_in(static_cast<uint32_t>(i)), counts_[i]});
  return out;
}

}  // namespace iotape::stats

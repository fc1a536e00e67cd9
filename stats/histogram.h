// LogLinearHistogram: counts of non-negative integers (latencies in ns, IO
// sizes in bytes) in HdrHistogram-style buckets, so percentiles of billions of
// values need a few kilobytes and histograms of several traces can be merged.
//
// Buckets: values below 2^kSubBits (128) each have their own bucket. Above,
// every power-of-two range [2^e, 2^(e+1)) is cut into 2^kSubBits equal
// buckets, so a bucket is never wider than 1/128 of its lower bound. A value
// is reported as the middle of its bucket (clamped to the exact min and max
// seen), which is within kRelativeError = 1/256 (0.39%) of the true value.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

namespace iotape::stats {

class LogLinearHistogram {
 public:
  static constexpr int kSubBits = 7;
  static constexpr double kRelativeError = 1.0 / (2 << kSubBits);

  // In line, as a report adds every IO to several histograms: growing the
  // buckets is the rare case, out of line.
  [[gnu::always_inline]] void add(uint64_t value, uint64_t count = 1) {
    if (count == 0) return;
    const uint32_t i = index_of(value);
    if (i >= counts_.size()) [[unlikely]]
      grow(i);
    counts_[i] += count;
    min_ = std::min(min_, value);
    max_ = std::max(max_, value);
    count_ += count;
    sum_ += static_cast<double>(value) * static_cast<double>(count);
  }
  void merge(const LogLinearHistogram& other);

  uint64_t count() const { return count_; }
  uint64_t min() const { return count_ ? min_ : 0; }
  uint64_t max() const { return max_; }
  double mean() const { return count_ ? sum_ / static_cast<double>(count_) : 0.0; }

  // Nearest-rank percentile (0 < p <= 100): the smallest recorded value v with
  // at least p% of the values <= v, within kRelativeError. 0 when empty.
  uint64_t percentile(double p) const;

  // The non-empty buckets, in increasing order: [low, high] inclusive.
  struct Bucket {
    uint64_t low;
    uint64_t high;
    uint64_t count;
  };
  std::vector<Bucket> buckets() const;

  // Bucket arithmetic, exposed for tests.
  static uint32_t index_of(uint64_t value) {
    constexpr uint64_t kSub = uint64_t{1} << kSubBits;
    if (value < kSub) return static_cast<uint32_t>(value);
    const int e = std::bit_width(value) - 1;  // value in [2^e, 2^(e+1))
    const int shift = e - kSubBits;
    const uint64_t mantissa = (value >> shift) - kSub;  // 0 .. kSub-1
    return static_cast<uint32_t>((static_cast<uint64_t>(shift + 1) << kSubBits) + mantissa);
  }
  static uint64_t lowest_in(uint32_t index);
  static uint64_t highest_in(uint32_t index);

 private:
  [[gnu::noinline]] void grow(uint32_t index) { counts_.resize(index + 1); }

  std::vector<uint64_t> counts_;  // grown to the highest index used
  uint64_t count_ = 0;
  uint64_t min_ = UINT64_MAX;  // the least value added, as min() returns it once one is
  uint64_t max_ = 0;
  double sum_ = 0;  // a double: sums of ns latencies overflow 64 bits on long traces
};

}  // namespace iotape::stats

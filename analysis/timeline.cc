#include "analysis/timeline.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace iotape::analysis {

namespace {

constexpr int64_t kHourNs = 3'600'000'000'000;
constexpr int64_t kDayNs = 24 * kHourNs;
constexpr uint32_t kAllDevices = UINT32_MAX;

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

}  // namespace

int CoarseHistogram::bucket_of(uint64_t value) {
  if (value < 4) return static_cast<int>(value);
  const int e = std::bit_width(value) - 1;  // 2^e <= value < 2^(e+1), e >= 2
  const int sub = static_cast<int>((value >> (e - 2)) & 3);
  return std::min(kBuckets - 1, e * 4 + sub);
}

uint64_t CoarseHistogram::lowest_in(int bucket) {
  if (bucket < 4) return static_cast<uint64_t>(bucket);
  const int e = bucket / 4, sub = bucket % 4;
  return static_cast<uint64_t>(4 + sub) << (e - 2);
}

void CoarseHistogram::add(uint64_t value) {
  ++counts_[static_cast<size_t>(bucket_of(value))];
  ++count_;
}

void CoarseHistogram::merge(const CoarseHistogram& other) {
  for (int i = 0; i < kBuckets; ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
}

uint64_t CoarseHistogram::percentile(double p) const {
  if (count_ == 0) return 0;
  const auto rank = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(p / 100.0 * static_cast<double>(count_))));
  uint64_t seen = 0;
  for (int i = 0; i < kBuckets; ++i) {
    seen += counts_[i];
    if (seen >= rank) {
      if (i < 4 || i == kBuckets - 1) return lowest_in(i);
      return (lowest_in(i) + lowest_in(i + 1) - 1) / 2;
    }
  }
  return lowest_in(kBuckets - 1);
}

bool BusySegments::add(int64_t start, int64_t end, int64_t& closed_start, int64_t& closed_end) {
  if (open_ && start <= end_) {  // overlaps or touches the open segment (a late IO merges too)
    start_ = std::min(start_, start);
    end_ = std::max(end_, end);
    return false;
  }
  const bool closed = open_;
  closed_start = start_;
  closed_end = end_;
  open_ = true;
  start_ = start;
  end_ = end;
  return closed;
}

bool BusySegments::open(int64_t& start, int64_t& end) const {
  start = start_;
  end = end_;
  return open_;
}

Timeline::Timeline(const v1::TraceHeader& header, size_t max_bins) : max_bins_(std::max<size_t>(max_bins, 2)) {
  if (header.clock() == v1::CLOCK_DOMAIN_REALTIME) {
    wall_clock_ = true;
  } else if (header.anchor_unix_ns() != 0) {
    wall_clock_ = true;
    to_unix_ns_ = header.anchor_unix_ns() - header.anchor_trace_ns();
  }
}

void Timeline::set_origin(int64_t origin_ns) {
  origin_known_ = true;
  origin_ns_ = origin_ns;
  last_.forget();
  last_hour_to_ = last_hour_from_;
  // Rows start at midnight (UTC) before the origin with a wall clock, at the
  // origin without.
  day_zero_ns_ = wall_clock_ ? floor_div(origin_ns + to_unix_ns_, kDayNs) * kDayNs - to_unix_ns_ : origin_ns;
}

Timeline::Bin& Timeline::grow_to(size_t i) {
  bins_.resize(i + 1);
  return bins_[i];
}

size_t Timeline::find_index(int64_t rel) {
  while (static_cast<uint64_t>(rel / bin_ns_) >= max_bins_) coarsen();
  return last_.find(rel, bin_ns_);
}

void Timeline::coarsen() {
  std::vector<Bin> merged((bins_.size() + 1) / 2);
  for (size_t i = 0; i < bins_.size(); ++i) {
    Bin& to = merged[i / 2];
    Bin& from = bins_[i];
    if (to.busy_ns.size() < from.busy_ns.size()) to.busy_ns.resize(from.busy_ns.size());
    for (size_t d = 0; d < from.busy_ns.size(); ++d) to.busy_ns[d] += from.busy_ns[d];
    to.busy_all_ns += from.busy_all_ns;
    to.in_flight_ns += from.in_flight_ns;
    to.latency.merge(from.latency);
  }
  bins_ = std::move(merged);
  bin_ns_ *= 2;
  last_.forget();  // the bin found last moved
}

template <typename Add>
void Timeline::spread(int64_t start, int64_t end, Add add) {
  if (last_.holds(start - origin_ns_, end - origin_ns_))
    return add(last_.index, end - start);   // most IOs and busy periods are shorter than a bin
  index_of(end > start ? end - 1 : start);  // coarsen before spreading: the bins must not move under the loop
  for (size_t i = index_of(start); origin_ns_ + static_cast<int64_t>(i) * bin_ns_ < end; ++i) {
    const int64_t lo = std::max(start, origin_ns_ + static_cast<int64_t>(i) * bin_ns_);
    const int64_t hi = std::min(end, origin_ns_ + static_cast<int64_t>(i + 1) * bin_ns_);
    if (hi > lo) add(i, hi - lo);
  }
}

void Timeline::spread_busy(int64_t start, int64_t end, uint32_t device) {
  if (end <= start) return;
  spread(start, end, [&](size_t i, int64_t ns) {
    Bin& b = bin(i);
    if (device == kAllDevices) {
      b.busy_all_ns += ns;
    } else {
      if (b.busy_ns.size() <= device) b.busy_ns.resize(device + 1);
      b.busy_ns[device] += ns;
      if (one_device_) b.busy_all_ns += ns;
    }
  });
  if (device == kAllDevices || one_device_) spread_hours(start, end);
}

void Timeline::spread_hours(int64_t start, int64_t end) {
  if (start >= last_hour_from_ && end <= last_hour_to_) {  // within the hour met last
    hours_[last_hour_ / 24][last_hour_ % 24] += end - start;
    return;
  }
  for (int64_t h = floor_div(std::max(start, day_zero_ns_) - day_zero_ns_, kHourNs);; ++h) {
    const int64_t cell_start = day_zero_ns_ + h * kHourNs;
    if (cell_start >= end) break;
    const int64_t lo = std::max(start, cell_start), hi = std::min(end, cell_start + kHourNs);
    const auto day = static_cast<size_t>(h / 24);
    if (day >= kMaxDays) {
      hours_cut_ = true;
      break;
    }
    if (hours_.size() <= day) hours_.resize(day + 1, std::array<int64_t, 24>{});
    if (hi > lo) hours_[day][static_cast<size_t>(h % 24)] += hi - lo;
    last_hour_ = static_cast<size_t>(h);
    last_hour_from_ = cell_start;
    last_hour_to_ = cell_start + kHourNs;
  }
}

void Timeline::add(const format::Io& io, int64_t end_ns) {
  if (!origin_known_) set_origin(io.issue_ns);
  const int64_t start = io.device_start_ns();
  const int64_t end = std::max(end_ns, start);
  Bin& b = bin(index_of(io.issue_ns));
  if (io.has_complete() && (io.op == format::Op::kRead || io.op == format::Op::kWrite) && !io.never_issued())
    b.latency.add(static_cast<uint64_t>(std::max<int64_t>(0, io.complete_ns - io.issue_ns)));
  if (io.never_issued()) return;  // no device time: nothing in flight, nothing busy
  spread(start, end, [this](size_t i, int64_t ns) { bin(i).in_flight_ns += static_cast<double>(ns); });
  if (per_device_.size() <= io.device) per_device_.resize(io.device + 1);
  if (one_device_ && io.device != first_device_) {
    if (first_device_ == kNoDevice) {
      first_device_ = io.device;
    } else {
      // A second device: from here on the union of all is a sweep of its
      // own, starting from the first device's open segment.
      one_device_ = false;
      all_ = per_device_[first_device_];
    }
  }
  int64_t s = 0, e = 0;
  if (per_device_[io.device].add(start, end, s, e)) spread_busy(s, e, io.device);
  if (!one_device_ && all_.add(start, end, s, e)) spread_busy(s, e, kAllDevices);
}

void Timeline::finish() {
  int64_t s = 0, e = 0;
  for (uint32_t d = 0; d < per_device_.size(); ++d)
    if (per_device_[d].open(s, e)) spread_busy(s, e, d);
  if (all_.open(s, e)) spread_busy(s, e, kAllDevices);
  per_device_.clear();
  all_ = BusySegments();
}

}  // namespace iotape::analysis

// Timeline: what `iotape report --html` draws over time, from the IOs a
// report counts, in the same pass: per bin of trace time the busy time of
// each device, the latency (D2C) percentiles of reads and writes, the mean
// number of IOs in flight, and busy time per hour of the day.
//
// Memory is bounded whatever the trace's length: bins start at 1 s and,
// when the trace outgrows max_bins, double in width (neighbours merge), so a
// minute gets 1 s bins, a day 64 s and a week 512 s (with 2048 bins). Each
// bin keeps a coarse latency histogram (4 buckets per power of two: its
// percentiles are within 12% of the exact value), under 1 KB a bin.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "analysis/last_bin.h"
#include "format/io.h"
#include "iotape/v1/trace.pb.h"

namespace iotape::analysis {

// Counts of values in buckets of a quarter of a power of two: a small,
// mergeable histogram for one bin's latencies.
class CoarseHistogram {
 public:
  static constexpr int kBuckets = 4 * 48;  // values up to 2^48 ns (3 days); larger ones share the last
  void add(uint64_t value);
  void merge(const CoarseHistogram& other);
  uint64_t count() const { return count_; }
  // Nearest-rank percentile (0 < p <= 100): the middle of the bucket holding
  // it; 0 when empty.
  uint64_t percentile(double p) const;
  static int bucket_of(uint64_t value);
  static uint64_t lowest_in(int bucket);

 private:
  std::array<uint32_t, kBuckets> counts_{};  // a bin of 4 billion IOs in one bucket is beyond any trace
  uint64_t count_ = 0;
};

// The union of [start, end) intervals arriving in start order, handed on in
// closed segments (as stats::BusyTime sums them) so they can be spread over
// bins. A segment is handed on when an interval starts after its end.
class BusySegments {
 public:
  // Returns true and the closed segment when [start, end) starts a new one.
  bool add(int64_t start, int64_t end, int64_t& closed_start, int64_t& closed_end);
  // The open segment, if any (at the end of the pass).
  bool open(int64_t& start, int64_t& end) const;

 private:
  bool open_ = false;
  int64_t start_ = 0, end_ = 0;
};

class Timeline {
 public:
  struct Bin {
    std::vector<int64_t> busy_ns;  // per device index of the header; shorter: 0
    int64_t busy_all_ns = 0;       // all devices together (the union)
    double in_flight_ns = 0;       // sum of IO time in the bin: / width = mean IOs in flight
    CoarseHistogram latency;       // reads and writes, D2C, by issue time
  };
  // Wall-clock hours: the header's anchor (or a REALTIME clock) gives each
  // trace time a UTC time of day; without one, hours count from the origin.
  explicit Timeline(const v1::TraceHeader& header, size_t max_bins = 2048);
  // Bin 0 starts here: the trace's first IO, as for the report's series.
  void set_origin(int64_t origin_ns);
  bool has_origin() const { return origin_known_; }
  // An IO the report counts; `end_ns` its end as the report clips it.
  void add(const format::Io& io, int64_t end_ns);
  // Closes the open busy segments. Call once, after the last add.
  void finish();

  int64_t origin_ns() const { return origin_ns_; }
  int64_t bin_ns() const { return bin_ns_; }
  const std::vector<Bin>& bins() const { return bins_; }
  // Busy time per hour: row = day, column = hour of day (UTC with a wall
  // clock). Row 0 is the day of the origin.
  const std::vector<std::array<int64_t, 24>>& hours() const { return hours_; }
  // The days the hours cover at most: a year (and a day, for the hours
  // before the origin). Busy time after them is not in hours() (its grid
  // would grow with the trace's span, not its IOs); hours_cut() says so.
  static constexpr size_t kMaxDays = 367;
  bool hours_cut() const { return hours_cut_; }
  bool wall_clock() const { return wall_clock_; }
  // Where row 0 starts: with a wall clock the Unix time of its midnight
  // (UTC), else 0 (the origin).
  int64_t first_day_unix_ns() const { return wall_clock_ ? day_zero_ns_ + to_unix_ns_ : 0; }
  // The same in trace time: the hours' grid starts here.
  int64_t first_day_ns() const { return day_zero_ns_; }

 private:
  // In line, with the rare cases out of line: several calls for every IO.
  [[gnu::always_inline]] Bin& bin(size_t i) { return i < bins_.size() ? bins_[i] : grow_to(i); }
  Bin& grow_to(size_t i);
  [[gnu::always_inline]] size_t index_of(int64_t t) {          // coarsens first when t lies beyond max_bins
    const int64_t rel = std::max<int64_t>(0, t - origin_ns_);  // late IOs, issued before the first, count in bin 0
    // IOs come in issue order: most times fall in the bin of the one before,
    // found without a division.
    return last_.holds(rel) ? last_.index : find_index(rel);
  }
  size_t find_index(int64_t rel);
  // Calls add(bin index, ns) for each bin [start, end) overlaps, with the time it holds of it.
  template <typename Add>
  void spread(int64_t start, int64_t end, Add add);
  void coarsen();
  void spread_busy(int64_t start, int64_t end,
                   uint32_t device);  // device UINT32_MAX: all
  void spread_hours(int64_t start, int64_t end);

  size_t max_bins_;
  bool wall_clock_ = false;
  int64_t to_unix_ns_ = 0;  // trace time + this = Unix time, with a wall clock
  bool origin_known_ = false;
  int64_t origin_ns_ = 0;
  int64_t day_zero_ns_ = 0;  // trace time of midnight of row 0's day
  int64_t bin_ns_ = 1'000'000'000;
  std::vector<Bin> bins_;
  LastBin last_;  // the bin index_of found last
  std::vector<std::array<int64_t, 24>> hours_;
  bool hours_cut_ = false;
  // The hour cell spread_hours met last: hour last_hour_ from row 0's midnight,
  // [from, to); none at first.
  size_t last_hour_ = 0;
  int64_t last_hour_from_ = 0;
  int64_t last_hour_to_ = 0;
  BusySegments all_;
  std::vector<BusySegments> per_device_;
  // While the IOs are of one device, its busy time is that of all: all_
  // is not swept, the device's segments count for both.
  bool one_device_ = true;
  static constexpr uint32_t kNoDevice = UINT32_MAX;
  uint32_t first_device_ = kNoDevice;
};

}  // namespace iotape::analysis

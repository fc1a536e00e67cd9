// The metric accumulators of `iotape report`. Each has one job, sees the IOs
// of the selection one at a time in issue order, and keeps a bounded state, so
// a report of a week-long trace needs as little memory as one of a minute.
// Definitions follow what storage reviews publish (see `iotape report --help`).
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "format/io.h"
#include "format/phases.h"
#include "format/summary.h"
#include "stats/busy_time.h"
#include "stats/histogram.h"
#include "stats/queue_depth.h"

namespace iotape::analysis {

// Sizes of reads and writes: the review buckets plus the full histogram.
// A size between two named buckets goes to the lower one (6 KiB counts as
// "4K"); "128K" is exactly 128 KiB and ">128K" anything larger.
class SizeMix {
 public:
  static constexpr std::array<std::string_view, 8> kBucketNames = {"<4K", "4K",  "8K",   "16K",
                                                                   "32K", "64K", "128K", ">128K"};
  void add(const format::Io& io);
  uint64_t ios() const { return histogram_.count(); }
  const std::array<uint64_t, 8>& buckets() const { return buckets_; }
  const stats::LogLinearHistogram& histogram() const { return histogram_; }
  static int bucket_of(uint64_t bytes);

 private:
  std::array<uint64_t, 8> buckets_{};
  stats::LogLinearHistogram histogram_;
};

// Sequential share of reads and writes: an IO is sequential when it starts
// where the previous IO of the same direction on the same device ended.
class Sequential {
 public:
  void add(const format::Io& io);
  uint64_t ios() const { return ios_; }
  uint64_t sequential() const { return sequential_; }

 private:
  std::vector<std::array<uint64_t, 2>> next_offset_;  // [device][read, write]; kNone = no IO yet
  uint64_t ios_ = 0;
  uint64_t sequential_ = 0;
};

// Latency of one operation type. D2C (issue to completion) is the latency of
// the device and the headline number; Q2D (queued to issued) and Q2C (queued
// to completed) exist when the trace has queue times, as in blktrace's btt.
struct OpLatency {
  stats::LogLinearHistogram d2c;
  stats::LogLinearHistogram q2d;
  stats::LogLinearHistogram q2c;
  void add(const format::Io& io);
};

// IOs and bytes per time interval (by issue time), for IOPS and MB/s over
// time. Starts at 1 s per point; when the series would exceed max_points the
// interval doubles and neighbouring points merge, so memory stays bounded and
// a week-long trace gets a coarser series.
class TimeSeries {
 public:
  struct Point {
    uint64_t ios = 0;
    uint64_t bytes_read = 0;
    uint64_t bytes_written = 0;
  };
  explicit TimeSeries(size_t max_points = 4096, int64_t interval_ns = 1'000'000'000);
  void set_origin(int64_t origin_ns) {
    origin_ns_ = origin_ns;
    last_from_ = kNoPoint;
  }
  void add(const format::Io& io);
  int64_t interval_ns() const { return interval_ns_; }
  const std::vector<Point>& points() const { return points_; }

 private:
  static void count(Point& p, const format::Io& io);

  size_t max_points_;
  int64_t interval_ns_;
  int64_t origin_ns_ = 0;
  std::vector<Point> points_;
  static constexpr int64_t kNoPoint = std::numeric_limits<int64_t>::min();
  size_t last_ = 0;               // the point the last IO went to,
  int64_t last_from_ = kNoPoint;  // from this time on
};

// Per-process totals, top N by bytes. At most `capacity` processes are
// tracked: beyond that the one with the fewest bytes is replaced by the
// newcomer, which inherits its byte count as an error bound (the Space-Saving
// algorithm), so every process with more than total/capacity bytes is found
// and its bytes are overstated by at most `error_bytes`. Its busy time (the
// union of its own IOs' [issue, end]) inherits the evicted one's likewise.
class Processes {
 public:
  struct Entry {
    uint32_t pid = 0;
    std::string comm;
    uint64_t ios = 0;
    uint64_t bytes = 0;
    uint64_t bytes_read = 0;
    uint64_t bytes_written = 0;
    uint64_t bytes_discarded = 0;     // discards and write-zeroes move no data,
    uint64_t bytes_write_zeroes = 0;  // but count in `bytes`: shown apart
    uint64_t error_bytes = 0;  // 0 unless the entry replaced an evicted one
    int64_t busy_ns = 0;       // time with at least one of its IOs outstanding
  };
  explicit Processes(size_t capacity = 1024) : capacity_(capacity) {}
  // `end_ns` as for IoTotals::add (the completion, clipped to a report's
  // window).
  void add(const format::Io& io, int64_t end_ns);
  // The IOs added after this may name their process through memory that held
  // another name before (a reader's next batch): call it between batches.
  void new_batch();
  // The n entries with the most bytes, ties broken by pid then comm.
  std::vector<Entry> top(size_t n) const;
  bool approximate() const { return evictions_ > 0; }
  uint64_t evictions() const { return evictions_; }

 private:
  struct Key {
    uint32_t pid;
    size_t comm_hash;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const { return k.comm_hash * 31 + k.pid; }
  };
  struct Tracked {
    Entry entry;
    stats::BusyTime busy;  // its IOs come in issue order, as BusyTime needs
    int64_t inherited_busy_ns = 0;
  };
  Tracked& find(const format::Io& io);
  Tracked& insert(const format::Io& io, const Key& key);

  size_t capacity_;
  std::unordered_map<Key, Tracked, KeyHash> entries_;
  // The entries met last, by pid, and where the IO that met each kept its
  // name: most IOs find theirs here comparing that pointer (names stay put
  // within a batch), the others comparing the name, without hashing it.
  // Entries stay put in the map until evicted, which empties the table.
  struct Recent {
    Tracked* tracked = nullptr;
    const char* name = nullptr;
  };
  static size_t slot(uint32_t pid) { return (pid * 0x9E3779B1u) >> 24; }
  std::array<Recent, 256> recent_{};
  uint64_t evictions_ = 0;
};

// Per-phase figures of a trace with phases (TraceHeader.phases): each phase's
// IOs, busy time and latency. Memory: one record per phase.
class PhaseResults {
 public:
  struct Figures : format::IoTotals {
    int64_t busy_ns = 0;
    stats::LogLinearHistogram latency;  // reads and writes, issue to completion
  };
  explicit PhaseResults(const v1::TraceHeader& header);
  // `position`: the IO's position in the trace; `end_ns` as for IoTotals::add.
  void add(const format::Io& io, uint64_t position, int64_t end_ns);
  // Indexed like TraceHeader.phases; a phase without IOs has zeros.
  std::vector<Figures> figures() const;

 private:
  format::PhaseMap map_;
  std::vector<Figures> figures_;
  std::vector<stats::BusyTime> busy_;
};

}  // namespace iotape::analysis

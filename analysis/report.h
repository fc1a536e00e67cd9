// The analysis behind `iotape report`: one streaming pass over a trace feeding
// the accumulators of accumulators.h. Memory does not grow with the trace.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/accumulators.h"
#include "analysis/timeline.h"
#include "format/reader.h"
#include "format/summary.h"
#include "units/units.h"

namespace iotape::analysis {

struct ReportOptions {
  std::optional<format::DeviceFilter> device;  // only this device's IOs
  units::Window window;                // only IOs issued in it; busy time is clipped to it
  size_t series_points = 4096;         // bound of the IOPS/MB/s series (see TimeSeries)
  size_t tracked_processes = 1024;     // bound of the per-process table (see Processes)
  bool by_phase = false;               // figures per phase of the trace's header (Report::phases)
  bool include_self = false;           // also IOs flagged format::flag::kSelf (the recording's own)
  std::string source;                  // the trace's file(s), as errors about its IOs name it
  // The week page's timeline, filled in the same pass: its origin set to the
  // first IO's issue time (the origin of the window and of every series)
  // before any IO is counted, then the IOs the report counts, with their
  // clipped end. Called directly, not through a callback, as it is per IO.
  Timeline* timeline = nullptr;
};

// The IOs a report counts: issued within the options' window (which counts
// from the trace's first IO, whatever the filter), on the selected device,
// and not the recording's own unless included. analyse() selects with it, and
// so can accumulators that see the trace's IOs elsewhere (the week page's, on
// the reading thread) to count the same ones.
class IoSelection {
 public:
  explicit IoSelection(const ReportOptions& o);
  // The trace's first IO's issue time; no IO is kept before it is known.
  void set_origin(int64_t origin_ns);
  // Learns the devices the header has added since the last call.
  void update(const v1::TraceHeader& header);
  // IOs issued in [lo, hi) are in the window.
  int64_t lo() const { return lo_; }
  int64_t hi() const { return hi_; }
  bool keeps(const format::Io& io) const {
    return io.issue_ns >= lo_ && io.issue_ns < hi_ && (io.device < keep_.size() ? keep_[io.device] : !only_) &&
           (include_self_ || !(io.flags & format::flag::kSelf));
  }

 private:
  units::Window window_;
  std::optional<format::DeviceFilter> only_;
  bool include_self_;
  std::vector<bool> keep_;  // by device index
  int64_t lo_ = std::numeric_limits<int64_t>::max(), hi_ = std::numeric_limits<int64_t>::min();
};

// The totals are of the selected IOs; their ends are clipped to the window.
struct Report : format::IoTotals {
  uint32_t devices = 0;        // devices with at least one selected IO

  // Union of [issue, completion] of all IOs / reads only / writes only.
  int64_t busy_ns = 0;
  int64_t read_busy_ns = 0;
  int64_t write_busy_ns = 0;

  std::array<OpLatency, format::kOpCount> latency;  // indexed by Op
  SizeMix sizes;          // reads and writes
  Sequential sequential;  // reads and writes
  stats::QueueDepth queue_depth; // all IOs
  TimeSeries series;
  Processes processes;
  std::vector<PhaseResults::Figures> phases;  // with by_phase: indexed like TraceHeader.phases

  uint64_t dropped_events = 0;
  uint64_t late_ios = 0;
  format::ReadStatus status;
  std::map<std::string, std::string> metadata;  // the trace's, end keys included (TraceReader::metadata)

  Report(size_t series_points, size_t tracked_processes)
      : series(series_points), processes(tracked_processes) {}
  const OpLatency& latency_of(format::Op o) const { return latency[static_cast<int>(o)]; }
  int64_t idle_ns() const { return duration_ns() - busy_ns; }
  // Latency of reads and writes together (merged histograms).
  stats::LogLinearHistogram data_latency() const;
};

// Average data rate in MB/s (10^6 bytes per second) over a busy time; 0 when idle.
double data_rate_MBps(uint64_t bytes, int64_t busy_ns);

// Reads the trace from where the reader stands to its end. Throws UsageError
// when the window starts after the end of the trace's last IO (no IO of any
// device could be in it), naming the trace's span, and InputError at an IO
// with a time more than 2^62 ns (146 years) from the first IO's issue (a
// made-up or corrupt trace: no recording spans that, and the differences of
// such times overflow), naming options.source and the IO.
Report analyse(format::TraceReader& reader, const ReportOptions& options = {});

}  // namespace iotape::analysis

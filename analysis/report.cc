#include "analysis/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <optional>

#include "format/error.h"

namespace iotape::analysis {

namespace {

// Times within 2^62 ns of the first IO's issue: their differences cannot
// overflow.
class TimeRange {
 public:
  TimeRange(int64_t origin, const std::string& source)
      : lo_(origin < INT64_MIN + kSpan ? INT64_MIN : origin - kSpan),
        hi_(origin > INT64_MAX - kSpan ? INT64_MAX : origin + kSpan),
        origin_(origin),
        source_(source) {}
  // Throws InputError naming the IO at `position` when one of its times lies outside.
  void check(const format::Io& io, uint64_t position) const {
    if (inside(io.issue_ns) && (!io.has_queue() || inside(io.queue_ns)) &&
        (!io.has_complete() || inside(io.complete_ns)))
      return;
    const int64_t t = !inside(io.issue_ns)                     ? io.issue_ns
                      : io.has_queue() && !inside(io.queue_ns) ? io.queue_ns
                                                               : io.complete_ns;
    throw format::InputError(
        fmt::format("{}: IO {}: its time {} ns lies more than 146 years from the first IO's issue "
                    "({} ns): not the times of one recording",
                    source_, position, t, origin_));
  }

 private:
  static constexpr int64_t kSpan = int64_t{1} << 62;
  bool inside(int64_t t) const { return t >= lo_ && t <= hi_; }
  int64_t lo_, hi_, origin_;
  const std::string& source_;
};

}  // namespace

double data_rate_MBps(uint64_t bytes, int64_t busy_ns) {
  return busy_ns > 0 ? static_cast<double>(bytes) / 1e6 / (static_cast<double>(busy_ns) / 1e9) : 0.0;
}

stats::LogLinearHistogram Report::data_latency() const {
  stats::LogLinearHistogram h = latency_of(format::Op::kRead).d2c;
  h.merge(latency_of(format::Op::kWrite).d2c);
  return h;
}

IoSelection::IoSelection(const ReportOptions& o) : window_(o.window), only_(o.device), include_self_(o.include_self) {}

void IoSelection::set_origin(int64_t origin_ns) {
  // A window from 0 keeps IOs issued before the first (late ones), as no window does.
  lo_ = window_.start_ns ? origin_ns + window_.start_ns : std::numeric_limits<int64_t>::min();
  hi_ = window_.end_ns ? origin_ns + *window_.end_ns : std::numeric_limits<int64_t>::max();
}

void IoSelection::update(const v1::TraceHeader& h) {
  for (int d = static_cast<int>(keep_.size()); d < h.devices_size(); ++d)
    keep_.push_back(!only_ || (h.devices(d).major() == only_->major && h.devices(d).minor() == only_->minor));
}

Report analyse(format::TraceReader& reader, const ReportOptions& o) {
  Report r(o.series_points, o.tracked_processes);
  stats::BusyTime busy, read_busy, write_busy;
  IoSelection selection(o);
  std::vector<bool> device_used;
  bool origin_known = false;
  int64_t origin = 0;
  int64_t trace_end = format::kNoTime;  // latest end of an IO before the window, or a later issue
  std::optional<PhaseResults> phases;
  std::optional<TimeRange> range;
  if (o.by_phase) phases.emplace(reader.header());
  uint64_t position = 0;  // of the batch's first IO in the trace

  for (auto batch = reader.next_batch(); !batch.empty(); position += batch.size(), batch = reader.next_batch()) {
    if (!origin_known) {
      // The window is relative to the trace's first IO, whatever the filter.
      origin_known = true;
      origin = batch.front().issue_ns;
      range.emplace(origin, o.source);
      selection.set_origin(origin);
      r.series.set_origin(origin + o.window.start_ns);
      if (o.timeline) o.timeline->set_origin(origin);
    }
    // A batch that reaches the window's start shows the window is not past the trace's end.
    trace_end = std::max(trace_end, batch.back().issue_ns);
    const int64_t lo = selection.lo(), hi = selection.hi();
    if (batch.front().issue_ns >= hi) break;
    if (batch.back().issue_ns < lo) {
      for (size_t i = 0; i < batch.size(); ++i) {
        const format::Io& io = batch[i];
        range->check(io, position + i);
        trace_end = std::max(trace_end, io.has_complete() ? std::max(io.complete_ns, io.issue_ns) : io.issue_ns);
      }
      continue;
    }
    selection.update(reader.header());
    r.processes.new_batch();
    for (size_t i = 0; i < batch.size(); ++i) {
      const format::Io& io = batch[i];
      range->check(io, position + i);
      if (!selection.keeps(io)) continue;
      const int64_t end = io.has_complete() ? std::min(std::max(io.complete_ns, io.issue_ns), hi) : io.issue_ns;
      r.add(io, end);
      if (phases) phases->add(io, position + i, end);
      if (io.device >= device_used.size()) device_used.resize(io.device + 1);
      if (!device_used[io.device]) {
        device_used[io.device] = true;
        ++r.devices;
      }

      if (!io.never_issued()) {
        busy.add(io.issue_ns, end);
        if (io.op == format::Op::kRead) read_busy.add(io.issue_ns, end);
        if (io.op == format::Op::kWrite) write_busy.add(io.issue_ns, end);
      }

      r.latency[static_cast<int>(io.op)].add(io);
      r.queue_depth.add(io);
      if (io.op == format::Op::kRead || io.op == format::Op::kWrite) {
        r.sizes.add(io);
        r.sequential.add(io);
      }
      r.series.add(io);
      r.processes.add(io, end);
      if (o.timeline) o.timeline->add(io, end);
    }
  }
  // A window wholly after the trace would report zeros as if measured.
  if (origin_known && r.ios == 0 && o.window.start_ns > 0 && trace_end < selection.lo())
    throw format::UsageError(fmt::format(
        "--window starts at {:.3f} s, after the trace's last IO: the trace spans 0..{:.3f} s from its first IO",
        o.window.start_ns / 1e9, (trace_end - origin) / 1e9));
  r.busy_ns = busy.total_ns();
  r.read_busy_ns = read_busy.total_ns();
  r.write_busy_ns = write_busy.total_ns();
  r.dropped_events = reader.dropped_events();
  r.late_ios = reader.late_ios();
  r.status = reader.status();
  r.metadata = reader.metadata();
  if (phases) r.phases = phases->figures();
  return r;
}

}  // namespace iotape::analysis

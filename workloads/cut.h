// `iotape cut`: a shorter workload cut out of a long capture.
//
// Two streaming passes. The first measures every fixed window of the trace
// (--length, on a grid from the trace's first IO): busy time (the analysis
// module's BusyTime, each IO's interval clipped to the windows it covers),
// bytes and IOs of the selected IOs. The choice is then made from these
// per-window figures, among the windows that lie within the trace (a last
// window shorter than --length is never taken): heavy = the windows with the
// highest activity score, light = the windows with the lowest score that
// still hold selected IOs, leaving out the windows heavy takes. The second
// pass copies the chosen windows' IOs in time order, shifting times so that no
// idle gap (no IO outstanding) is longer than max_idle, within a window or
// where one window joins the next. Memory: one small record per window.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "format/reader.h"
#include "format/summary.h"
#include "stats/busy_time.h"
#include "units/units.h"

namespace iotape::workloads {

enum class CutMode { kHeavy, kLight, kWindows };

// Which IOs of the input take part (in the measurement and in the output).
struct IoFilter {
  std::optional<format::DeviceFilter> device;
  std::optional<std::string> comm;
  std::optional<uint32_t> pid;
  bool include_self = false;  // also IOs flagged format::flag::kSelf (the recording's own)
};

struct CutOptions {
  std::vector<std::string> traces;  // one trace (rotated parts in order)
  std::string out;
  CutMode mode = CutMode::kHeavy;
  std::vector<units::Window> windows;  // kWindows: relative to the first IO
  IoFilter filter;
  int64_t length_ns = 60'000'000'000;  // window length for heavy/light
  uint32_t count = 1;                  // windows to pick for heavy/light
  int64_t max_idle_ns = 1'000'000'000;
  // Discards and write-zeroes move no data: their bytes are shown, and scored
  // only when this is set.
  bool score_discards = false;
};

// Activity of one window of the grid.
struct WindowActivity {
  int64_t start_ns = 0;  // relative to the trace's first IO
  int64_t end_ns = 0;
  int64_t busy_ns = 0;
  uint64_t bytes = 0;               // read and written (with score_discards: discarded and write-zeroes too)
  uint64_t discard_bytes = 0;       // shown; scored only with score_discards
  uint64_t write_zeroes_bytes = 0;  // likewise
  uint64_t ios = 0;
  double score = 0;      // see Activity
};

// Pass 1's result. The score of a window is the mean of its busy time and its
// bytes, each relative to the highest of any window; a trace without
// completion times has no busy time, and its IO count stands in for it.
struct Activity {
  std::vector<WindowActivity> windows;  // the whole grid, idle windows included
  bool timed = false;                   // some selected IO has a completion time
  bool score_discards = false;
  int64_t span_ns = 0;                  // the trace's first issue to its last end (all IOs)
  // Windows that lie within the trace: those a cut may take.
  size_t within() const;
  std::string score_basis() const;
};

struct ChosenWindow {
  WindowActivity activity;
  std::string why;
};

struct CutResult {
  std::vector<ChosenWindow> chosen;  // in time order
  size_t windows_measured = 0;
  size_t windows_within = 0;         // of those, the windows within the trace (candidates)
  int64_t span_ns = 0;               // the trace's span (heavy/light)
  std::string score_basis;
  std::string note;                  // why fewer windows than asked for were taken; empty if not
  uint64_t ios = 0;                  // IOs written
  // Idle time (no selected IO outstanding) cut away by max_idle: gaps within a
  // window, and where one window joins the next, the idle end of the one plus
  // the idle start of the other.
  int64_t removed_idle_ns = 0;
  int64_t between_ns = 0;            // trace time between the chosen windows, not in the cut
};

// Pass 1 as an accumulator, for a pass that does more (`iotape report
// --html`): sees every IO of the trace in read order, filtered or not, and
// measures what measure_windows does. Memory: one record per window.
class WindowMeter {
 public:
  // The most windows measured: 2 years of 60 s windows, 64 MiB.
  static constexpr int64_t kMaxWindows = 1 << 20;
  // Throws UsageError when length_ns is not positive.
  WindowMeter(IoFilter filter, int64_t length_ns, bool score_discards = false);
  void add(const format::Io& io, const v1::TraceHeader& header);
  // Throws UsageError when an IO lay beyond kMaxWindows windows from the
  // first (a long trace in short windows, or a made-up time), naming it.
  Activity finish();

 private:
  // In line, growing the grid out of line: once for every IO.
  [[gnu::always_inline]] WindowActivity& window(size_t i) {
    return i < result_.windows.size() ? result_.windows[i] : grow_to(i);
  }
  WindowActivity& grow_to(size_t i);
  void close_before(size_t i);
  size_t window_of(int64_t t);  // t >= 0, from the origin
  IoFilter filter_;
  bool self_only_;  // the filter looks at the self flag only
  int64_t length_ns_;
  Activity result_;
  int64_t origin_ = format::kNoTime;
  int64_t last_end_ = format::kNoTime;
  int64_t reach_lo_ = 0, reach_hi_ = 0;  // times the grid reaches, from the first IO's issue
  std::string beyond_;                   // the IO the grid did not reach, once met: measuring stops
  uint64_t ios_ = 0;
  // Busy time of the windows [open_first_, open_first_ + open_.size()) that
  // an interval may still reach into; a window closes once an IO is issued
  // after its end, as no later IO but a late one can start in it.
  std::vector<stats::BusyTime> open_;
  size_t open_first_ = 0;
  // The window the last IO started in, [at_lo_, at_lo_ + length_ns_): most
  // IOs start there, without a division.
  size_t at_ = 0;
  int64_t at_lo_ = 0;
};

// Pass 1: the activity of every window of `length_ns` from the first IO.
Activity measure_windows(format::TraceReader& reader, const IoFilter& filter, int64_t length_ns,
                         bool score_discards = false);

// The windows a heavy / light cut takes (at most `count`, fewer when fewer
// qualify; *note then says why), in time order, each with the reason it was
// taken. Light leaves out the `count` windows heavy takes; with none left it
// throws UsageError.
std::vector<ChosenWindow> pick_heavy(const Activity& activity, uint32_t count, std::string* note = nullptr);
std::vector<ChosenWindow> pick_light(const Activity& activity, uint32_t count, std::string* note = nullptr);

// Both passes and the output trace. Throws TraceError.
CutResult cut(const CutOptions& options);

}  // namespace iotape::workloads

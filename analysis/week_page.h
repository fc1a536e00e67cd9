// The week page (`iotape report --html`): one self-contained HTML page (inline
// SVG, no scripts, the look of `iotape compare`) of a long recording. In
// order, each a section with its id:
//   recorded    devices, capture hooks and back end, clock, losses, the
//               recording's own IO left out
//   totals      the report's totals, busy time, data rates and latency
//               percentiles (the figures of report_json, printed from it)
//   busy        busy % per device over time
//   rates       read and write MB/s over time (the report's series)
//   iops        IOPS over time (the report's series)
//   latency     D2C p50 and p99 of reads and writes per bin
//   queue       mean IOs in flight per bin
//   heatmap     busy % per hour of the day, a row per day
//   offsets     offset against time per device, as a density
//   processes   the top processes by bytes, IOs and busy time
//   windows     the windows given (iotape cut's choices) and their commands
// The windows are also shaded on the charts over time. The output depends
// only on the input.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/offset_map.h"
#include "analysis/report.h"
#include "analysis/timeline.h"

namespace iotape::analysis {

// A window of the trace to mark, relative to its first IO.
struct MarkedWindow {
  std::string kind;  // "heavy", "light": its label on the charts
  int64_t start_ns = 0, end_ns = 0;
  int64_t busy_ns = 0;
  uint64_t bytes = 0, ios = 0;
  std::string why;
  std::string command;  // the command line that takes it
};

struct WeekPage {
  std::vector<std::string> traces;
  const Report* report = nullptr;
  const v1::TraceHeader* header = nullptr;
  // report_json(*report, ..., by_process): the totals are printed from it.
  const nlohmann::ordered_json* json = nullptr;
  const Timeline* timeline = nullptr;  // finished
  const OffsetMap* offsets = nullptr;
  // The capture's closing keys (capture.self_ios, ...): the last part's.
  std::map<std::string, std::string> end_keys;
  std::vector<MarkedWindow> windows;
  std::string windows_note;  // why a window is missing; empty if none is
  size_t top = 10;           // processes per table
};

std::string week_page_html(const WeekPage& page);

}  // namespace iotape::analysis

// Totals of a trace, computed in one streaming pass (what `iotape info` shows).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "format/io.h"
#include "format/reader.h"

namespace iotape::format {

struct DeviceFilter {
  uint32_t major = 0;
  uint32_t minor = 0;
};
// Parses "MAJ:MIN"; throws TraceError on anything else.
DeviceFilter parse_device_filter(const std::string& text);

struct OpTotals {
  uint64_t ios = 0;
  uint64_t bytes = 0;
};

// The counts every pass over a selection of IOs keeps (`iotape info`'s and
// `iotape report`'s alike).
struct IoTotals {
  uint64_t ios = 0;
  std::array<OpTotals, kOpCount> by_op{};  // indexed by Op
  int64_t first_ns = kNoTime;              // earliest issue
  int64_t last_ns = kNoTime;               // latest end (see add)
  uint64_t with_queue_time = 0;
  uint64_t with_completion = 0;
  uint64_t errors = 0;                     // IOs with a non-zero status

  // Counts `io`, which ends at `end_ns`: its completion, or its issue when
  // it has none (a caller may clip it, as report's window does). In line:
  // once per IO of every pass.
  [[gnu::always_inline]] void add(const Io& io, int64_t end_ns) {
    ++ios;
    OpTotals& t = by_op[static_cast<int>(io.op)];
    ++t.ios;
    t.bytes += io.length;
    first_ns = first_ns == kNoTime ? io.issue_ns : std::min(first_ns, io.issue_ns);
    last_ns = last_ns == kNoTime ? end_ns : std::max(last_ns, end_ns);
    with_queue_time += io.has_queue();
    with_completion += io.has_complete();
    errors += io.status != 0;
  }
  const OpTotals& op(Op o) const { return by_op[static_cast<int>(o)]; }
  int64_t duration_ns() const { return ios ? last_ns - first_ns : 0; }
};

struct TraceSummary : IoTotals {
  uint64_t dropped_events = 0;
  uint64_t late_ios = 0;
  std::vector<uint64_t> ios_per_device;    // indexed like the device table
  ReadStatus status;
};

// Reads the whole trace. With a filter, only IOs of that device count (the
// trace-wide dropped/late counts are reported regardless).
TraceSummary summarize(TraceReader& reader, const std::optional<DeviceFilter>& only = std::nullopt);

}  // namespace iotape::format

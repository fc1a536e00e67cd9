// The phases of a trace (TraceHeader.phases; docs/format.md, "Phases"): which
// phase an IO belongs to.
#pragma once

#include <cstdint>
#include <vector>

#include "format/io.h"
#include "iotape/v1/trace.pb.h"

namespace iotape::format {

class PhaseMap {
 public:
  explicit PhaseMap(const v1::TraceHeader& header);

  // The phase (index into TraceHeader.phases) of the IO at `position` in the
  // trace, or, in a replay result, of the source IO it replayed
  // (io.source_index); -1 when it is in none.
  int of(const Io& io, uint64_t position) const;
  // The phase whose issue-time range holds `issue_ns`: from its start_ns up
  // to the next phase's. Phases are disjoint in issue time in every trace
  // that is not a replay result; -1 before the first.
  int at_time(int64_t issue_ns) const;

 private:
  struct Range {
    uint64_t first = 0;
    uint64_t end = 0;   // one past the last
    int64_t start_ns = 0;
    int phase = 0;
  };
  std::vector<Range> ranges_;       // phases with IOs, by first index
  std::vector<Range> by_time_;      // the same, by start_ns
  bool by_source_ = false;
};

}  // namespace iotape::format

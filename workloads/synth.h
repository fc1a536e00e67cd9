// The generator behind `iotape synth`: a profile played into a trace.
//
// Queue-depth model: IOs come in segments. A segment of depth k issues k IOs
// in a quick ramp (100 ns apart; the i-th sees depth i), then issues each
// further IO at the instant an outstanding one completes, so it sees depth k,
// until qd_run IOs were issued at depth k; then it drains. Completion times
// come from the profile's nominal device (DeviceModel). Segment depths are
// drawn so that the share of IOs seeing each depth is the profile's "qd":
// with run length L, depth q is seen by L IOs of every depth-q segment and by
// one IO of every deeper segment, which is solved for the segment mix from the
// deepest depth down. Shares that fall with depth are met exactly; others as
// closely as non-negative segment counts allow.
//
// The output depends on the profile, the options and the seed only: the same
// inputs give a byte-identical file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "workloads/profile.h"

namespace iotape::workloads {

struct SynthOptions {
  uint64_t seed = 1;
  std::optional<uint64_t> span;         // overrides the profile's
  std::optional<uint64_t> ios;          // length; overrides the profile's
  std::optional<int64_t> duration_ns;   // length in trace time; overrides the profile's
};

struct SynthResult {
  uint64_t ios = 0;
  int64_t duration_ns = 0;  // first issue to last completion
};

// Writes the trace to `out`. Throws TraceError.
SynthResult synthesize(const Profile& profile, const SynthOptions& options, const std::string& out);

}  // namespace iotape::workloads

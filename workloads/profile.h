// Workload profiles: what `iotape synth` generates, as data. A profile is a
// JSON document (format in docs/workloads.md); the built-in ones are written
// in the same format and compiled in. Parsing expands sweeps, so a Profile is
// a flat list of phases that the generator plays in order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace iotape::workloads {

// A weighted range of values (IO sizes in bytes, or queue depths); a value is
// drawn uniformly from [low, high] (sizes in steps of 512 bytes).
struct Share {
  uint64_t low = 0;
  uint64_t high = 0;
  double weight = 0;
};

// The nominal device whose service times give a synthesized trace its
// completion times: an IO of `bytes` alone on the device takes
// latency + bytes / bandwidth; with depth IOs in flight on a device that
// serves `parallelism` at once it takes that times max(1, depth / parallelism).
struct DeviceModel {
  int64_t latency_ns = 50'000;
  double bandwidth_Bps = 500e6;
  uint32_t parallelism = 4;
  int64_t service_ns(uint64_t bytes, uint64_t depth) const;
};

struct Phase {
  std::string name;
  double weight = 1;           // share of the profile's length, relative to the other phases
  double read_share = 0.5;     // 0..1
  std::vector<Share> sizes;    // IO sizes
  double sequential = 0;       // 0..1: chance an IO continues where its thread's last one of that direction ended
  std::vector<Share> qd;       // wanted share of IOs seeing each queue depth at issue
  uint64_t qd_run = 1;         // IOs issued at a segment's full depth before it drains; 0 = the whole phase
  double idle_probability = 0; // 0..1: chance of an idle gap after a segment drains
  int64_t idle_mean_ns = 0;    // exponential gap length ...
  int64_t idle_max_ns = 0;     // ... capped here
  uint32_t threads = 1;        // each works on its own zone (span / threads), IOs round-robin
};

struct Profile {
  std::string name;
  std::string description;
  uint64_t span = 0;           // bytes the IOs may touch, from offset 0
  uint64_t ios = 0;            // default length in IOs (0 when given as a duration)
  int64_t duration_ns = 0;     // default length in time (0 when given in IOs)
  DeviceModel device;
  std::vector<Phase> phases;   // sweeps expanded, in play order
};

// Throws InputError naming `origin` and the offending key. Sizes and
// durations are written as on the command line (units/units.h).
Profile parse_profile(const nlohmann::json& doc, const std::string& origin);

// A built-in profile by name, else a profile file at that path.
Profile load_profile(const std::string& name_or_path);

struct BuiltinProfile {
  const char* name;
  const char* json;
};
const std::vector<BuiltinProfile>& builtin_profiles();

}  // namespace iotape::workloads

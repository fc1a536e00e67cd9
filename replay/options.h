// What `iotape replay` was asked to do, as plain values. The CLI fills it;
// every other part of the replay reads it and never parses text itself.
// Plain values: copied, never shared mutably between threads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "units/units.h"

namespace iotape::replay {

enum class Timing {
  kOriginal,  // each IO at its recorded time (scaled by speed) on an absolute schedule
  kAfap,      // each IO as soon as the queue-depth rule allows
};

enum class Fit {
  kFail,   // refuse to start when an IO does not fit the target
  kWrap,   // offset modulo the aligned target size
  kScale,  // offset scaled from the source device size to the target size
};

enum class EventTime { kIssue, kQueue };

// Which clock times the result's IOs.
enum class Times {
  kAuto,    // the device's where it can be observed (BPF), else the replayer's, with a warning
  kDevice,  // the device's, or refuse to start
  kUser,    // the replayer's: submission to reap, host overhead included
};

// What is written before the timed replay, so that reads find data.
enum class Prefill {
  kNone,
  kReads,  // the ranges the replay reads
  kFull,   // every byte of every target
  // kReads when writes are allowed and every target is a block device, else
  // kNone; prepare_replay() settles it before anything reads the options.
  kAuto,
};

struct DataPattern {
  enum class Kind { kRandom, kZero, kCompressible } kind = Kind::kRandom;
  int compress_percent = 0;  // kCompressible: share of every 4 KiB block that is zeroes
};

// How each issue thread's io_uring submits and completes (its setup flags).
struct RingSetup {
  // IORING_SETUP_IOPOLL: completions are polled from the device's poll queues
  // instead of interrupting; reads and writes only, O_DIRECT, onto devices
  // with poll queues (queue/io_poll). The issue thread spins while IOs are in
  // flight, as a device this fast is worth a core.
  bool iopoll = false;
  // IORING_SETUP_SQPOLL: a kernel thread takes the submissions off the ring,
  // so the issue thread enters the kernel only to wake it or to wait; it
  // spins on a CPU of its own while the replay submits.
  bool sqpoll = false;
};

// One --device-map entry: a trace device to a target index. The device is
// named by its index when source_index is set, else by its name in the
// trace's device table when source_name is set, else by MAJ:MIN.
struct DeviceMapEntry {
  std::optional<uint32_t> source_index;
  std::string source_name;
  uint32_t source_major = 0;
  uint32_t source_minor = 0;
  uint32_t target = 0;  // index into ReplayOptions::targets
};

struct ReplayOptions {
  std::vector<std::string> traces;  // the source trace (rotated parts in order)
  std::vector<std::string> targets;
  std::string result;
  Timing timing = Timing::kOriginal;
  double speed = 1.0;
  uint32_t qd = 0;  // 0 = recorded (dependency-preserving), else a fixed window
  // Idle gaps longer than this are shortened to it. Unset: 25 ms with afap,
  // no cap with original timing. 0 with afap: no idle at all.
  std::optional<int64_t> max_idle_ns;
  EventTime events = EventTime::kIssue;
  std::vector<DeviceMapEntry> device_map;
  Fit fit = Fit::kFail;
  DataPattern data;
  Times times = Times::kAuto;
  Prefill prefill = Prefill::kNone;
  bool allow_write = false;
  bool force = false;
  bool dry_run = false;
  bool stop_on_error = false;
  // Only the source IOs issued in this part of the trace.
  units::Window window;
  // Upper bound on IOs in flight when qd is "recorded".
  uint32_t max_in_flight = 1024;
  // Issue threads, each with a ring of its own (replay/issue_lanes.h): above
  // 1 only with afap timing and a fixed qd, which they share out.
  uint32_t threads = 1;
  RingSetup ring;

  int64_t effective_max_idle_ns() const;  // -1 = no cap
};

// Text forms used by the CLI (durations and windows: units/units.h); each
// throws UsageError naming the bad text.
DataPattern parse_data(const std::string& text);          // "random", "zero", "compress:PCT"
std::vector<DeviceMapEntry> parse_device_map(const std::string& text, const std::vector<std::string>& targets);
std::string describe_data(const DataPattern& d);           // parse_data's inverse
const char* prefill_name(Prefill p);                       // "none", "reads", "full" ("auto" unsettled)
std::string describe(const ReplayOptions& o);              // one line, for the result header and --dry-run
std::string describe_ring(const RingSetup& r);             // "interrupt", "iopoll", "sqpoll", "sqpoll+iopoll"

}  // namespace iotape::replay

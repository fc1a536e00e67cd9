// The replay schedule: the source trace turned, one IO at a time and in
// constant memory, into the IOs to issue on the targets and when.
//
// Placement maps a trace device to a target (--device-map) and an offset to
// the target (--fit). Schedule streams the source through it and computes
// each IO's due time. Plan is one streaming pass over the whole source that
// everything needs before the first IO: totals for --dry-run, the largest IO
// (buffer sizes), whether anything writes, and whether every IO fits.
//
// Threads: a Schedule reads its trace on the thread that calls it (the
// replay's schedule thread); a Plan is made once and then only read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "format/io.h"
#include "format/reader.h"
#include "replay/options.h"
#include "replay/target.h"

namespace iotape::replay {

// One IO to replay.
struct ReplayIo {
  uint64_t source_index = 0;  // position in the source trace
  int64_t due_ns = 0;         // original timing: issue time relative to the replay start
  int64_t idle_ns = 0;        // afap: pause after the replay drains, before this IO (a recorded idle gap)
  int64_t rec_time_ns = 0;    // recorded issue (or queue) time, trace clock
  int64_t rec_complete_ns = 0;  // recorded completion; the recorded time when unknown
  bool rec_never_issued = false;  // Io::never_issued() as recorded: no busy time, never outstanding
  uint64_t offset = 0;        // on the target
  uint64_t length = 0;
  uint32_t target = 0;
  format::Op op = format::Op::kRead;
  uint32_t flags = 0;
};

// True for operations that change the target's contents.
bool modifies(format::Op op);

// Trace device -> target: --device-map when given (unmapped devices are not
// replayed), else device i to target i, and a single target takes the one
// trace device that has IOs, whatever its index. Which devices have IOs is
// known only once the whole trace is read: make_plan refuses a trace whose
// devices this leaves without a target, or that has more devices than there
// are targets, so that no two devices share a target unasked.
// Reads the header's device table as it grows while the trace is read.
class DeviceMap {
 public:
  static constexpr int kSkipped = -1;   // --device-map leaves the device out
  static constexpr int kNoTarget = -2;  // no target without a --device-map entry
  DeviceMap(const v1::TraceHeader& header, size_t targets, const ReplayOptions& o);
  int target_of(uint32_t device) const;  // a target index, kSkipped or kNoTarget
  // Whether `e` names trace device `device` (by index, name or MAJ:MIN).
  bool names(const DeviceMapEntry& e, uint32_t device) const;

 private:
  const v1::TraceHeader& header_;
  size_t targets_;
  const ReplayOptions& o_;
};

// Where an IO lands on its target (--fit).
class Placement {
 public:
  // `source_size[d]`: the size of trace device d, for --fit scale.
  Placement(const DeviceMap& map, const std::vector<Target>& targets, Fit fit, std::vector<uint64_t> source_size);
  // Places `io`; false when its device is not replayed. Under --fit fail the
  // offset is kept: make_plan refuses traces with IOs past a target's end.
  bool place(const format::Io& io, uint32_t& target, uint64_t& offset) const;

 private:
  const DeviceMap& map_;
  std::vector<uint64_t> source_size_;
  std::vector<uint64_t> span_;   // usable bytes per target (aligned down)
  std::vector<uint32_t> align_;  // per target
  Fit fit_;
};

// Due times (original timing) and idle pauses (afap) from recorded times,
// with idle gaps (no IO outstanding) capped at --max-idle. The schedule is
// absolute: a due time depends on recorded times only, never on how late an
// earlier IO was issued, so lateness cannot accumulate.
class Timeline {
 public:
  explicit Timeline(const ReplayOptions& o);
  // `t`: the IO's recorded event time; `complete`: its recorded completion or kNoTime.
  void add(int64_t t, int64_t complete, int64_t& due_ns, int64_t& idle_ns);

 private:
  double speed_;
  int64_t cap_;
  bool afap_;
  bool started_ = false;
  int64_t t0_ = 0, busy_until_ = 0, removed_ = 0;
};

// The time --events chooses for `io`.
int64_t event_time(const format::Io& io, EventTime e);

// The source IOs inside --window, with their source index, less the flush
// requests the kernel made for a recorded fsync or FUA write (op flush, no
// submitter, issued while that write was outstanding): replaying the write
// (an fsync, RWF_DSYNC) makes the kernel issue them again, and replaying
// them as well would flush two or three times for each recorded fsync.
class WindowedSource {
 public:
  WindowedSource(format::TraceReader& reader, const ReplayOptions& o);
  const format::Io* next(uint64_t& index);                     // nullptr at the end
  uint64_t kernel_flushes() const { return kernel_flushes_; }  // left out so far
  uint64_t read() const { return index_; }  // source IOs read so far, inside the window or not

 private:
  format::TraceReader& reader_;
  const ReplayOptions& o_;
  std::span<const format::Io> batch_;
  size_t pos_ = 0;
  uint64_t index_ = 0;
  bool started_ = false;
  bool ended_ = false;
  int64_t first_ = 0;
  std::vector<int64_t> flush_until_;  // by device: when the last recorded fsync or FUA write completed
  uint64_t kernel_flushes_ = 0;
};

class Schedule {
 public:
  Schedule(format::TraceReader& reader, const Placement& placement, const ReplayOptions& o);
  // The next IO to replay; false at the end of the source (or window).
  bool next(ReplayIo& out);

 private:
  const Placement& placement_;
  const ReplayOptions& o_;
  WindowedSource source_;
  Timeline timeline_;
};

// Where the IOs of one trace device go, for --dry-run and refusals.
struct DeviceRoute {
  uint32_t device = 0;  // index in the trace's device table
  std::string label;    // "#1 8:16 sdb" as the table describes it
  uint64_t ios = 0;     // its IOs inside the window
  int target = DeviceMap::kSkipped;  // a target index, or DeviceMap::kSkipped
};

struct Plan {
  uint64_t source_ios = 0;        // IOs read from the source, inside the window or not
  uint64_t ios = 0;               // IOs to replay
  uint64_t skipped = 0;           // IOs of unmapped devices
  uint64_t kernel_flushes = 0;    // flushes the replayed fsyncs make again (see WindowedSource)
  uint64_t by_op[format::kOpCount] = {};
  uint64_t bytes_by_op[format::kOpCount] = {};
  uint64_t preflush_writes = 0;  // writes with a flush before them (replayed as an fsync, then the write)
  uint64_t max_length = 0;
  int64_t span_ns = 0;            // recorded time from the first to the last IO
  int64_t last_due_ns = 0;        // original timing: due time of the last IO
  uint64_t with_completion = 0;   // IOs with a recorded completion
  std::vector<uint64_t> device_end;  // largest end offset per trace device
  std::vector<std::string> unfit;    // --fit fail: why IOs do not fit (one line per target)
  std::vector<DeviceRoute> routes;   // every trace device with IOs in the window, in index order

  bool writes() const;
};

// Streams the whole source (within the window) once; `reader` is left at the
// end. Fills `unfit` when an IO cannot be placed on its target. Throws
// UsageError, naming the trace's devices and the targets, when trace devices
// have no target or would share one without a --device-map, or when a
// --device-map entry names no device of the trace.
Plan make_plan(format::TraceReader& reader, const std::vector<Target>& targets, const ReplayOptions& o);

}  // namespace iotape::replay

// DeviceTimes: the block-layer times of the replay's own IOs, measured where
// a recording measures them.
//
// Watches the devices under the targets with the eBPF programs of
// `iotape record` (observer/backend.h), filtered to this process (its io_uring
// workers are threads of it) plus the requests the kernel makes without a
// submitter (flushes), and joins each request to the replayed IOs it served:
// - by device, byte range and op (reads, writes, discards, write-zeroes,
//   which a device without the command gets as writes): a
//   request that served several IOs (a merge) gives each of them its times;
//   an IO served by several requests (a split, or a file IO over several
//   extents) takes the first issue and the last completion of its parts;
// - by time for requests without a range (flushes, the empty pre-flush write
//   of an fsync): the IO with flush semantics (flush, pre-flush, FUA) on that
//   device whose submission and reap enclose the request; an fsync takes one
//   empty write (its own: concurrent fsyncs share flush requests, not those).
// A request counts for an IO only if it completed between the IO's submission
// and its reap. Request times are CLOCK_BOOTTIME, converted to the replay's
// CLOCK_MONOTONIC.
//
// Targets: a block device (a partition maps onto its whole disk) or a regular
// file opened O_DIRECT on a filesystem over a block device, whose extents
// (FIEMAP, read once at the start) map file offsets to the device. IOs that
// reach no device (reads of unwritten extents, holes filled by a write after
// the start) keep no device times and are counted.
// Flushes beyond an IO's first (an fsync's pre- and post-flush) become result
// IOs of their own, op flush with the IO's source index, as a recording has
// them; one interval from the first to the last would count the time between
// them as busy.
//
// Threads: one DeviceTimes serves one replay; it is used by the thread that
// writes the result (join() and the counts).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "format/io.h"
#include "replay/target.h"

namespace iotape::replay {

struct DeviceTimesStats {
  uint64_t timed = 0;              // IOs given device times
  uint64_t untimed = 0;            // IOs no request was found for
  uint64_t split = 0;              // IOs served by more than one request
  uint64_t merged = 0;             // IOs whose request also served another IO
  uint64_t extra_requests = 0;     // further flush requests, written as IOs of their own
  uint64_t unclaimed_requests = 0; // requests of this process no IO claimed
  uint64_t dropped = 0;            // events the observer lost (its buffer full)
  uint64_t uncompleted = 0;        // requests whose completion the kernel never handed to the
                                   // observer's programs (observer/iotrace.bpf.c): their IOs are untimed
};

class DeviceTimes {
 public:
  // Starts watching. Throws std::runtime_error with the reason when device
  // times cannot be had: no BPF (not root, no BTF), a target on no block
  // device or a bio-based one, a file opened without O_DIRECT.
  // REQUIRES: `targets` outlives this object.
  explicit DeviceTimes(const std::vector<Target>& targets);
  ~DeviceTimes();
  DeviceTimes(const DeviceTimes&) = delete;
  DeviceTimes& operator=(const DeviceTimes&) = delete;

  // `ios`: replayed IOs in issue order, each with queue_ns = its submission
  // and complete_ns = its reap (kNoTime if not reaped), device = target
  // index. Sets issue_ns and complete_ns to the device's times, or (no
  // request found) leaves issue_ns = submission and clears complete_ns.
  // Appends the further flush requests as IOs after them.
  // REQUIRES: every IO given was reaped before the call; calls come in issue
  // order, from one thread.
  void join(std::vector<format::Io>& ios);

  // Names the devices watched, for the result header: "loop3 (7:3)".
  std::string describe() const;
  // Stops watching, so that stats() counts every request whose completion
  // never came. REQUIRES: the last join() is done.
  void finish();
  DeviceTimesStats stats() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace iotape::replay

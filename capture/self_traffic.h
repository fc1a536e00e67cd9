// SelfTraffic: the IOs a recording causes itself.
//
// A recorder whose trace lies on a disk it records sees its own trace
// writes, the flush requests its fdatasync makes and the journal commits the
// fdatasync forces; written in turn, they cause more: on an idle machine, a
// trace of nothing but itself. An IO is the recording's own when
//  - a thread of this process submitted it (the eBPF back end names the
//    thread group, the blktrace back end the thread), or
//  - it is on the disk holding the trace, was queued (or, without a queue
//    time, issued) while one of the recorder's syncs was in progress, and was
//    submitted by a journal thread ("jbd2/...") or by no process (the flush
//    machinery's flush requests). A journal commit another process's fsync
//    shares with the recorder's is counted as the recorder's.
// The recorder leaves these out of the trace (or keeps them marked with
// format::flag::kSelf) and counts them per device.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "format/io.h"
#include "observer/devices.h"

namespace iotape::capture {

class SelfTraffic {
 public:
  // `devices`: the recorded ones, indexed like the IOs' device field;
  // `trace_path`: the trace file (or the stem of its parts).
  SelfTraffic(const std::vector<observer::BlockDevice>& devices, const std::string& trace_path);

  // A sync of the trace (fdatasync, or fsync of its directory) ran from
  // `begin_ns` to `end_ns`, CLOCK_BOOTTIME.
  void add_sync(int64_t begin_ns, int64_t end_ns);
  // True (and counted) when the recording caused `io`.
  bool caused(const format::Io& io);

  uint64_t ios() const;
  uint64_t bytes() const;
  // capture.self_ios and capture.self_bytes (totals), and the same keys with
  // ".DEVICE" per recorded device.
  void write_metadata(const std::function<void(const std::string&, const std::string&)>& set) const;
  // "loop0 12 IOs 48.0 KiB, ..." for the devices with any.
  std::string describe() const;

 private:
  bool own_thread(uint32_t pid) const;
  bool during_sync(int64_t t) const;

  std::vector<observer::BlockDevice> devices_;
  pid_t tgid_;
  std::vector<uint32_t> threads_;      // sorted
  std::optional<uint32_t> trace_disk_;  // index of the disk holding the trace, if recorded
  std::deque<std::pair<int64_t, int64_t>> syncs_;
  std::vector<uint64_t> ios_, bytes_;
};

}  // namespace iotape::capture

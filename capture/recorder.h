// record(): a whole capture session, as `iotape record` runs it.
//
// Builds the header (host, kernel, clock anchors, devices, options), starts
// the back end, and writes IOs until `stop` is set, the duration ends, or a
// write fails (IoError: full disk), then flushes and closes every file. Other
// errors (no device to record, BPF refused, a format limit) are thrown.
// record() installs no signal handlers and prints nothing: the caller sets
// `stop` (from its own handlers) and shows what the callbacks tell it.
//
// The files are valid at every moment, and with a durability other than
// kNone an IO that completed more than flush_interval + 0.1 s before the
// recorder is killed is in them (with kFdatasync, also before a power loss).
// A flush is due when the earliest completion not yet flushed is
// flush_interval old; the 0.1 s is that flush (read the kernel's buffer,
// compress, write, fdatasync) on storage that syncs within it.
//
// IOs arrive in completion order and are written in issue order: each is
// held until every IO issued before it has come, as the back end's in-flight
// tables tell (Backend::oldest_outstanding_ns). An IO in flight longer than
// flush_interval is not waited for: it is written late, out of issue order,
// and counted (the chunks' late_ios).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "capture/trace_output.h"
#include "observer/backend.h"

namespace iotape::capture {

struct RecordOptions {
  std::vector<std::string> devices;  // paths or MAJ:MIN; empty = every request-based whole disk
  std::string backend = "auto";      // "ebpf", "blktrace", or "auto": ebpf where it loads, else blktrace
  OutputOptions output;
  int64_t duration_ns = 0;           // 0 = until a signal
  uint32_t pid = 0;
  std::string comm;
  uint64_t buffer_bytes = 0;
  bool issue_complete_only = false;  // blktrace back end: D and C events only (see observer::BackendOptions)
  // Keep the IOs the recording causes itself (see SelfTraffic), marked
  // format::flag::kSelf; by default they are left out and only counted.
  bool include_self = false;
  // IOs held for issue order at most; beyond it the oldest are written early.
  size_t reorder_max_ios = size_t{1} << 20;
};

struct RecordResult {
  uint64_t ios = 0;
  uint64_t dropped = 0;
  uint64_t unmatched = 0;    // completions that matched no submission: counted, not recorded
  uint64_t unmatched_bytes = 0;
  uint64_t uncompleted = 0;  // IOs recorded without a completion
  uint64_t self_ios = 0;  // caused by the recording itself: left out (or kept, flagged, with include_self)
  uint64_t self_bytes = 0;
  std::string self_detail;  // per device, e.g. "loop0 12 IOs 48.0 KiB"
  uint64_t removed_parts = 0, removed_bytes = 0;  // by retention (OutputOptions::keep_ns, max_total_bytes)
  uint64_t file_bytes = 0;
  std::vector<std::string> paths;  // the parts left
  std::string stop_reason;  // "signal", "duration", or the write error
  bool write_failed = false;
};

// What the capture has done so far, about once a second.
struct RecordProgress {
  int64_t elapsed_ns = 0;
  uint64_t ios = 0;  // IOs seen (some still held for issue order)
  uint64_t bytes = 0;
  uint64_t dropped = 0;
  uint64_t file_bytes = 0;
};

struct RecordCallbacks {
  std::function<void(const std::string&)> note;  // what is recorded, devices skipped; before the first IO
  std::function<void(const RecordProgress&)> progress;
  // After each flush with Durability::kFdatasync, and after the last part is
  // closed: the first `bytes` bytes of `path`, and every part before it, are
  // on stable storage.
  std::function<void(const std::string& path, uint64_t bytes)> durable;
};

// REQUIRES: root (BPF or tracefs). `stop` may be set from a signal handler.
RecordResult record(const RecordOptions& options, const std::atomic<bool>& stop, const RecordCallbacks& callbacks = {});

}  // namespace iotape::capture

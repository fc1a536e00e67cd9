// record(): a whole capture session, as `iotape record` runs it.
//
// Builds the header (host, kernel, clock anchors, devices, options), starts
// the back end, and writes IOs until `stop` is set, the duration ends, or a
// write fails (IoError: full disk), then flushes and closes every file. The
// files are valid at every moment: a killed recorder loses only the IOs since
// the last flush (at most flush_interval plus the reorder window). Other
// errors (no device to record, BPF refused, a format limit) are thrown.
// record() installs no signal handlers and prints nothing: the caller sets
// `stop` (from its own handlers) and shows what the callbacks tell it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "capture/backend.h"
#include "capture/trace_output.h"

namespace iotape::capture {

struct RecordOptions {
  std::vector<std::string> devices;  // paths or MAJ:MIN; empty = every request-based whole disk
  std::string backend = "ebpf";      // "ebpf" or "blktrace"
  OutputOptions output;
  int64_t duration_ns = 0;           // 0 = until a signal
  uint32_t pid = 0;
  std::string comm;
  uint64_t buffer_bytes = 0;
  // IOs arrive in completion order; each is held this long (issue time) to be
  // written in issue order. Longer in flight: written late, and counted.
  int64_t reorder_window_ns = 2'000'000'000;
  size_t reorder_max_ios = size_t{1} << 20;
};

struct RecordResult {
  uint64_t ios = 0;
  uint64_t dropped = 0;
  uint64_t unmatched = 0;    // IOs recorded from their completion alone
  uint64_t uncompleted = 0;  // IOs recorded without a completion
  uint64_t file_bytes = 0;
  std::vector<std::string> paths;
  std::string stop_reason;  // "signal", "duration", or the write error
  bool write_failed = false;
};

// What the capture has done so far, about once a second.
struct RecordProgress {
  int64_t elapsed_ns = 0;
  uint64_t ios = 0;  // IOs seen (some may still wait in the reorder window)
  uint64_t bytes = 0;
  uint64_t dropped = 0;
  uint64_t file_bytes = 0;
};

struct RecordCallbacks {
  std::function<void(const std::string&)> note;  // what is recorded, devices skipped; before the first IO
  std::function<void(const RecordProgress&)> progress;
};

// REQUIRES: root (BPF or tracefs). `stop` may be set from a signal handler.
RecordResult record(const RecordOptions& options, const std::atomic<bool>& stop, const RecordCallbacks& callbacks = {});

}  // namespace iotape::capture

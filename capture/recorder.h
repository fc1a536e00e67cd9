// record(): a whole capture session, as `iotape record` runs it.
//
// Builds the header (host, kernel, clock anchors, devices, options), starts
// the back end, and writes IOs until SIGINT/SIGTERM, the duration, or a write
// failure (full disk), then flushes and closes every file. The files are
// valid at every moment: a killed recorder loses only the IOs since the last
// flush (at most flush_interval plus the reorder window).
#pragma once

#include <cstdint>
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
  bool status_line = false;          // a live line on stderr (when it is a terminal)
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

RecordResult record(const RecordOptions& options);

}  // namespace iotape::capture

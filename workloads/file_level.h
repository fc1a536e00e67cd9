// The file-level tests of `iotape review` (FC-Test style): the target split
// into two partitions (loop devices over its halves, so no partition table
// and no kernel partition support are needed) with an ext4 file system each,
// then file sets created,
// read and copied (within the first partition and to the second), MB/s per
// step, each step's block IO recorded as a trace. A pass is fresh or used:
// the caller prepares the target (discarded, or filled), and the pass makes
// its file systems with or without mke2fs's discard of them.
//
// Each step starts with the files it reads out of the page cache (fsync, then
// POSIX_FADV_DONTNEED on every file), which drops them without emptying the
// whole machine's caches; a write step's time includes its fsyncs.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "replay/target.h"

namespace iotape::workloads {

// A recording of the block IO of one device into a trace; it ends when the
// object is destroyed. workloads cannot use capture, so the caller (the CLI)
// provides it.
class Recording {
 public:
  virtual ~Recording() = default;
};
using StartRecording = std::function<std::unique_ptr<Recording>(const std::string& device, const std::string& trace)>;

struct FileSets {
  uint64_t iso_bytes;               // one large file
  uint32_t mp3_files;               // hundreds of MP3-sized files ...
  uint64_t mp3_bytes;               // ... of this size
  uint32_t program_files;           // a program tree of small files (1..32 KiB) in nested folders
};

struct FileLevelPass {
  std::string name;  // "fresh" or "used": in the trace names, DIR/file-NAME-*.iot
  bool discard;      // mke2fs discards the partitions (its default), or -E nodiscard
};

// Runs the steps of one pass on `target` (a block device, not mounted, held
// by nothing; its contents are overwritten) with files in `dir`/mnt1 and
// mnt2, traces in `dir`; everything is unmounted and detached before it
// returns. Returns {"steps": [{name, files, bytes, duration_s, MBps, trace}],
// "partitions": [...], "mkfs": {discard, discarded_bytes, trace}}:
// discarded_bytes is the kernel's count for the partitions during mkfs
// (/sys/block/X/stat). Throws TraceError; a regular-file target throws
// UsageError.
nlohmann::ordered_json run_file_level(const replay::Target& target, const FileSets& sets, const std::string& dir,
                                      const FileLevelPass& pass, const StartRecording& record,
                                      const std::atomic<bool>& stop);

}  // namespace iotape::workloads

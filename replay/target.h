// Replay targets: opening a block device or regular file for O_DIRECT IO,
// reading its identity, and refusing targets where a replay would do harm.
// A Target is opened and checked on one thread; its descriptor may then be
// used by the thread that owns the engine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "iotape/v1/trace.pb.h"

namespace iotape::replay {

struct Target {
  std::string path;
  int fd = -1;
  bool block = false;        // a block device (else a regular file)
  bool direct = false;       // opened with O_DIRECT
  uint64_t size = 0;         // bytes; nothing is ever written at or beyond it
  uint32_t logical_block = 512;
  uint32_t physical_block = 512;
  uint32_t dev_major = 0, dev_minor = 0;  // of the device (block) or of the file's filesystem
  std::string name;          // "loop3", or the file name
  std::string model, serial;
  bool rotational = false;

  Target() = default;
  Target(Target&& o) noexcept;
  Target& operator=(Target&&) = delete;
  ~Target();  // closes fd

  v1::Device to_device() const;  // for the result trace's device table
};

// Opens `path` read-only or read-write, O_DIRECT (a regular file whose
// filesystem refuses O_DIRECT is opened buffered, and `direct` says so).
// Block devices opened for writing are also opened O_EXCL unless `force`, so
// the kernel itself refuses one that something holds. Throws UsageError for a
// path that does not exist (or is neither a block device nor a regular file),
// DeviceRefused for a busy device, IoError for other failures.
Target open_target(const std::string& path, bool writable, bool force);

// Why replaying onto this block device would be harmful, empty when it is
// not: mounted (itself or a partition, by major:minor in
// /proc/self/mountinfo), holding the root filesystem, in use as swap, or held
// by another device (/sys/block/X/holders). Regular files return empty.
std::vector<std::string> safety_problems(const Target& t);

// open_target(path, writable, force) for a whole-target writer (bench,
// review): throws DeviceRefused naming the first safety problem unless `force`.
Target open_writable_target(const std::string& path, bool force);

// Throws UsageError naming the first target the kernel cannot poll for
// completions (RingSetup::iopoll): not opened O_DIRECT, or on a device
// without poll queues (its queue/io_poll is not 1).
void require_poll_queues(const std::vector<Target>& targets);

}  // namespace iotape::replay

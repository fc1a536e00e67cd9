// Prefill: before the timed replay, write what the replay will read (or the
// whole targets), so that its reads find data. An SSD answers reads of blocks
// never written from its mapping table, without touching flash: a replay of
// them measures nothing. Storage Bench style reviews play their traces on a
// drive that holds data; --prefill makes any target such a drive.
//
// The writes go through the replay's io_uring engine with the --data pattern,
// 1 MiB at most and 16 in flight, and are not part of the result.
// It runs on the calling thread, on the engine that thread owns.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

#include "replay/options.h"
#include "replay/target.h"

namespace iotape::replay {

// The bytes a replay reads, per target, as a bitmap of granules: the
// target's logical block, doubled until the bitmap takes at most 32 MiB (a
// 1 TiB target at 4 KiB). A read covers every granule it touches, so the
// footprint is exact where reads are aligned to the granule.
class ReadFootprint {
 public:
  explicit ReadFootprint(const std::vector<Target>& targets);
  void add(uint32_t target, uint64_t offset, uint64_t length);
  uint64_t bytes() const;  // the footprint's size
  // Calls `f(target, offset, length)` for each run of read bytes, in order.
  void for_each_run(const std::function<void(uint32_t, uint64_t, uint64_t)>& f) const;

 private:
  struct Map {
    uint64_t granule = 0, size = 0;
    std::vector<uint64_t> bits;
  };
  std::vector<Map> maps_;
};

struct PrefillProgress {
  uint64_t done_bytes = 0, total_bytes = 0;
};

// Writes `footprint`'s runs, or every byte of every target when it is null.
// Returns the bytes written; stops early (returning what was written) when
// `stop` is set. Throws IoError when a write fails (one that ends short with
// EIO).
// REQUIRES: the targets are open for writing.
uint64_t prefill(const std::vector<Target>& targets, const ReadFootprint* footprint, DataPattern data,
                 const std::atomic<bool>& stop, const std::function<void(const PrefillProgress&)>& progress);

}  // namespace iotape::replay

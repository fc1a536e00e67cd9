#include "replay/prefill.h"

#include <fmt/format.h>

#include <cstring>

#include "format/error.h"
#include "host/clocks.h"
#include "replay/closed_loop.h"

namespace iotape::replay {
namespace {

constexpr uint64_t kMaxBitmapBits = uint64_t{32} << 23;  // 32 MiB of bitmap
constexpr uint64_t kWriteBytes = 1u << 20;
constexpr uint32_t kInFlight = 16;

}  // namespace

ReadFootprint::ReadFootprint(const std::vector<Target>& targets) {
  for (const Target& t : targets) {
    Map m;
    m.granule = std::max<uint64_t>(t.logical_block, 512);
    while (t.size / m.granule > kMaxBitmapBits) m.granule *= 2;
    m.size = t.size;
    m.bits.assign((t.size / m.granule + 64) / 64, 0);
    maps_.push_back(std::move(m));
  }
}

void ReadFootprint::add(uint32_t target, uint64_t offset, uint64_t length) {
  Map& m = maps_[target];
  if (length == 0 || offset >= m.size) return;
  const uint64_t last = (std::min(offset + length, m.size) - 1) / m.granule;
  for (uint64_t g = offset / m.granule; g <= last; ++g) m.bits[g / 64] |= uint64_t{1} << (g % 64);
}

uint64_t ReadFootprint::bytes() const {
  uint64_t total = 0;
  for_each_run([&](uint32_t, uint64_t, uint64_t len) { total += len; });
  return total;
}

void ReadFootprint::for_each_run(const std::function<void(uint32_t, uint64_t, uint64_t)>& f) const {
  for (uint32_t t = 0; t < maps_.size(); ++t) {
    const Map& m = maps_[t];
    const uint64_t granules = (m.size + m.granule - 1) / m.granule;
    uint64_t g = 0;
    while (g < granules) {
      if (!(m.bits[g / 64] >> (g % 64) & 1)) {
        // Skip whole empty words at a time.
        g = (m.bits[g / 64] >> (g % 64)) ? g + 1 : (g / 64 + 1) * 64;
        continue;
      }
      const uint64_t first = g;
      while (g < granules && (m.bits[g / 64] >> (g % 64) & 1)) ++g;
      const uint64_t start = first * m.granule;
      f(t, start, std::min(g * m.granule, m.size) - start);
    }
  }
}

uint64_t prefill(const std::vector<Target>& targets, const ReadFootprint* footprint, DataPattern data,
                 const std::atomic<bool>& stop, const std::function<void(const PrefillProgress&)>& progress) {
  PrefillProgress prog;
  if (footprint) {
    prog.total_bytes = footprint->bytes();
  } else {
    for (const Target& t : targets) prog.total_bytes += t.size / t.logical_block * t.logical_block;
  }
  // Nothing to write (a trace without reads): no ring, which would hold the
  // targets open a moment past the replay.
  if (prog.total_bytes == 0) return 0;
  int64_t next_progress = host::monotonic_ns() + 1'000'000'000;
  ClosedLoop writes(targets, kWriteBytes, kInFlight, data, [&](const Finished& f) {
    if (f.completion.status < 0)
      throw format::error_errno(targets[f.io.target].path, "prefill write failed", -f.completion.status);
    prog.done_bytes += f.io.length;
    if (progress && f.completion.complete_ns >= next_progress) {
      progress(prog);
      next_progress = f.completion.complete_ns + 1'000'000'000;
    }
  });
  auto write_run = [&](uint32_t target, uint64_t offset, uint64_t length) {
    for (uint64_t pos = offset; pos < offset + length && !stop.load(std::memory_order_relaxed);) {
      ReplayIo io;
      io.op = format::Op::kWrite;
      io.target = target;
      io.offset = pos;
      io.length = std::min(kWriteBytes, offset + length - pos);
      writes.issue(io);
      pos += io.length;
    }
  };
  if (footprint)
    footprint->for_each_run(write_run);
  else
    for (uint32_t t = 0; t < targets.size(); ++t) write_run(t, 0, targets[t].size / targets[t].logical_block * targets[t].logical_block);
  writes.drain();
  if (progress) progress(prog);
  return prog.done_bytes;
}

}  // namespace iotape::replay

// One block IO as iotape records it: the unit every module reads and writes.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>

namespace iotape::format {

enum class Op : uint8_t {
  kRead = 0,
  kWrite = 1,
  kFlush = 2,
  kDiscard = 3,
  kWriteZeroes = 4,
  kOther = 5,
};
inline constexpr int kOpCount = 6;

std::string_view op_name(Op op);  // "read", "write", "flush", "discard", "write-zeroes", "other"
std::optional<Op> op_from_name(std::string_view name);  // op_name's inverse; nullopt for other names

// Request flags, as bits of Io::flags.
namespace flag {
inline constexpr uint32_t kSync = 1u << 0;
inline constexpr uint32_t kFua = 1u << 1;
inline constexpr uint32_t kPreflush = 1u << 2;
inline constexpr uint32_t kMeta = 1u << 3;
inline constexpr uint32_t kReadahead = 1u << 4;
inline constexpr uint32_t kBackground = 1u << 5;
inline constexpr uint32_t kNoMerge = 1u << 6;
// Caused by the recording itself: the recorder's writes of its trace, the
// flushes and journal commits its fdatasync makes. `record` leaves these out
// unless --include-self; `report` and `cut` skip them unless --include-self.
inline constexpr uint32_t kSelf = 1u << 7;
}  // namespace flag

inline constexpr int64_t kNoTime = std::numeric_limits<int64_t>::min();

struct Io {
  int64_t issue_ns = 0;          // dispatch to the device; IOs are ordered by it
  int64_t queue_ns = kNoTime;    // queued/inserted by the submitter, when known
  int64_t complete_ns = kNoTime; // completion, when known
  uint64_t offset = 0;           // bytes from the start of the device
  uint64_t length = 0;           // bytes
  uint32_t device = 0;           // index into the trace's device table
  Op op = Op::kRead;
  uint32_t flags = 0;            // flag:: bits
  int32_t status = 0;            // 0, or a negative errno
  uint32_t pid = 0;              // 0 = unknown
  std::string_view comm;         // process name, empty = unknown (see the reader for lifetime)
  uint64_t cgroup = 0;           // 0 = unknown
  int32_t cpu = -1;              // -1 = unknown
  int64_t source_index = -1;     // replay results: index of the source IO; -1 = none

  bool has_queue() const { return queue_ns != kNoTime; }
  bool has_complete() const { return complete_ns != kNoTime; }
  uint64_t end() const { return offset + length; }

  // An fsync's empty pre-flush write that the flush machinery completed
  // without issuing it to the device (recorded with its queue time as issue
  // time; its flush requests are IOs of their own). It kept the device busy
  // for no time: busy time, queue depth and device latency treat it as an
  // instant at its completion, as replay results record it.
  // In line, as device_start_ns: a report's accumulators ask, for every IO.
  [[gnu::always_inline]] bool never_issued() const {
    return op == Op::kWrite && length == 0 && (flags & flag::kPreflush) && has_queue() && has_complete() &&
           issue_ns == queue_ns;
  }
  // When the device started on it: the issue time, or the completion of an
  // IO it never saw.
  [[gnu::always_inline]] int64_t device_start_ns() const { return never_issued() ? complete_ns : issue_ns; }
};

}  // namespace iotape::format

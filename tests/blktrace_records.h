// Raw blktrace records (struct blk_io_trace, include/uapi/linux/
// blktrace_api.h) built by hand, for importer tests and fuzz seeds.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "format/blktrace_layout.h"

namespace iotape::test::blk {

namespace category = format::blktrace::category;

// Actions, and category bits where they stand in the action word.
inline constexpr uint32_t Q = format::blktrace::kQueue, M = format::blktrace::kBackmerge,
                          F = format::blktrace::kFrontmerge, G = format::blktrace::kGetrq,
                          R = format::blktrace::kRequeue, D = format::blktrace::kIssue, C = format::blktrace::kComplete,
                          P = format::blktrace::kPlug, I = format::blktrace::kInsert, X = format::blktrace::kSplit,
                          A = format::blktrace::kRemap;
inline constexpr uint32_t kCgroup = format::blktrace::kCgroupFlag;
inline constexpr uint32_t kWrite = format::blktrace::action(0, category::kWrite),
                          kFlush = format::blktrace::action(0, category::kFlush),
                          kSync = format::blktrace::action(0, category::kSync),
                          kPc = format::blktrace::action(0, category::kPassthrough),
                          kNotify = format::blktrace::action(0, category::kNotify),
                          kAhead = format::blktrace::action(0, category::kAhead),
                          kMeta = format::blktrace::action(0, category::kMeta),
                          kDiscard = format::blktrace::action(0, category::kDiscard),
                          kFua = format::blktrace::action(0, category::kFua);
inline constexpr uint32_t kProcessName =
    format::blktrace::action(format::blktrace::kNotifyProcessName, category::kNotify);

inline constexpr uint32_t dev(uint32_t major, uint32_t minor) { return format::blktrace::device(major, minor); }

struct Event {
  uint64_t time = 0;
  uint64_t sector = 0;
  uint32_t bytes = 0;
  uint32_t action = 0;
  uint32_t pid = 0;
  uint32_t device = 0;
  uint32_t cpu = 0;
  uint16_t error = 0;
  std::string payload{};
};

namespace detail {
template <typename T>
void put_big_endian(std::string& out, T v) {
  if constexpr (sizeof v == 4) v = __builtin_bswap32(v);
  if constexpr (sizeof v == 8) v = __builtin_bswap64(v);
  char b[sizeof v];
  std::memcpy(b, &v, sizeof v);
  out.append(b, sizeof v);
}
}  // namespace detail

// Appends `e` as a record, in this machine's byte order or the other one.
// Payloads are copied as given (remap and split payloads are big-endian anyway).
inline void append(std::string& out, const Event& e, bool swapped = false) {
  format::blktrace::Record r{format::blktrace::kMagic | format::blktrace::kVersion,
                             0,
                             e.time,
                             e.sector,
                             e.bytes,
                             e.action,
                             e.pid,
                             e.device,
                             e.cpu,
                             e.error,
                             static_cast<uint16_t>(e.payload.size())};
  if (swapped) r = format::blktrace::byte_swapped(r);
  out.append(reinterpret_cast<const char*>(&r), sizeof r);
  out += e.payload;
}

// Big-endian payload values; like the rest of iotape, this assumes a
// little-endian machine.
inline std::string be64(uint64_t v) {
  std::string s;
  detail::put_big_endian<uint64_t>(s, v);
  return s;
}

// Payload of an A event: the bio came from (from_dev, from_sector) to to_dev.
inline std::string remap(uint32_t from_dev, uint32_t to_dev, uint64_t from_sector) {
  std::string s;
  detail::put_big_endian<uint32_t>(s, from_dev);
  detail::put_big_endian<uint32_t>(s, to_dev);
  detail::put_big_endian<uint64_t>(s, from_sector);
  return s;
}

// Payload of a process-name notify record: the kernel's 16-byte comm.
inline std::string comm(const std::string& name) {
  std::string s = name.substr(0, 15);
  s.resize(16, '\0');
  return s;
}

}  // namespace iotape::test::blk

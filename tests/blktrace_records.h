// Raw blktrace records (struct blk_io_trace, include/uapi/linux/
// blktrace_api.h) built by hand, for importer tests and fuzz seeds.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

namespace iotape::test::blk {

// Actions (low 16 bits) and category bits (high 16 bits).
inline constexpr uint32_t Q = 1, M = 2, F = 3, G = 4, R = 6, D = 7, C = 8, P = 9, I = 12, X = 13, A = 15;
inline constexpr uint32_t kCgroup = 1u << 8;
inline constexpr uint32_t kWrite = 1u << 17, kFlush = 1u << 18, kSync = 1u << 19, kPc = 1u << 25,
                          kNotify = 1u << 26, kAhead = 1u << 27, kMeta = 1u << 28, kDiscard = 1u << 29,
                          kFua = 1u << 31;
inline constexpr uint32_t kProcessName = 0 | kNotify;

inline constexpr uint32_t dev(uint32_t major, uint32_t minor) { return major << 20 | minor; }

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
void put(std::string& out, T v, bool swapped) {
  if (swapped) {
    if constexpr (sizeof v == 2) v = __builtin_bswap16(v);
    if constexpr (sizeof v == 4) v = __builtin_bswap32(v);
    if constexpr (sizeof v == 8) v = __builtin_bswap64(v);
  }
  char b[sizeof v];
  std::memcpy(b, &v, sizeof v);
  out.append(b, sizeof v);
}
}  // namespace detail

// Appends `e` as a record, in this machine's byte order or the other one.
// Payloads are copied as given (remap and split payloads are big-endian anyway).
inline void append(std::string& out, const Event& e, bool swapped = false) {
  detail::put<uint32_t>(out, 0x65617407, swapped);
  detail::put<uint32_t>(out, 0, swapped);
  detail::put<uint64_t>(out, e.time, swapped);
  detail::put<uint64_t>(out, e.sector, swapped);
  detail::put<uint32_t>(out, e.bytes, swapped);
  detail::put<uint32_t>(out, e.action, swapped);
  detail::put<uint32_t>(out, e.pid, swapped);
  detail::put<uint32_t>(out, e.device, swapped);
  detail::put<uint32_t>(out, e.cpu, swapped);
  detail::put<uint16_t>(out, e.error, swapped);
  detail::put<uint16_t>(out, static_cast<uint16_t>(e.payload.size()), swapped);
  out += e.payload;
}

// Big-endian payload values; like the rest of iotape, this assumes a
// little-endian machine.
inline std::string be64(uint64_t v) {
  std::string s;
  detail::put<uint64_t>(s, v, true);
  return s;
}

// Payload of an A event: the bio came from (from_dev, from_sector) to to_dev.
inline std::string remap(uint32_t from_dev, uint32_t to_dev, uint64_t from_sector) {
  std::string s;
  detail::put<uint32_t>(s, from_dev, true);
  detail::put<uint32_t>(s, to_dev, true);
  detail::put<uint64_t>(s, from_sector, true);
  return s;
}

// Payload of a process-name notify record: the kernel's 16-byte comm.
inline std::string comm(const std::string& name) {
  std::string s = name.substr(0, 15);
  s.resize(16, '\0');
  return s;
}

}  // namespace iotape::test::blk

// blktrace's binary record (struct blk_io_trace, include/uapi/linux/
// blktrace_api.h): its layout, magic, action codes, category bits and device
// numbers. The one description the raw blktrace importer, the blktrace
// exporter and the tests' record builder share.
#pragma once

#include <cstdint>

namespace iotape::format::blktrace {

// A record's fixed part, in the byte order of the machine that wrote it;
// pdu_len payload bytes follow it.
struct Record {
  uint32_t magic;     // kMagic | kVersion
  uint32_t sequence;  // per CPU
  uint64_t time;      // ns
  uint64_t sector;    // 512 B units
  uint32_t bytes;
  uint32_t action;    // action(what, categories), maybe with kCgroupFlag
  uint32_t pid;
  uint32_t device;    // device(major, minor)
  uint32_t cpu;
  uint16_t error;
  uint16_t pdu_len;
};
static_assert(sizeof(Record) == 48);

inline constexpr uint32_t kMagic = 0x65617400;  // the high three bytes of Record::magic
inline constexpr uint32_t kVersion = 0x07;      // its low byte

// Whether a magic word, read in some byte order, is blktrace's.
constexpr bool is_magic(uint32_t word) { return (word & 0xffffff00) == kMagic; }

// The record as a machine of the other byte order reads and writes it.
constexpr Record byte_swapped(Record r) {
  return {__builtin_bswap32(r.magic), __builtin_bswap32(r.sequence), __builtin_bswap64(r.time),
          __builtin_bswap64(r.sector), __builtin_bswap32(r.bytes),    __builtin_bswap32(r.action),
          __builtin_bswap32(r.pid),    __builtin_bswap32(r.device),   __builtin_bswap32(r.cpu),
          __builtin_bswap16(r.error),  __builtin_bswap16(r.pdu_len)};
}

// Actions (the low 16 bits of Record::action).
enum Action : uint32_t {
  kQueue = 1,
  kBackmerge = 2,
  kFrontmerge = 3,
  kGetrq = 4,
  kSleeprq = 5,
  kRequeue = 6,
  kIssue = 7,
  kComplete = 8,
  kPlug = 9,
  kUnplug = 10,
  kUnplugTimer = 11,
  kInsert = 12,
  kSplit = 13,
  kBounce = 14,
  kRemap = 15,
};
inline constexpr uint32_t kNotifyProcessName = 0;  // with category::kNotify
inline constexpr uint32_t kCgroupFlag = 1u << 8;   // a u64 cgroup id leads the payload

// Category bits (the high 16 bits of Record::action, shifted down).
namespace category {
enum : uint32_t {
  kRead = 1u << 0,
  kWrite = 1u << 1,
  kFlush = 1u << 2,
  kSync = 1u << 3,
  kQueue = 1u << 4,
  kIssue = 1u << 6,
  kComplete = 1u << 7,
  kFs = 1u << 8,
  kPassthrough = 1u << 9,
  kNotify = 1u << 10,
  kAhead = 1u << 11,
  kMeta = 1u << 12,
  kDiscard = 1u << 13,
  kFua = 1u << 15,
};
}  // namespace category

constexpr uint32_t action(uint32_t what, uint32_t categories) { return what | categories << 16; }

// Record::device is the kernel's dev_t: 12 bits of major above 20 of minor.
constexpr uint32_t device(uint32_t major, uint32_t minor) { return major << 20 | (minor & 0xfffff); }
constexpr uint32_t major_of(uint32_t device) { return device >> 20; }
constexpr uint32_t minor_of(uint32_t device) { return device & 0xfffff; }

}  // namespace iotape::format::blktrace

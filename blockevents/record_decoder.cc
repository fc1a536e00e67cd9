#include "blockevents/record_decoder.h"

#include <bit>
#include <cstring>
#include <string_view>

#include "format/error.h"

namespace iotape::blockevents {
namespace {

uint32_t bswap(uint32_t v) { return __builtin_bswap32(v); }
uint64_t bswap(uint64_t v) { return __builtin_bswap64(v); }

// Remap and split payloads are big-endian whatever the record's byte order.
template <typename T>
T big_endian(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return std::endian::native == std::endian::big ? v : bswap(v);
}

// A process name from a notify payload: up to the NUL, printable ASCII only.
void process_name(std::string_view payload, std::string& name) {
  name.assign(payload.substr(0, payload.find('\0')));
  for (char& c : name)
    if (c < 0x20 || c > 0x7e) c = '?';
}

}  // namespace

format::blktrace::Record RecordDecoder::header(const char* p) const {
  format::blktrace::Record h;
  std::memcpy(&h, p, sizeof h);
  return swap_ ? format::blktrace::byte_swapped(h) : h;
}

size_t RecordDecoder::record_size(const char* p, uint64_t at) {
  if (at == 0) {
    uint32_t magic;
    std::memcpy(&magic, p, sizeof magic);
    swap_ = !format::blktrace::is_magic(magic) && format::blktrace::is_magic(bswap(magic));
  }
  const format::blktrace::Record h = header(p);
  if (!format::blktrace::is_magic(h.magic)) throw format::error_at_byte(name_, at, "bad magic: not a blktrace record");
  if ((h.magic & 0xff) != format::blktrace::kVersion)
    throw format::error_at_byte(name_, at, "unsupported blktrace version " + std::to_string(h.magic & 0xff));
  if (h.time > static_cast<uint64_t>(INT64_MAX))
    throw format::error_at_byte(name_, at, "timestamp " + std::to_string(h.time) + " is out of range");
  return sizeof h + h.pdu_len;
}

const TraceEvent& RecordDecoder::decode(const char* p, uint64_t at) {
  const format::blktrace::Record h = header(p);
  ev_.time = h.time;
  ev_.sector = h.sector;
  ev_.bytes = h.bytes;
  ev_.action = h.action;
  ev_.pid = h.pid;
  ev_.dev = h.device;
  ev_.cpu = h.cpu;
  ev_.error = h.error;
  std::string_view payload(p + sizeof h, h.pdu_len);
  ev_.cgroup = 0;
  if (ev_.action & format::blktrace::kCgroupFlag) {
    if (payload.size() < sizeof(uint64_t))
      throw format::error_at_byte(name_, at, "cgroup flag set but the payload has no cgroup id");
    uint64_t cgroup;
    std::memcpy(&cgroup, payload.data(), sizeof cgroup);
    ev_.cgroup = swap_ ? bswap(cgroup) : cgroup;
    payload.remove_prefix(sizeof(uint64_t));
  }
  decode_payload(payload, at);
  return ev_;
}

// The payload values the assembler uses; a payload too short for them is an error.
void RecordDecoder::decode_payload(std::string_view payload, uint64_t at) {
  using namespace format::blktrace;
  ev_.comm = {};
  const uint32_t c = ev_.categories();
  if (c & category::kNotify) {
    if (ev_.what() == kNotifyProcessName) {
      process_name(payload, comm_);
      ev_.comm = comm_;
    }
    return;
  }
  if (c & category::kPassthrough) return;
  if (ev_.what() == kSplit) {
    if (payload.size() < sizeof(uint64_t))
      throw format::error_at_byte(name_, at, "split event without the new sector in its payload");
    ev_.split_sector = big_endian<uint64_t>(payload.data());
  } else if (ev_.what() == kRemap) {
    if (payload.size() < 16) throw format::error_at_byte(name_, at, "remap event with a short payload");
    ev_.remap_from_dev = big_endian<uint32_t>(payload.data());
    ev_.remap_to_dev = big_endian<uint32_t>(payload.data() + 4);
    ev_.remap_from_sector = big_endian<uint64_t>(payload.data() + 8);
  }
}

}  // namespace iotape::blockevents

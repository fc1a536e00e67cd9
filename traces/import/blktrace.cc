#include "traces/import/blktrace.h"

#include <bit>
#include <cstring>
#include <queue>
#include <string_view>

#include "traces/blktrace_layout.h"
#include "traces/error.h"
#include "traces/import/block_io_assembler.h"

namespace iotape {
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

// The records of one input, in file order.
class EventStream {
 public:
  explicit EventStream(const Input& in) : in_(in) {}

  // Reads the next event; false at the end of the input.
  bool next() {
    blktrace::Record h;
    const size_t got = read_bytes(*in_.stream, reinterpret_cast<char*>(&h), sizeof h);
    if (got == 0) return false;
    if (got < sizeof h)
      throw error_at_byte(in_.name, pos_,
                          "truncated record: " + std::to_string(got) + " of " + std::to_string(sizeof h) + " bytes");
    if (pos_ == 0) swap_ = !blktrace::is_magic(h.magic) && blktrace::is_magic(bswap(h.magic));
    if (swap_) h = blktrace::byte_swapped(h);
    if (!blktrace::is_magic(h.magic)) throw error_at_byte(in_.name, pos_, "bad magic: not a blktrace record");
    if ((h.magic & 0xff) != blktrace::kVersion)
      throw error_at_byte(in_.name, pos_, "unsupported blktrace version " + std::to_string(h.magic & 0xff));
    ev_.time = h.time;
    ev_.sector = h.sector;
    ev_.bytes = h.bytes;
    ev_.action = h.action;
    ev_.pid = h.pid;
    ev_.dev = h.device;
    ev_.cpu = h.cpu;
    ev_.error = h.error;
    const uint16_t pdu_len = h.pdu_len;
    if (ev_.time > static_cast<uint64_t>(INT64_MAX))
      throw error_at_byte(in_.name, pos_, "timestamp " + std::to_string(ev_.time) + " is out of range");
    pdu_.resize(pdu_len);
    if (read_bytes(*in_.stream, pdu_.data(), pdu_len) < pdu_len)
      throw error_at_byte(in_.name, pos_,
                          "truncated record: payload of " + std::to_string(pdu_len) + " bytes cut short");
    std::string_view payload = pdu_;
    ev_.cgroup = 0;
    if (ev_.action & blktrace::kCgroupFlag) {
      if (payload.size() < sizeof(uint64_t))
        throw error_at_byte(in_.name, pos_, "cgroup flag set but the payload has no cgroup id");
      ev_.cgroup = get<uint64_t>(payload.data());
      payload.remove_prefix(sizeof(uint64_t));
    }
    decode_payload(payload);
    at_ = pos_;
    pos_ += sizeof h + pdu_len;
    return true;
  }

  const blk::TraceEvent& event() const { return ev_; }
  uint64_t at() const { return at_; }  // byte offset of the event's record
  const std::string& name() const { return in_.name; }

 private:
  template <typename T>
  T get(const char* p) const {
    T v;
    std::memcpy(&v, p, sizeof v);
    return swap_ ? bswap(v) : v;
  }

  // The payload values the assembler uses; a payload too short for them is an error.
  void decode_payload(std::string_view payload) {
    using namespace blktrace;
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
        throw error_at_byte(in_.name, pos_, "split event without the new sector in its payload");
      ev_.split_sector = big_endian<uint64_t>(payload.data());
    } else if (ev_.what() == kRemap) {
      if (payload.size() < 16) throw error_at_byte(in_.name, pos_, "remap event with a short payload");
      ev_.remap_from_dev = big_endian<uint32_t>(payload.data());
      ev_.remap_to_dev = big_endian<uint32_t>(payload.data() + 4);
      ev_.remap_from_sector = big_endian<uint64_t>(payload.data() + 8);
    }
  }

  Input in_;
  bool swap_ = false;
  uint64_t pos_ = 0;
  uint64_t at_ = 0;
  blk::TraceEvent ev_;
  std::string pdu_;
  std::string comm_;
};

}  // namespace

ImportReport import_blktrace(std::span<const Input> inputs, TraceWriter& out) {
  if (inputs.empty()) throw UsageError("no blktrace inputs");
  std::vector<EventStream> streams(inputs.begin(), inputs.end());
  // Merge the inputs by event time; within one input, file order stands.
  auto later = [&streams](size_t a, size_t b) {
    const uint64_t ta = streams[a].event().time, tb = streams[b].event().time;
    return ta != tb ? ta > tb : a > b;
  };
  std::priority_queue<size_t, std::vector<size_t>, decltype(later)> heads(later);
  for (size_t i = 0; i < streams.size(); ++i)
    if (streams[i].next()) heads.push(i);
  if (heads.empty())
    throw error_at_byte(inputs[0].name, 0,
                        inputs.size() == 1 ? "empty file: no blktrace events"
                                           : "no blktrace events in any input");

  ImportReport report;
  blk::BlockIoAssembler assembler(out, report);
  while (!heads.empty()) {
    const size_t i = heads.top();
    heads.pop();
    ++report.records;
    assembler.on_event(streams[i].event(), {&streams[i].name(), streams[i].at(), false});
    if (streams[i].next()) heads.push(i);
  }
  assembler.finish();
  return report;
}

}  // namespace iotape

#include "format/chunk_wire.h"

#include <bit>
#include <climits>
#include <cstdint>
#include <cstring>

#include "format/chunk_codec.h"

namespace iotape::format {
namespace {

using Bytes = const uint8_t*;
constexpr uint64_t kHighBits = 0x8080808080808080ULL;

// One varint at p, at most 10 bytes as protobuf allows (bits past 64 dropped,
// as protobuf drops them); false when it runs past `end` or past 10 bytes.
bool read_varint(Bytes& p, Bytes end, uint64_t* v) {
  uint64_t x = 0;
  for (int shift = 0; shift < 70 && p < end; shift += 7) {
    const uint8_t b = *p++;
    x |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *v = x;
      return true;
    }
  }
  return false;
}

// The 8 bytes at p as a little-endian number.
inline uint64_t load8(Bytes p) {
  uint64_t w;
  std::memcpy(&w, p, 8);
  if constexpr (std::endian::native == std::endian::big) w = __builtin_bswap64(w);
  return w;
}

// Bit i set where byte i of the 64 at p ends a varint (its high bit clear).
inline uint64_t ends64(Bytes p) {
  uint64_t m = 0;
  for (int k = 0; k < 8; ++k) {
    const uint64_t ends = (~load8(p + 8 * k) & kHighBits) >> 7;  // bit 0 of each byte
    m |= ((ends * 0x0102040810204080ULL) >> 56) << (8 * k);      // gathered, byte j to bit j
  }
  return m;
}

// The varint of `len` bytes (1 to 8) at p: its 7-bit groups masked and packed
// together, without a branch.
inline uint64_t take(Bytes p, ptrdiff_t len) {
  uint64_t x = load8(p) & (~uint64_t{0} >> (64 - 8 * len)) & 0x7f7f7f7f7f7f7f7fULL;
  x = (x & 0x007f007f007f007fULL) | ((x & 0x7f007f007f007f00ULL) >> 1);
  x = (x & 0x00003fff00003fffULL) | ((x & 0x3fff00003fff0000ULL) >> 2);
  return (x & 0x000000000fffffffULL) | ((x & 0x0fffffff00000000ULL) >> 4);
}

// Appends the packed varints of [p, end) to *f, each through `convert`.
template <class T, class Convert>
bool append_packed(Bytes p, Bytes end, google::protobuf::RepeatedField<T>* f, Convert convert) {
  if (p == end) return true;
  if (end[-1] & 0x80) return false;  // the last varint runs past the field
  // Room for one varint per byte, trimmed to those written at the end: no
  // pass to count them first.
  const auto room = static_cast<size_t>(end - p);
  if (room > static_cast<size_t>(INT_MAX - f->size())) return false;
  const int before = f->size();
  f->Reserve(before + static_cast<int>(room));
  T* const first = f->AddNAlreadyReserved(static_cast<int>(room));
  T* out = first;
  // 64 bytes at a time while a varint's 8-byte load stays within the field;
  // `pos` is where the next varint starts, from `base` (negative when it
  // began in the block before).
  Bytes base = p;
  ptrdiff_t pos = 0;
  for (; end - base >= 64 + 8; base += 64, pos -= 64) {
    uint64_t m = ends64(base);
    if (m == ~uint64_t{0} && pos == 0) {  // 64 one-byte varints, as in columns of small numbers
      for (int i = 0; i < 64; ++i) out[i] = convert(uint64_t{base[i]});
      out += 64;
      pos = 64;
      continue;
    }
    for (; m; m &= m - 1) {
      const ptrdiff_t e = std::countr_zero(m);
      const ptrdiff_t len = e - pos + 1;
      uint64_t v;
      if (len <= 8) {
        v = take(base + pos, len);
      } else {
        Bytes s = base + pos;
        if (!read_varint(s, end, &v)) return false;  // longer than 10 bytes
      }
      *out++ = convert(v);
      pos = e + 1;
    }
  }
  for (Bytes s = base + pos; s < end;) {
    uint64_t v;
    if (!read_varint(s, end, &v)) return false;
    *out++ = convert(v);
  }
  f->Truncate(before + static_cast<int>(out - first));
  return true;
}

// The wire's varints as the fields' types hold them (function objects, so
// that append_packed inlines them).
constexpr auto as_uint64 = [](uint64_t v) { return v; };
constexpr auto as_uint32 = [](uint64_t v) { return static_cast<uint32_t>(v); };
constexpr auto as_sint64 = [](uint64_t v) { return codec::unzigzag(v); };
constexpr auto as_sint32 = [](uint64_t v) {
  const auto u = static_cast<uint32_t>(v);
  return static_cast<int32_t>(u >> 1) ^ -static_cast<int32_t>(u & 1);
};

bool set_scalar(uint64_t field, uint64_t v, v1::Chunk* out) {
  switch (field) {
    case 1:
      out->set_first_index(v);
      return true;
    case 2:
      out->set_count(as_uint32(v));
      return true;
    case 3:
      out->set_base_issue_ns(static_cast<int64_t>(v));
      return true;
    case 4:
      out->set_time_quantum_ns(v);
      return true;
    case 5:
      out->set_offset_shift(as_uint32(v));
      return true;
    case 31:
      out->set_devices_added_base(as_uint32(v));
      return true;
    case 40:
      out->set_dropped_events(v);
      return true;
    case 41:
      out->set_late_ios(v);
      return true;
    default:
      return false;
  }
}

bool set_delimited(uint64_t field, Bytes b, Bytes e, v1::Chunk* out) {
  switch (field) {
    case 10:
      return append_packed(b, e, out->mutable_issue_delta(), as_sint64);
    case 11:
      return append_packed(b, e, out->mutable_queue_to_issue(), as_uint64);
    case 12:
      return append_packed(b, e, out->mutable_issue_to_complete(), as_uint64);
    case 13:
      return append_packed(b, e, out->mutable_device(), as_uint32);
    case 14:
      return append_packed(b, e, out->mutable_op(), as_uint32);
    case 15:
      return append_packed(b, e, out->mutable_flags(), as_uint32);
    case 16:
      return append_packed(b, e, out->mutable_offset_delta(), as_sint64);
    case 17:
      return append_packed(b, e, out->mutable_length(), as_uint64);
    case 18:
      return append_packed(b, e, out->mutable_status(), as_sint32);
    case 19:
      return append_packed(b, e, out->mutable_pid_delta(), as_sint64);
    case 20:
      return append_packed(b, e, out->mutable_comm(), as_uint32);
    case 21:
      return append_packed(b, e, out->mutable_cpu(), as_uint32);
    case 22:
      return append_packed(b, e, out->mutable_cgroup_delta(), as_sint64);
    case 23:
      return append_packed(b, e, out->mutable_source_delta(), as_uint64);
    case 30:
      out->add_comm_table(b, static_cast<size_t>(e - b));
      return true;
    case 32:
      return out->add_devices_added()->ParseFromArray(b, static_cast<int>(e - b));
    default:
      return false;
  }
}

}  // namespace

bool parse_chunk_fast(std::string_view wire, v1::Chunk* out) {
  out->Clear();
  auto p = reinterpret_cast<Bytes>(wire.data());
  const Bytes end = p + wire.size();
  while (p < end) {
    uint64_t tag, v;
    // Tags of at most 2 bytes (the Chunk's fields need no more; protobuf
    // limits longer ones in ways not repeated here).
    const Bytes tag_at = p;
    if (!read_varint(p, end, &tag) || p - tag_at > 2) return false;
    const Bytes value_at = p;
    if (!read_varint(p, end, &v)) return false;
    switch (tag & 7) {
      case 0:  // a varint
        if (!set_scalar(tag >> 3, v, out)) return false;
        break;
      case 2:  // length-delimited: v bytes follow, a length of at most 4 bytes (256 MiB)
        if (p - value_at > 4 || v > static_cast<uint64_t>(end - p) || !set_delimited(tag >> 3, p, p + v, out))
          return false;
        p += v;
        break;
      default:
        return false;
    }
  }
  return true;
}

}  // namespace iotape::format

#include "convert/import/vscsi.h"

#include <bit>
#include <cstring>

#include "format/error.h"

namespace iotape::convert {
namespace {

constexpr size_t kV1Size = 32;
constexpr size_t kV2Size = 40;

static_assert(std::endian::native == std::endian::little, "vscsi records are read in place");

template <typename T>
T le(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

struct Record {
  uint16_t cmd, ver;
  uint32_t len;
  uint64_t lbn, ts, rt;
};

Record decode(int version, const char* p) {
  if (version == 1)
    return {.cmd = le<uint16_t>(p + 12), .ver = le<uint16_t>(p + 14), .len = le<uint32_t>(p + 4),
            .lbn = le<uint64_t>(p + 16), .ts = le<uint64_t>(p + 24), .rt = 0};
  return {.cmd = le<uint16_t>(p), .ver = le<uint16_t>(p + 2), .len = le<uint32_t>(p + 8),
          .lbn = le<uint64_t>(p + 16), .ts = le<uint64_t>(p + 24), .rt = le<uint64_t>(p + 32)};
}

int64_t us_to_ns(uint64_t us, const std::string& file, uint64_t at, const char* what) {
  int64_t ns;
  if (us > static_cast<uint64_t>(INT64_MAX) ||
      __builtin_mul_overflow(static_cast<int64_t>(us), int64_t{1000}, &ns))
    throw format::error_at_byte(file, at, std::string(what) + " " + std::to_string(us) + " us is out of range");
  return ns;
}

// The input's file name without directory and extension, as printable ASCII:
// names in a trace must be UTF-8, and file names need not be.
std::string device_name(const std::string& path) {
  std::string name = file_stem(path);
  for (char& c : name)
    if (c < 0x20 || c > 0x7e) c = '?';
  return name;
}

format::InputError truncated(const std::string& file, uint64_t at, size_t got, size_t size) {
  return format::error_at_byte(file, at,
                               "truncated record: " + std::to_string(got) + " of " + std::to_string(size) + " bytes");
}

}  // namespace

format::Op vscsi_op(uint16_t cmd) {
  switch (cmd) {
    case 0x08: case 0x28: case 0xa8: case 0x88:  // READ(6/10/12/16)
      return format::Op::kRead;
    case 0x0a: case 0x2a: case 0xaa: case 0x8a:  // WRITE(6/10/12/16)
      return format::Op::kWrite;
    case 0x35: case 0x91:  // SYNCHRONIZE CACHE(10/16)
      return format::Op::kFlush;
    case 0x42:  // UNMAP
      return format::Op::kDiscard;
    default:
      return format::Op::kOther;
  }
}

namespace {

void read_records(const Input& in, format::TraceWriter& out, blockevents::ImportReport& report) {
  std::istream& s = *in.stream;
  char rec[kV2Size];
  // The first record decides the layout: each puts ver at its own place.
  const size_t first = read_bytes(s, rec, kV1Size);
  if (first == 0) throw format::error_at_byte(in.name, 0, "empty file: no vscsi records");
  if (first < kV1Size) throw truncated(in.name, 0, first, kV1Size);
  int version;
  if (le<uint16_t>(rec + 14) >> 8 == 1)
    version = 1;
  else if (le<uint16_t>(rec + 2) >> 8 == 2)
    version = 2;
  else
    throw format::error_at_byte(in.name, 0, "not a vscsi trace: the first record has neither version 1 nor 2");
  const size_t size = version == 1 ? kV1Size : kV2Size;

  v1::Device d;
  d.set_name(device_name(in.name));
  const uint32_t device = out.add_device(d);
  uint64_t at = 0;
  size_t got = first + read_bytes(s, rec + first, size - first);
  for (; got != 0; got = read_bytes(s, rec, size)) {
    if (got < size) throw truncated(in.name, at, got, size);
    const Record r = decode(version, rec);
    if (r.ver >> 8 != version)
      throw format::error_at_byte(
          in.name, at,
          "record has version " + std::to_string(r.ver >> 8) + " in a version " + std::to_string(version) + " trace");
    format::Io io;
    io.device = device;
    io.op = vscsi_op(r.cmd);
    io.issue_ns = us_to_ns(r.ts, in.name, at, "timestamp");
    if (version == 2) {
      const int64_t rt = us_to_ns(r.rt, in.name, at, "response time");
      if (__builtin_add_overflow(io.issue_ns, rt, &io.complete_ns))
        throw format::error_at_byte(in.name, at, "completion time is out of range");
    }
    if (r.lbn > UINT64_MAX / 512 || r.lbn * 512 + r.len < r.lbn * 512)
      throw format::error_at_byte(in.name, at, "block " + std::to_string(r.lbn) + " is out of range");
    io.offset = r.lbn * 512;
    io.length = r.len;
    ++report.records;
    out.append(io);
    ++report.ios;
    at += size;
  }
}

}  // namespace

blockevents::ImportReport import_vscsi(std::span<const Input> inputs, format::TraceWriter& out) {
  blockevents::ImportReport report;
  for (const Input& in : inputs) read_records(in, out, report);
  return report;
}

}  // namespace iotape::convert

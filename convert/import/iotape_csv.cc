#include "convert/import/iotape_csv.h"

#include <array>

#include "convert/export/text_formats.h"
#include "convert/import/exported_devices.h"
#include "convert/import/import_sink.h"

namespace iotape::convert {
namespace {

constexpr size_t kFields = 19;
constexpr size_t kOlderFields = 17;  // exports before flag_bits and device_name
constexpr std::string_view kHeader = "index,device,major,minor,op,flags,offset,length,queue_ns,issue_ns,";

// Splits a CSV line whose fields may be quoted ("a ""b"", c"). Unquoted
// fields are views of `line`; quoted ones are unescaped into `storage`.
size_t split_quoted(const FieldParser& p, std::string_view line, std::array<std::string_view, kFields>& out,
                    std::array<std::string, kFields>& storage) {
  size_t n = 0, at = 0;
  for (;;) {
    if (n == kFields) return n + 1;
    if (at < line.size() && line[at] == '"') {
      std::string& s = storage[n];
      s.clear();
      for (++at;; ++at) {
        if (at >= line.size()) p.fail("a quoted field has no closing quote");
        if (line[at] == '"') {
          if (at + 1 < line.size() && line[at + 1] == '"') {
            s += '"';
            ++at;
            continue;
          }
          ++at;
          break;
        }
        s += line[at];
      }
      out[n++] = s;
      if (at == line.size()) return n;
      if (line[at] != ',') p.fail("text after a quoted field");
      ++at;
      continue;
    }
    const size_t comma = line.find(',', at);
    const size_t end = comma == std::string_view::npos ? line.size() : comma;
    out[n++] = line.substr(at, end - at);
    if (comma == std::string_view::npos) return n;
    at = comma + 1;
  }
}

format::Op op_of(const FieldParser& p, std::string_view name) {
  if (const auto op = format::op_from_name(name)) return *op;
  p.fail("unknown op " + quote_field(name));
}

// RWBS as text_formats.h writes it: [F] OP-LETTER [F][A][S][M]. Only older
// exports need it: flag_bits has every bit.
uint32_t flags_of(const FieldParser& p, std::string_view rwbs, format::Op op) {
  static constexpr char kOpLetter[] = {'R', 'W', 'F', 'D', 'Z', 'N'};
  uint32_t f = 0;
  size_t i = 0;
  if (op != format::Op::kFlush && !rwbs.empty() && rwbs[0] == 'F') {
    f |= format::flag::kPreflush;
    ++i;
  }
  if (i >= rwbs.size() || rwbs[i] != kOpLetter[static_cast<int>(op)])
    p.fail("flags " + quote_field(rwbs) + " do not match op " + std::string(format::op_name(op)));
  ++i;
  static constexpr struct { char letter; uint32_t bit;
  } kLetters[] = {{'F', format::flag::kFua},
                  {'A', format::flag::kReadahead},
                  {'S', format::flag::kSync},
                  {'M', format::flag::kMeta}};
  size_t next = 0;
  for (; i < rwbs.size(); ++i) {
    while (next < std::size(kLetters) && kLetters[next].letter != rwbs[i]) ++next;
    if (next == std::size(kLetters)) p.fail("flags " + quote_field(rwbs) + " have an unknown or misplaced letter");
    f |= kLetters[next++].bit;
  }
  return f;
}

int64_t time_or_none(const FieldParser& p, std::string_view field, const char* what) {
  return field.empty() ? format::kNoTime : p.signed_number(field, what);
}

// flag_bits, which must agree with the RWBS letters of the same row.
uint32_t flag_bits_of(const FieldParser& p, std::string_view bits, std::string_view letters, format::Op op) {
  const uint64_t f = p.number(bits, "flag_bits");
  if (f > UINT32_MAX) p.fail("flag_bits out of range: " + quote_field(bits));
  format::Io io;
  io.op = op;
  io.flags = static_cast<uint32_t>(f);
  if (rwbs(io) != letters)
    p.fail("flags " + quote_field(letters) + " do not match flag_bits " + std::string(bits) + " of op " +
           std::string(format::op_name(op)));
  return io.flags;
}

}  // namespace

blockevents::ImportReport import_iotape_csv(std::span<const Input> inputs, const blockevents::ImportOptions& options,
                                            format::TraceWriter& out) {
  ExportedDevices devices(out);
  std::array<std::string, kFields> storage;
  auto parse_line = [&](const FieldParser& p, std::string_view text, ImportSink& sink) {
    if (text.starts_with(kHeader)) return;
    std::array<std::string_view, kFields> f;
    const size_t n = split_quoted(p, text, f, storage);
    if (n != kFields && n != kOlderFields)
      p.fail("expected 19 comma-separated fields (17 in older exports), found " +
             (n > kFields ? std::string("more") : std::to_string(n)) + ": not iotape CSV");
    p.number(f[0], "index");
    const uint64_t device = p.number(f[1], "device");
    const uint64_t major = p.number(f[2], "major"), minor = p.number(f[3], "minor");
    if (major > UINT32_MAX || minor > UINT32_MAX) p.fail("major or minor out of range");
    format::Io io;
    io.op = op_of(p, f[4]);
    io.flags = n == kFields ? flag_bits_of(p, f[17], f[5], io.op) : flags_of(p, f[5], io.op);
    io.offset = p.number(f[6], "offset");
    io.length = p.number(f[7], "length");
    io.queue_ns = time_or_none(p, f[8], "queue_ns");
    io.issue_ns = p.signed_number(f[9], "issue_ns");
    io.complete_ns = time_or_none(p, f[10], "complete_ns");
    const int64_t status = p.signed_number(f[11], "status");
    const uint64_t pid = p.number(f[12], "pid");
    const int64_t cpu = p.signed_number(f[15], "cpu");
    if (status < INT32_MIN || status > INT32_MAX || pid > UINT32_MAX || cpu < -1 || cpu > INT32_MAX)
      p.fail("status, pid or cpu out of range");
    io.status = static_cast<int32_t>(status);
    io.pid = static_cast<uint32_t>(pid);
    io.comm = f[13];  // bytes, as the trace holds them
    io.cgroup = p.number(f[14], "cgroup");
    io.cpu = static_cast<int32_t>(cpu);
    io.source_index = p.signed_number(f[16], "source_index");
    const std::optional<std::string_view> name = n == kFields ? std::optional(f[18]) : std::nullopt;
    const uint32_t index = devices.index(p, device, static_cast<uint32_t>(major), static_cast<uint32_t>(minor), name);
    if (!sink.keeps(std::to_string(device))) return sink.skip("other-volume");
    io.device = index;
    sink.add(io);
  };
  return import_lines(inputs, options, out, "iotape CSV", parse_line, [&devices] { devices.add_devices(); });
}

}  // namespace iotape::convert

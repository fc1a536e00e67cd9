#include "convert/import/msr.h"

#include <array>
#include <map>
#include <string_view>
#include <utility>

#include "convert/import/text_lines.h"
#include "format/error.h"

namespace iotape::convert {
namespace {

// FILETIME ticks (100 ns since 1601-01-01) of the Unix epoch.
constexpr int64_t kUnixEpochTicks = 116444736000000000;
// No MSR line comes near this; a longer one means the input is not MSR CSV.
constexpr size_t kMaxLine = 4096;
constexpr size_t kFields = 7;

// Parses one CSV line; every error names the input and line.
class LineParser : public FieldParser {
 public:
  using FieldParser::FieldParser;

  // FILETIME ticks to Unix nanoseconds.
  int64_t unix_ns(uint64_t ticks) const {
    int64_t ns;
    if (ticks > static_cast<uint64_t>(INT64_MAX) ||
        __builtin_mul_overflow(static_cast<int64_t>(ticks) - kUnixEpochTicks, int64_t{100}, &ns))
      fail("timestamp " + std::to_string(ticks) + " is out of range");
    return ns;
  }

  int64_t complete_ns(int64_t issue_ns, uint64_t response_ticks) const {
    int64_t response_ns, complete;
    if (response_ticks > static_cast<uint64_t>(INT64_MAX) ||
        __builtin_mul_overflow(static_cast<int64_t>(response_ticks), int64_t{100}, &response_ns) ||
        __builtin_add_overflow(issue_ns, response_ns, &complete))
      fail("response time " + std::to_string(response_ticks) + " is out of range");
    return complete;
  }
};

bool printable_ascii(std::string_view s) {
  for (char c : s)
    if (c < 0x21 || c > 0x7e) return false;
  return true;
}

// Devices by (hostname, disk), added to the writer when first seen.
class Devices {
 public:
  explicit Devices(format::TraceWriter& out) : out_(out) {}
  uint32_t index(std::string_view host, uint32_t disk) {
    auto [it, added] = map_.try_emplace({std::string(host), disk}, 0);
    if (added) {
      v1::Device d;
      d.set_name(it->first.first + "_" + std::to_string(disk));
      it->second = out_.add_device(d);
    }
    return it->second;
  }

 private:
  format::TraceWriter& out_;
  std::map<std::pair<std::string, uint32_t>, uint32_t> map_;
};

void read_csv(const Input& in, Devices& devices, format::TraceWriter& out, blockevents::ImportReport& report) {
  LineReader lines(in, "MSR CSV", kMaxLine - 1);
  const uint64_t records_before = report.records;
  for (std::string_view raw; lines.next(raw);) {
    const std::string_view text = trim_field(raw);
    if (text.empty()) continue;

    LineParser p(in.name, lines.line());
    std::array<std::string_view, kFields> f;
    const size_t n = split_fields(text, ',', f);
    if (n > kFields) p.fail("more than " + std::to_string(kFields) + " fields: not MSR CSV");
    if (n != kFields)
      p.fail("expected " + std::to_string(kFields) + " comma-separated fields, found " + std::to_string(n) +
             ": not MSR CSV");

    format::Io io;
    io.issue_ns = p.unix_ns(p.number(f[0], "timestamp"));
    if (f[1].empty() || !printable_ascii(f[1]))
      p.fail("hostname " + quote_field(f[1]) + " is empty or not printable");
    const uint64_t disk = p.number(f[2], "disk number");
    if (disk > UINT32_MAX) p.fail("disk number " + std::to_string(disk) + " is out of range");
    if (f[3] == "Read" || f[3] == "read")
      io.op = format::Op::kRead;
    else if (f[3] == "Write" || f[3] == "write")
      io.op = format::Op::kWrite;
    else
      p.fail("type " + quote_field(f[3]) + " is neither Read nor Write");
    io.offset = p.number(f[4], "offset");
    io.length = p.number(f[5], "size");
    if (io.offset + io.length < io.offset) p.fail("offset + size overflows");
    io.complete_ns = p.complete_ns(io.issue_ns, p.number(f[6], "response time"));
    io.device = devices.index(f[1], static_cast<uint32_t>(disk));
    ++report.records;
    out.append(io);
    ++report.ios;
  }
  if (report.records == records_before)
    throw format::error_at_line(in.name, lines.line() + 1,
                                lines.line() == 0 ? "empty file: no MSR records" : "no MSR records");
}

}  // namespace

blockevents::ImportReport import_msr(std::span<const Input> inputs, format::TraceWriter& out) {
  blockevents::ImportReport report;
  Devices devices(out);
  for (const Input& in : inputs) read_csv(in, devices, out, report);
  return report;
}

}  // namespace iotape::convert

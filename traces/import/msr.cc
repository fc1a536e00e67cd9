#include "traces/import/msr.h"

#include <array>
#include <charconv>
#include <map>
#include <string_view>
#include <utility>

#include "traces/error.h"

namespace iotape {
namespace {

// FILETIME ticks (100 ns since 1601-01-01) of the Unix epoch.
constexpr int64_t kUnixEpochTicks = 116444736000000000;
// No MSR line comes near this; a longer one means the input is not MSR CSV.
constexpr size_t kMaxLine = 4096;
constexpr size_t kFields = 7;

// A field for an error message, cut short: the line may be binary junk.
std::string quote(std::string_view field) {
  return "'" + std::string(field.substr(0, 40)) + (field.size() > 40 ? "...'" : "'");
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// Parses one CSV line; every error names the input and line.
class LineParser {
 public:
  LineParser(const std::string& file, uint64_t line) : file_(file), line_(line) {}

  [[noreturn]] void fail(const std::string& why) const { throw error_at_line(file_, line_, why); }

  uint64_t number(std::string_view field, const char* what) const {
    if (!field.empty() && field.front() == '-') fail(std::string(what) + " is negative: " + quote(field));
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
    if (ec == std::errc::result_out_of_range) fail(std::string(what) + " out of range: " + quote(field));
    if (ec != std::errc() || end != field.data() + field.size() || field.empty())
      fail(std::string(what) + " is not a number: " + quote(field));
    return v;
  }

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

 private:
  const std::string& file_;
  uint64_t line_;
};

bool printable_ascii(std::string_view s) {
  for (char c : s)
    if (c < 0x21 || c > 0x7e) return false;
  return true;
}

// Devices by (hostname, disk), added to the writer when first seen.
class Devices {
 public:
  explicit Devices(TraceWriter& out) : out_(out) {}
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
  TraceWriter& out_;
  std::map<std::pair<std::string, uint32_t>, uint32_t> map_;
};

void read_csv(const Input& in, Devices& devices, TraceWriter& out, ImportReport& report) {
  std::istream& s = *in.stream;
  std::array<char, kMaxLine> buf;
  uint64_t line = 0;
  const uint64_t records_before = report.records;
  for (;;) {
    s.getline(buf.data(), buf.size());
    const auto got = static_cast<size_t>(s.gcount());
    if (s.bad()) throw error_at_line(in.name, line + 1, "read error");
    if (s.eof() && got == 0) break;
    ++line;
    if (s.fail() && !s.eof())
      throw error_at_line(in.name, line,
                          "line longer than " + std::to_string(kMaxLine - 1) + " bytes: not MSR CSV");
    const size_t len = s.eof() ? got : got - 1;  // without the newline
    const std::string_view text = trim({buf.data(), len});
    if (text.empty()) continue;

    LineParser p(in.name, line);
    std::array<std::string_view, kFields> f;
    size_t n = 0;
    for (size_t start = 0;;) {
      const size_t comma = text.find(',', start);
      if (n == kFields) p.fail("more than " + std::to_string(kFields) + " fields: not MSR CSV");
      const size_t end = comma == std::string_view::npos ? text.size() : comma;
      f[n++] = trim(text.substr(start, end - start));
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    if (n != kFields)
      p.fail("expected " + std::to_string(kFields) + " comma-separated fields, found " + std::to_string(n) +
             ": not MSR CSV");

    Io io;
    io.issue_ns = p.unix_ns(p.number(f[0], "timestamp"));
    if (f[1].empty() || !printable_ascii(f[1]))
      p.fail("hostname " + quote(f[1]) + " is empty or not printable");
    const uint64_t disk = p.number(f[2], "disk number");
    if (disk > UINT32_MAX) p.fail("disk number " + std::to_string(disk) + " is out of range");
    if (f[3] == "Read" || f[3] == "read")
      io.op = Op::kRead;
    else if (f[3] == "Write" || f[3] == "write")
      io.op = Op::kWrite;
    else
      p.fail("type " + quote(f[3]) + " is neither Read nor Write");
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
    throw error_at_line(in.name, line + 1, line == 0 ? "empty file: no MSR records" : "no MSR records");
}

}  // namespace

ImportReport import_msr(std::span<const Input> inputs, TraceWriter& out) {
  ImportReport report;
  Devices devices(out);
  for (const Input& in : inputs) read_csv(in, devices, out, report);
  return report;
}

}  // namespace iotape

#include "traces/import/iotape_csv.h"

#include <array>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "traces/import/import_sink.h"

namespace iotape {
namespace {

constexpr size_t kFields = 17;
constexpr uint32_t kMaxDevices = 1 << 16;  // device indexes are kept, so each one below costs a device
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

Op op_of(const FieldParser& p, std::string_view name) {
  for (int i = 0; i < kOpCount; ++i)
    if (op_name(static_cast<Op>(i)) == name) return static_cast<Op>(i);
  p.fail("unknown op " + quote_field(name));
}

// RWBS as text_formats.h writes it: [F] OP-LETTER [F][A][S][M].
uint32_t flags_of(const FieldParser& p, std::string_view rwbs, Op op) {
  static constexpr char kOpLetter[] = {'R', 'W', 'F', 'D', 'Z', 'N'};
  uint32_t f = 0;
  size_t i = 0;
  if (op != Op::kFlush && !rwbs.empty() && rwbs[0] == 'F') {
    f |= flag::kPreflush;
    ++i;
  }
  if (i >= rwbs.size() || rwbs[i] != kOpLetter[static_cast<int>(op)])
    p.fail("flags " + quote_field(rwbs) + " do not match op " + std::string(op_name(op)));
  ++i;
  static constexpr struct { char letter; uint32_t bit; } kLetters[] = {
      {'F', flag::kFua}, {'A', flag::kReadahead}, {'S', flag::kSync}, {'M', flag::kMeta}};
  size_t next = 0;
  for (; i < rwbs.size(); ++i) {
    while (next < std::size(kLetters) && kLetters[next].letter != rwbs[i]) ++next;
    if (next == std::size(kLetters)) p.fail("flags " + quote_field(rwbs) + " have an unknown or misplaced letter");
    f |= kLetters[next++].bit;
  }
  return f;
}

int64_t time_or_none(const FieldParser& p, std::string_view field, const char* what) {
  return field.empty() ? kNoTime : p.signed_number(field, what);
}

// Devices by their index in the exported trace. They are added to the writer
// in index order once every row is read (the sink holds the IOs until then),
// each named after the major and minor its rows give.
class DeviceTable {
 public:
  DeviceTable(const ImportOptions& options, TraceWriter& out)
      : keep_(options.volumes.begin(), options.volumes.end()), out_(out), first_(out.device_count()) {}

  bool kept(std::string_view index) const { return keep_.empty() || keep_.contains(std::string(index)); }

  uint32_t index(const FieldParser& p, uint64_t device, uint64_t major, uint64_t minor) {
    if (device >= kMaxDevices) p.fail("device index " + std::to_string(device) + " is out of range");
    if (seen_.size() <= device) seen_.resize(device + 1);
    if (!seen_[device]) seen_[device] = {static_cast<uint32_t>(major), static_cast<uint32_t>(minor)};
    return first_ + static_cast<uint32_t>(device);
  }

  void add_devices() {
    for (size_t i = 0; i < seen_.size(); ++i) {
      v1::Device d;
      if (seen_[i] && (seen_[i]->first || seen_[i]->second)) {
        d.set_major(seen_[i]->first);
        d.set_minor(seen_[i]->second);
        d.set_name(std::to_string(d.major()) + "," + std::to_string(d.minor()));
      } else {
        d.set_name("device " + std::to_string(i));
      }
      out_.add_device(d);
    }
  }

 private:
  std::set<std::string> keep_;
  TraceWriter& out_;
  uint32_t first_;
  std::vector<std::optional<std::pair<uint32_t, uint32_t>>> seen_;  // major, minor by device index
};

}  // namespace

ImportReport import_iotape_csv(std::span<const Input> inputs, const ImportOptions& options, TraceWriter& out) {
  DeviceTable devices(options, out);
  std::array<std::string, kFields> storage;
  std::string comm;
  auto parse_line = [&](const FieldParser& p, std::string_view text, ImportSink& sink) {
    if (text.starts_with(kHeader)) return;
    std::array<std::string_view, kFields> f;
    const size_t n = split_quoted(p, text, f, storage);
    if (n != kFields)
      p.fail("expected 17 comma-separated fields, found " + (n > kFields ? std::string("more") : std::to_string(n)) +
             ": not iotape CSV");
    p.number(f[0], "index");
    const uint64_t device = p.number(f[1], "device");
    const uint64_t major = p.number(f[2], "major"), minor = p.number(f[3], "minor");
    if (major > UINT32_MAX || minor > UINT32_MAX) p.fail("major or minor out of range");
    Io io;
    io.op = op_of(p, f[4]);
    io.flags = flags_of(p, f[5], io.op);
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
    comm = printable(f[13]);  // names in a trace must be UTF-8
    io.comm = comm;
    io.cgroup = p.number(f[14], "cgroup");
    io.cpu = static_cast<int32_t>(cpu);
    io.source_index = p.signed_number(f[16], "source_index");
    const uint32_t index = devices.index(p, device, major, minor);
    if (!devices.kept(f[1])) return sink.skip("other-volume");
    io.device = index;
    sink.add(io);
  };
  return import_lines(inputs, options, out, "iotape CSV", parse_line, [&devices] { devices.add_devices(); });
}

}  // namespace iotape

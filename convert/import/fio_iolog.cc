#include "convert/import/fio_iolog.h"

#include <array>
#include <map>
#include <optional>

#include "convert/import/import_sink.h"

namespace iotape::convert {
namespace {

// The parse state of one log: its version, time and files.
class IologParser {
 public:
  explicit IologParser(ImportSink& sink) : sink_(sink) {}

  void parse_line(const FieldParser& p, std::string_view text) {
    if (version_ == 0) {
      if (text == "fio version 2 iolog")
        version_ = 2;
      else if (text == "fio version 3 iolog")
        version_ = 3;
      else
        p.fail("not a fio iolog: the first line is not 'fio version 2 iolog' or 'fio version 3 iolog'");
      return;
    }
    std::array<std::string_view, 5> f;
    const size_t n = split_fields(text, ' ', f);
    std::span<std::string_view> rest(f.data(), std::min(n, f.size()));
    if (version_ == 3) {
      if (n < 3 || n > 5) p.fail("expected TIME FILE ACTION [OFFSET LENGTH], found " + std::to_string(n) + " fields");
      const uint64_t us = p.number(rest[0], "time");
      if (us > static_cast<uint64_t>(INT64_MAX) / 1000) p.fail("time " + std::to_string(us) + " us is out of range");
      now_ns_ = static_cast<int64_t>(us) * 1000;
      rest = rest.subspan(1);
    } else if (n < 2 || n > 4) {
      p.fail("expected FILE ACTION [OFFSET LENGTH], found " + std::to_string(n) + " fields");
    }
    const std::string_view file = rest[0], action = rest[1];
    if (action == "add") {
      if (files_.contains(file)) return sink_.count_record();
      const std::optional<uint32_t> device = sink_.device(file);  // counts the line if filtered out
      files_.emplace(std::string(file), device);
      if (device) sink_.count_record();
      return;
    }
    if (action == "open" || action == "close") {
      known(p, file);
      return sink_.count_record();
    }
    if (rest.size() == 3) p.fail("action " + quote_field(action) + " with an offset but no length");
    const uint64_t offset = rest.size() == 4 ? p.number(rest[2], "offset") : 0;
    const uint64_t length = rest.size() == 4 ? p.number(rest[3], "length") : 0;
    if (action == "wait" && version_ == 2) {
      // Waits until OFFSET ms since the job start.
      if (offset > static_cast<uint64_t>(INT64_MAX) / 1'000'000) p.fail("wait of " + std::to_string(offset) + " ms is out of range");
      now_ns_ = std::max(now_ns_, static_cast<int64_t>(offset) * 1'000'000);
      return sink_.count_record();
    }
    format::Io io;
    if (action == "read")
      io.op = format::Op::kRead;
    else if (action == "write")
      io.op = format::Op::kWrite;
    else if (action == "trim")
      io.op = format::Op::kDiscard;
    else if (action == "sync" || action == "datasync")
      io.op = format::Op::kFlush;
    else
      p.fail("unknown action " + quote_field(action));
    if (offset + length < offset) p.fail("offset + length overflows");
    const std::optional<uint32_t> device = known(p, file);
    if (!device) return sink_.skip("other-volume");
    io.device = *device;
    io.offset = offset;
    io.length = length;
    io.issue_ns = now_ns_;
    sink_.add(io);
  }

  bool started() const { return version_ != 0; }

 private:
  std::optional<uint32_t> known(const FieldParser& p, std::string_view file) const {
    auto it = files_.find(file);
    if (it == files_.end()) p.fail("file " + quote_field(file) + " is used before it is added");
    return it->second;
  }

  ImportSink& sink_;
  int version_ = 0;
  int64_t now_ns_ = 0;
  std::map<std::string, std::optional<uint32_t>, std::less<>> files_;  // device, or none when filtered out
};

}  // namespace

blockevents::ImportReport import_fio_iolog(std::span<const Input> inputs, const blockevents::ImportOptions& options,
                                           format::TraceWriter& out) {
  ImportSink sink(options, out);
  for (const Input& in : inputs) {
    IologParser log(sink);
    LineReader lines(in, "a fio iolog");
    for (std::string_view text; lines.next(text);) {
      text = trim_field(text);
      if (!text.empty()) log.parse_line(FieldParser(in.name, lines.line()), text);
    }
    if (!log.started()) throw format::error_at_line(in.name, lines.line() + 1, "empty file: not a fio iolog");
  }
  return sink.finish();
}

}  // namespace iotape::convert

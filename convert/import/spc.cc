#include "convert/import/spc.h"

#include <array>

#include "convert/import/import_sink.h"

namespace iotape::convert {
namespace {

constexpr size_t kFields = 5;
constexpr size_t kMaxFields = 32;  // the format allows optional fields after the five

void parse_line(const FieldParser& p, std::string_view text, ImportSink& sink) {
  std::array<std::string_view, kMaxFields> f;
  const size_t n = split_fields(text, ',', f);
  if (n < kFields || n > kMaxFields)
    p.fail("expected 5 comma-separated fields (ASU,LBA,Size,Opcode,Timestamp), found " +
           (n > kMaxFields ? std::string("more than 32") : std::to_string(n)) + ": not SPC CSV");
  format::Io io;
  io.offset = p.scale(p.number(f[1], "LBA"), 512, "LBA");
  io.length = p.number(f[2], "size");
  if (io.offset + io.length < io.offset) p.fail("offset + size overflows");
  if (f[3] == "r" || f[3] == "R")
    io.op = format::Op::kRead;
  else if (f[3] == "w" || f[3] == "W")
    io.op = format::Op::kWrite;
  else
    p.fail("opcode " + quote_field(f[3]) + " is neither r nor w");
  io.issue_ns = p.decimal_ns(f[4], 1'000'000'000, "timestamp");
  if (f[0].empty()) p.fail("ASU is empty");
  sink.add(io, f[0]);
}

}  // namespace

blockevents::ImportReport import_spc(std::span<const Input> inputs, const blockevents::ImportOptions& options,
                                     format::TraceWriter& out) {
  return import_lines(inputs, options, out, "SPC CSV", parse_line);
}

}  // namespace iotape::convert

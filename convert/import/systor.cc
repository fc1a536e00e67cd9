#include "convert/import/systor.h"

#include <array>

#include "convert/import/import_sink.h"

namespace iotape::convert {
namespace {

void parse_line(const FieldParser& p, std::string_view text, ImportSink& sink) {
  std::array<std::string_view, 6> f;
  p.split_exactly(text, ',', f, "Timestamp,Response,IOType,LUN,Offset,Size", "SYSTOR CSV");
  if (f[0] == "Timestamp") return;  // the header
  format::Io io;
  io.issue_ns = p.decimal_ns(f[0], 1'000'000'000, "timestamp");
  if (!f[1].empty()) io.complete_ns = p.add(io.issue_ns, p.decimal_ns(f[1], 1'000'000'000, "response"), "completion time");
  if (f[2].empty()) {
    p.number(f[4], "offset"), p.number(f[5], "size");  // the rest of the record must still be sound
    return sink.skip("blank-iotype");
  }
  if (f[2] == "R" || f[2] == "r")
    io.op = format::Op::kRead;
  else if (f[2] == "W" || f[2] == "w")
    io.op = format::Op::kWrite;
  else
    p.fail("IOType " + quote_field(f[2]) + " is neither R nor W");
  io.offset = p.number(f[4], "offset");
  io.length = p.number(f[5], "size");
  if (io.offset + io.length < io.offset) p.fail("offset + size overflows");
  sink.add(io, f[3]);
}

}  // namespace

blockevents::ImportReport import_systor(std::span<const Input> inputs, const blockevents::ImportOptions& options,
                                        format::TraceWriter& out) {
  return import_lines(inputs, options, out, "SYSTOR CSV", parse_line);
}

}  // namespace iotape::convert

#include "convert/import/tencent.h"

#include <array>

#include "convert/import/import_sink.h"

namespace iotape::convert {
namespace {

void parse_line(const FieldParser& p, std::string_view text, ImportSink& sink) {
  std::array<std::string_view, 5> f;
  p.split_exactly(text, ',', f, "Timestamp,Offset,Size,IOType,VolumeID", "Tencent CBS CSV");
  if (f[0] == "Timestamp") return;  // a header, as some copies have
  format::Io io;
  io.issue_ns = p.decimal_ns(f[0], 1'000'000'000, "timestamp");
  io.offset = p.scale(p.number(f[1], "offset"), 512, "offset");
  io.length = p.scale(p.number(f[2], "size"), 512, "size");
  if (io.offset + io.length < io.offset) p.fail("offset + size overflows");
  if (f[3] == "0")
    io.op = format::Op::kRead;
  else if (f[3] == "1")
    io.op = format::Op::kWrite;
  else
    p.fail("IOType " + quote_field(f[3]) + " is neither 0 (read) nor 1 (write)");
  if (f[4].empty()) p.fail("VolumeID is empty");
  sink.add(io, f[4]);
}

}  // namespace

blockevents::ImportReport import_tencent(std::span<const Input> inputs, const blockevents::ImportOptions& options,
                                         format::TraceWriter& out) {
  return import_lines(inputs, options, out, "Tencent CBS CSV", parse_line);
}

}  // namespace iotape::convert

#include "convert/import/alibaba.h"

#include <array>

#include "convert/import/import_sink.h"

namespace iotape::convert {
namespace {

void parse_line(const FieldParser& p, std::string_view text, ImportSink& sink) {
  std::array<std::string_view, 5> f;
  p.split_exactly(text, ',', f, "device_id,opcode,offset,length,timestamp", "Alibaba CSV");
  if (f[0] == "device_id") return;  // a header, as some copies have
  format::Io io;
  if (f[1] == "R" || f[1] == "r")
    io.op = format::Op::kRead;
  else if (f[1] == "W" || f[1] == "w")
    io.op = format::Op::kWrite;
  else
    p.fail("opcode " + quote_field(f[1]) + " is neither R nor W");
  io.offset = p.number(f[2], "offset");
  io.length = p.number(f[3], "length");
  if (io.offset + io.length < io.offset) p.fail("offset + length overflows");
  const uint64_t us = p.number(f[4], "timestamp");
  if (us > static_cast<uint64_t>(INT64_MAX) / 1000) p.fail("timestamp " + std::to_string(us) + " is out of range");
  io.issue_ns = static_cast<int64_t>(us) * 1000;
  if (f[0].empty()) p.fail("device_id is empty");
  sink.add(io, f[0]);
}

}  // namespace

blockevents::ImportReport import_alibaba(std::span<const Input> inputs, const blockevents::ImportOptions& options,
                                         format::TraceWriter& out) {
  return import_lines(inputs, options, out, "Alibaba CSV", parse_line);
}

}  // namespace iotape::convert

#include "convert/import/disksim.h"

#include <array>

#include "convert/import/import_sink.h"

namespace iotape::convert {
namespace {

void parse_line(const FieldParser& p, std::string_view text, ImportSink& sink) {
  std::array<std::string_view, 5> f;
  p.split_exactly(text, ' ', f, "time_ms devno blkno size flags", "a DiskSim trace");
  format::Io io;
  io.issue_ns = p.decimal_ns(f[0], 1'000'000, "arrival time");
  io.offset = p.scale(p.number(f[2], "block number"), 512, "block number");
  io.length = p.scale(p.number(f[3], "size"), 512, "size");
  if (io.offset + io.length < io.offset) p.fail("offset + size overflows");
  io.op = p.number(f[4], "flags") & 1 ? format::Op::kRead : format::Op::kWrite;
  p.number(f[1], "device number");
  sink.add(io, f[1]);
}

}  // namespace

blockevents::ImportReport import_disksim(std::span<const Input> inputs, const blockevents::ImportOptions& options,
                                         format::TraceWriter& out) {
  return import_lines(inputs, options, out, "DiskSim trace", parse_line);
}

}  // namespace iotape::convert

// Text exports: blkparse's default output, CSV and JSON lines.
#include <fmt/format.h>

#include "convert/export/block_events.h"
#include "convert/export/formats.h"
#include "convert/export/text_formats.h"

namespace iotape::convert {
namespace {

const v1::Device* device_of(const format::TraceReader& in, const format::Io& io) {
  const auto& d = in.header().devices();
  return io.device < static_cast<uint32_t>(d.size()) ? &d[io.device] : nullptr;
}

template <typename Line>
ExportReport export_lines(format::TraceReader& in, std::FILE* out, Line line) {
  ExportReport r;
  std::string buf;
  for (auto batch = in.next_batch(); !batch.empty(); batch = in.next_batch()) {
    buf.clear();
    for (const format::Io& io : batch) {
      buf += line(io, r.ios++, device_of(in, io));
      buf += '\n';
    }
    std::fwrite(buf.data(), 1, buf.size(), out);
  }
  return r;
}

}  // namespace

ExportReport export_csv(format::TraceReader& in, std::FILE* out) {
  fmt::print(out, "{}\n", csv_header());
  return export_lines(in, out, format_csv);
}

ExportReport export_jsonl(format::TraceReader& in, std::FILE* out) { return export_lines(in, out, format_jsonl); }

ExportReport export_blkparse(format::TraceReader& in, std::FILE* out) {
  // blkparse's default line: "%3d,%-3d %2d %8d %5T.%9t %5p  %2a %3d ...", with
  // per-CPU sequence numbers and times relative to the first event.
  ExportReport r;
  int64_t t0 = format::kNoTime;
  std::vector<uint32_t> sequence;
  BlockEventStream events([&](const BlockEvent& e) {
    const format::Io& io = e.io;
    const v1::Device* d = device_of(in, io);
    const uint32_t cpu = io.cpu < 0 ? 0 : static_cast<uint32_t>(io.cpu);
    if (sequence.size() <= cpu) sequence.resize(cpu + 1);
    const int64_t t = std::max<int64_t>(0, e.time_ns - t0);
    const char a = e.action == BlockAction::kQueue ? 'Q' : e.action == BlockAction::kIssue ? 'D' : 'C';
    // Completions show the error, the others the process, as blkparse does.
    // A request of no whole sector shows no sector and size, its completion
    // only the sector.
    const uint64_t sectors = io.length / 512;
    std::string where = sectors ? fmt::format("{} + {} ", io.offset / 512, sectors)
                        : e.action == BlockAction::kComplete ? fmt::format("{} ", io.offset / 512)
                                                             : std::string();
    std::string tail = e.action == BlockAction::kComplete ? std::to_string(io.status < 0 ? -io.status : io.status)
                                                          : std::string(io.comm.empty() ? "" : io.comm);
    fmt::print(out, "{:>3},{:<3} {:>2} {:>8} {:>5}.{:09} {:>5}  {} {:>3} {}[{}]\n", d ? d->major() : 0,
               d ? d->minor() : io.device, cpu, ++sequence[cpu], t / 1'000'000'000, t % 1'000'000'000, io.pid, a,
               blkparse_rwbs(blktrace_categories(io), io.length), where, tail);
  });
  for (auto batch = in.next_batch(); !batch.empty(); batch = in.next_batch())
    for (const format::Io& io : batch) {
      if (t0 == format::kNoTime) t0 = io.has_queue() ? std::min(io.queue_ns, io.issue_ns) : io.issue_ns;
      events.add(io);
      ++r.ios;
    }
  events.finish();
  return r;
}

}  // namespace iotape::convert

// blktrace's binary format (include/uapi/linux/blktrace_api.h): 48-byte
// struct blk_io_trace records, native byte order, Q/D/C events per IO plus
// a process-name notify record for every pid, as blkparse and btt read it.
#include <cstring>
#include <unordered_set>
#include <vector>

#include "convert/export/block_events.h"
#include "convert/export/formats.h"
#include "format/blktrace_layout.h"

namespace iotape::convert {
namespace {

namespace category = format::blktrace::category;
constexpr uint32_t kRecordMagic = format::blktrace::kMagic | format::blktrace::kVersion;

}  // namespace

ExportReport export_blktrace(format::TraceReader& in, std::FILE* out) {
  ExportReport r;
  std::vector<uint32_t> sequence;  // per CPU, as the kernel numbers events
  int64_t t0 = format::kNoTime;
  std::unordered_set<uint32_t> named_pids;
  const auto& devices = in.header().devices();
  auto device_of = [&](const format::Io& io) -> uint32_t {
    if (io.device >= static_cast<uint32_t>(devices.size())) return io.device;
    return format::blktrace::device(devices[io.device].major(), devices[io.device].minor());
  };
  BlockEventStream events([&](const BlockEvent& e) {
    const format::Io& io = e.io;
    const uint64_t t = e.time_ns > t0 ? static_cast<uint64_t>(e.time_ns - t0) : 0;
    const uint32_t cpu = io.cpu < 0 ? 0 : static_cast<uint32_t>(io.cpu);
    if (sequence.size() <= cpu) sequence.resize(cpu + 1);
    if (io.pid && !io.comm.empty() && named_pids.insert(io.pid).second) {
      char comm[16] = {};
      std::memcpy(comm, io.comm.data(), std::min<size_t>(io.comm.size(), 15));
      const uint32_t notify = format::blktrace::action(format::blktrace::kNotifyProcessName, category::kNotify);
      const format::blktrace::Record note{kRecordMagic, 0, t, 0, 0, notify, io.pid, device_of(io), cpu, 0, sizeof comm};
      std::fwrite(&note, sizeof note, 1, out);
      std::fwrite(comm, sizeof comm, 1, out);
    }
    const uint32_t what =
        e.action == BlockAction::kQueue   ? format::blktrace::action(format::blktrace::kQueue, category::kQueue)
        : e.action == BlockAction::kIssue ? format::blktrace::action(format::blktrace::kIssue, category::kIssue)
                                          : format::blktrace::action(format::blktrace::kComplete, category::kComplete);
    const format::blktrace::Record rec{kRecordMagic,
                                       ++sequence[cpu],
                                       t,
                                       io.offset / 512,
                                       static_cast<uint32_t>(io.length),
                                       what | (blktrace_categories(io) << 16),
                                       io.pid,
                                       device_of(io),
                                       cpu,
                                       static_cast<uint16_t>(io.status < 0 ? -io.status : io.status),
                                       0};
    std::fwrite(&rec, sizeof rec, 1, out);
  });
  for (auto batch = in.next_batch(); !batch.empty(); batch = in.next_batch())
    for (const format::Io& io : batch) {
      // blkparse shows times relative to the first event; start there.
      if (t0 == format::kNoTime) t0 = io.has_queue() ? std::min(io.queue_ns, io.issue_ns) : io.issue_ns;
      if (io.length > UINT32_MAX) {
        ++r.skipped;
        continue;
      }
      events.add(io);
      ++r.ios;
    }
  events.finish();
  if (r.skipped) r.notes.push_back(std::to_string(r.skipped) + " IOs longer than 4 GiB left out");
  if (events.out_of_order())
    r.notes.push_back(std::to_string(events.out_of_order()) + " events written out of time order");
  return r;
}

}  // namespace iotape::convert

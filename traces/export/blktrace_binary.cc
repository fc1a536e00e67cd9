// blktrace's binary format (include/uapi/linux/blktrace_api.h): 48-byte
// struct blk_io_trace records, native byte order, Q/D/C events per IO plus
// a process-name notify record for every pid, as blkparse and btt read it.
#include <cstring>
#include <unordered_set>
#include <vector>

#include "traces/export/block_events.h"
#include "traces/export/formats.h"

namespace iotape {
namespace {

struct BlkIoTrace {
  uint32_t magic, sequence;
  uint64_t time, sector;
  uint32_t bytes, action, pid, device, cpu;
  uint16_t error, pdu_len;
};
static_assert(sizeof(BlkIoTrace) == 48);

constexpr uint32_t kMagic = 0x65617400 | 0x07;
// Category bits (shifted into the high half of action).
constexpr uint32_t kTcRead = 1u << 0, kTcWrite = 1u << 1, kTcFlush = 1u << 2, kTcSync = 1u << 3,
                   kTcQueue = 1u << 4, kTcIssue = 1u << 6, kTcComplete = 1u << 7, kTcFs = 1u << 8,
                   kTcNotify = 1u << 10, kTcAhead = 1u << 11, kTcMeta = 1u << 12, kTcDiscard = 1u << 13,
                   kTcFua = 1u << 15;
constexpr uint32_t act(uint32_t what, uint32_t category) { return what | (category << 16); }

uint32_t categories(const Io& io) {
  uint32_t c = kTcFs;
  switch (io.op) {
    case Op::kRead: c |= kTcRead; break;
    case Op::kWrite: case Op::kWriteZeroes: c |= kTcWrite; break;
    case Op::kDiscard: c |= kTcWrite | kTcDiscard; break;
    case Op::kFlush: c |= kTcWrite | kTcFlush; break;
    case Op::kOther: break;
  }
  if (io.flags & flag::kSync) c |= kTcSync;
  if (io.flags & flag::kFua) c |= kTcFua;
  if (io.flags & flag::kPreflush) c |= kTcFlush;
  if (io.flags & flag::kMeta) c |= kTcMeta;
  if (io.flags & flag::kReadahead) c |= kTcAhead;
  return c;
}

}  // namespace

ExportReport export_blktrace(TraceReader& in, std::FILE* out) {
  ExportReport r;
  std::vector<uint32_t> sequence;  // per CPU, as the kernel numbers events
  int64_t t0 = kNoTime;
  std::unordered_set<uint32_t> named_pids;
  const auto& devices = in.header().devices();
  auto device_of = [&](const Io& io) -> uint32_t {
    if (io.device >= static_cast<uint32_t>(devices.size())) return io.device;
    return (devices[io.device].major() << 20) | (devices[io.device].minor() & 0xfffff);
  };
  BlockEventStream events([&](const BlockEvent& e) {
    const Io& io = e.io;
    const uint64_t t = e.time_ns > t0 ? static_cast<uint64_t>(e.time_ns - t0) : 0;
    const uint32_t cpu = io.cpu < 0 ? 0 : static_cast<uint32_t>(io.cpu);
    if (sequence.size() <= cpu) sequence.resize(cpu + 1);
    if (io.pid && !io.comm.empty() && named_pids.insert(io.pid).second) {
      char comm[16] = {};
      std::memcpy(comm, io.comm.data(), std::min<size_t>(io.comm.size(), 15));
      BlkIoTrace note{kMagic, 0, t, 0, 0, act(0, kTcNotify), io.pid, device_of(io), cpu, 0, sizeof comm};
      std::fwrite(&note, sizeof note, 1, out);
      std::fwrite(comm, sizeof comm, 1, out);
    }
    uint32_t what = e.action == BlockAction::kQueue ? act(1, kTcQueue)
                    : e.action == BlockAction::kIssue ? act(7, kTcIssue)
                                                      : act(8, kTcComplete);
    BlkIoTrace rec{kMagic, ++sequence[cpu], t, io.offset / 512, static_cast<uint32_t>(io.length),
                   what | (categories(io) << 16), io.pid, device_of(io), cpu,
                   static_cast<uint16_t>(io.status < 0 ? -io.status : io.status), 0};
    std::fwrite(&rec, sizeof rec, 1, out);
  });
  for (auto batch = in.next_batch(); !batch.empty(); batch = in.next_batch())
    for (const Io& io : batch) {
      // blkparse shows times relative to the first event; start there.
      if (t0 == kNoTime) t0 = io.has_queue() ? std::min(io.queue_ns, io.issue_ns) : io.issue_ns;
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

}  // namespace iotape

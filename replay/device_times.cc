#include "replay/device_times.h"

#include <fmt/format.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <fstream>
#include <optional>
#include <stdexcept>

#include "observer/backend.h"
#include "replay/piece_index.h"

namespace iotape::replay {
namespace {

// Slack for the conversion between the two clocks (measured to well under a
// microsecond) when asking whether a request completed between an IO's
// submission and its reap.
constexpr int64_t kClockSlackNs = 20'000;

int64_t clock_ns(clockid_t c) {
  timespec ts;
  ::clock_gettime(c, &ts);
  return ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
}

// CLOCK_BOOTTIME - CLOCK_MONOTONIC, from the tightest of a few paired reads.
int64_t boot_minus_monotonic() {
  int64_t best_width = INT64_MAX, offset = 0;
  for (int i = 0; i < 16; ++i) {
    const int64_t a = clock_ns(CLOCK_MONOTONIC), b = clock_ns(CLOCK_BOOTTIME), c = clock_ns(CLOCK_MONOTONIC);
    if (c - a < best_width) best_width = c - a, offset = b - (a + (c - a) / 2);
  }
  return offset;
}

// Bytes from the whole disk's start to the partition MAJ:MIN (0 for a disk).
uint64_t partition_start(uint32_t major, uint32_t minor) {
  std::ifstream in(fmt::format("/sys/dev/block/{}:{}/start", major, minor));
  uint64_t sectors = 0;
  return in >> sectors ? sectors * 512 : 0;
}

// A stretch of a target that lies contiguously on its device.
struct Extent {
  uint64_t logical, physical, length;
};

std::vector<Extent> file_extents(const Target& t, uint64_t base) {
  std::vector<Extent> out;
  constexpr unsigned kBatch = 512;
  std::vector<char> buf(sizeof(fiemap) + kBatch * sizeof(fiemap_extent));
  auto* fm = reinterpret_cast<fiemap*>(buf.data());
  uint64_t start = 0;
  for (;;) {
    std::memset(buf.data(), 0, buf.size());
    fm->fm_start = start;
    fm->fm_length = FIEMAP_MAX_OFFSET - start;
    fm->fm_flags = FIEMAP_FLAG_SYNC;
    fm->fm_extent_count = kBatch;
    if (::ioctl(t.fd, FS_IOC_FIEMAP, fm) != 0)
      throw std::runtime_error(fmt::format("{}: cannot map the file's extents: {}", t.path, std::strerror(errno)));
    if (fm->fm_mapped_extents == 0) break;
    bool last = false;
    for (unsigned i = 0; i < fm->fm_mapped_extents; ++i) {
      const fiemap_extent& e = fm->fm_extents[i];
      const uint32_t unplaced = FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_DELALLOC | FIEMAP_EXTENT_ENCODED |
                                FIEMAP_EXTENT_DATA_INLINE | FIEMAP_EXTENT_DATA_TAIL | FIEMAP_EXTENT_NOT_ALIGNED;
      // Reads of an unwritten (preallocated) extent never reach the device either.
      if (!(e.fe_flags & (unplaced | FIEMAP_EXTENT_UNWRITTEN)))
        out.push_back({e.fe_logical, base + e.fe_physical, e.fe_length});
      start = e.fe_logical + e.fe_length;
      last = e.fe_flags & FIEMAP_EXTENT_LAST;
    }
    if (last) break;
  }
  return out;
}

// A file's IOs reach the device only where its blocks are allocated and
// written: a read of a hole or of an unwritten extent is served without one,
// and a write there lands on blocks the map taken now does not know. Such a
// replay would be timed only in part, so it is refused here.
void require_written(const Target& t, const std::vector<Extent>& extents) {
  uint64_t covered = 0;
  for (const Extent& e : extents) covered += std::min(e.length, t.size - std::min(e.logical, t.size));
  if (covered < t.size)
    throw std::runtime_error(fmt::format("{}: {} of its {} bytes are holes or unwritten extents, whose IOs the device "
                                         "does not see (write the whole file first, e.g. --prefill full)",
                                         t.path, t.size - covered, t.size));
}

// Whether a request of op `request` can have served an IO of op `io`: a read
// and a discard of the same range may be in flight at once, and each is its
// own IO's. The kernel carries out a write-zeroes as writes of zeroes on a
// device without the command.
bool serves(format::Op request, format::Op io) {
  return request == io || (io == format::Op::kWriteZeroes && request == format::Op::kWrite);
}

}  // namespace

struct DeviceTimes::State {
  const std::vector<Target>& targets;
  std::vector<observer::BlockDevice> devices;
  std::vector<uint32_t> device_of;            // by target: index into devices
  std::vector<std::vector<Extent>> extents;   // by target, sorted by logical offset
  std::unique_ptr<observer::Backend> backend;
  int64_t offset = 0;  // boottime - monotonic
  uint32_t pid = 0;
  // By device: ranged requests; requests without a range.
  std::vector<PieceIndex> ranged;
  std::vector<std::deque<Piece>> rangeless;
  DeviceTimesStats stats;
  std::vector<Piece> flushes;  // scratch for time()
  std::vector<format::Io> extra;  // scratch for join()
  std::vector<uint32_t> order; // scratch for join()

  explicit State(const std::vector<Target>& t) : targets(t) {}

  void add(const format::Io& r) {
    if ((r.pid && r.pid != pid) || !r.has_complete() || r.device >= devices.size()) return;
    // A request never issued (the empty pre-flush write of an fsync, which
    // the flush machinery completes itself) has its queue time as issue time.
    const bool never_issued = r.has_queue() && r.issue_ns == r.queue_ns;
    const Piece p{r.offset, r.offset + r.length,        r.issue_ns - offset, r.complete_ns - offset,
                  false,    r.op == format::Op::kWrite, never_issued,        r.op};
    if (r.length > 0 && r.op != format::Op::kFlush) {
      ranged[r.device].add(p);
    } else {
      rangeless[r.device].push_back(p);
    }
  }

  // Claims the requests of an IO of `op` that served [a, b) on `dev` and
  // completed within [lo, hi]; widens [first, last] by their times. Returns
  // the parts found.
  int claim_range(uint32_t dev, format::Op op, uint64_t a, uint64_t b, int64_t lo, int64_t hi, int64_t& first,
                  int64_t& last, bool& merged) {
    auto& index = ranged[dev];
    int parts = 0;
    uint64_t pos = a;
    while (pos < b) {
      // The piece covering `pos` that completed first (of several only while
      // one range is in flight twice), issued after the IO's submission, or
      // failing that within the clocks' slack of it: with IOs of overlapping
      // ranges in flight at once, the other IO's request may also complete
      // within this one's span. A request of exactly the IO's range comes
      // first: taking the overlapping IO's request instead would leave that
      // IO only this one's, issued before its submission.
      const auto issued_from = [&](int64_t from, bool exact) {
        return [&, from, exact](const Piece& p) {
          return serves(p.op, op) && p.issue >= from && p.complete >= lo && p.complete <= hi &&
                 (!exact || (p.start == pos && p.end == b));
        };
      };
      auto found = index.take(pos, issued_from(lo + kClockSlackNs, true));
      if (!found) found = index.take(pos, issued_from(lo + kClockSlackNs, false));
      if (!found) found = index.take(pos, issued_from(lo, false));
      if (!found) break;
      const Piece& p = *found;
      const uint64_t start = p.start;
      const uint64_t end = std::min(p.end, b);
      // What the IO does not cover stays for the IOs that merged with it.
      if (start < pos) index.add(Piece{start, pos, p.issue, p.complete, true, false, false, p.op});
      if (p.end > b) index.add(Piece{b, p.end, p.issue, p.complete, true, false, false, p.op});
      merged |= p.remainder || start < pos || p.end > b;
      first = std::min(first, p.issue);
      last = std::max(last, p.complete);
      ++parts;
      pos = end;
    }
    return parts;
  }

  // The flush requests `dev` served within [lo, hi], in order, and the
  // earliest empty pre-flush write among them: each replayed fsync made one
  // of its own, while one flush request may serve several fsyncs at once, so
  // an IO takes every flush in its span but leaves the other fsyncs their
  // writes. Which write is whose nothing tells; join() hands them out so
  // that every fsync gets one (see there).
  void claim_flushes(uint32_t dev, int64_t lo, int64_t hi, std::vector<Piece>& out, std::optional<Piece>& write) {
    auto& q = rangeless[dev];
    auto earliest = q.end();
    for (auto it = q.begin(); it != q.end(); ++it)
      if (it->empty_write && it->issue >= lo && it->complete <= hi &&
          (earliest == q.end() || it->complete < earliest->complete))
        earliest = it;
    if (earliest != q.end()) {
      write = *earliest;
      q.erase(earliest);
    }
    for (auto it = q.begin(); it != q.end();) {
      if (!it->empty_write && it->issue >= lo && it->complete <= hi) {
        out.push_back(*it);
        it = q.erase(it);
      } else {
        ++it;
      }
    }
  }

  // `extra`: the further flush requests an IO caused, as result IOs of their
  // own (op flush, the IO's source index), as a recording has them: one
  // interval from the first to the last would count the gaps between them
  // as busy.
  void time(format::Io& io, std::vector<format::Io>& extra) {
    const int64_t submit = io.queue_ns;
    const int64_t lo = submit - kClockSlackNs;
    const int64_t hi = io.has_complete() ? io.complete_ns + kClockSlackNs : INT64_MAX;
    const uint32_t dev = device_of[io.device];
    int64_t first = INT64_MAX, last = INT64_MIN;
    int parts = 0;
    bool merged = false;
    if (io.length > 0 && io.op != format::Op::kFlush && io.op != format::Op::kOther) {
      const auto& ext = extents[io.device];
      auto e = std::upper_bound(ext.begin(), ext.end(), io.offset,
                                [](uint64_t off, const Extent& x) { return off < x.logical; });
      if (e != ext.begin()) --e;
      for (uint64_t pos = io.offset; pos < io.end() && e != ext.end(); ++e) {
        if (e->logical + e->length <= pos) continue;
        if (e->logical > pos) pos = e->logical;  // a hole: nothing reaches the device there
        if (pos >= io.end()) break;
        const uint64_t stop = std::min(io.end(), e->logical + e->length);
        const uint64_t phys = e->physical + (pos - e->logical);
        parts += claim_range(dev, io.op, phys, phys + (stop - pos), lo, hi, first, last, merged);
        pos = stop;
      }
    }
    flushes.clear();
    std::optional<Piece> write;
    if (io.op == format::Op::kFlush || (io.flags & (format::flag::kPreflush | format::flag::kFua)))
      claim_flushes(dev, lo, hi, flushes, write);
    // An fsync's empty write is timed by its own request; a flush by the first flush request.
    if (parts == 0 && write && io.op != format::Op::kFlush) {
      first = write->issue;
      last = write->complete;
      // Never issued: queued and "issued" when it entered the block layer,
      // as a recording has it (Io::never_issued), which `report` counts as no
      // busy time and at that moment for queue depth. The fsync's submission
      // was earlier, by the io_uring worker's start.
      if (write->never_issued) io.queue_ns = write->issue;
      ++parts;
    }
    for (const Piece& f : flushes) {
      if (parts == 0) {  // the IO's own request
        first = f.issue;
        last = f.complete;
        ++parts;
        continue;
      }
      if (f.never_issued) continue;  // no busy time to account for
      format::Io r = io;
      r.op = format::Op::kFlush;
      r.flags = 0;
      r.offset = r.length = 0;
      r.issue_ns = f.issue;
      r.complete_ns = f.complete;
      extra.push_back(r);
      ++stats.extra_requests;
    }
    if (parts == 0) {
      io.issue_ns = submit;
      io.complete_ns = format::kNoTime;
      ++stats.untimed;
      return;
    }
    io.issue_ns = first;
    io.complete_ns = last;
    ++stats.timed;
    stats.split += parts > 1;
    stats.merged += merged;
  }

  // Requests that completed before `before` can serve no later IO.
  void forget(int64_t before) {
    for (auto& index : ranged) stats.unclaimed_requests += index.forget(before);
    for (auto& q : rangeless)
      for (auto it = q.begin(); it != q.end();) {
        if (it->complete < before) {
          ++stats.unclaimed_requests;
          it = q.erase(it);
        } else {
          ++it;
        }
      }
  }
};

DeviceTimes::DeviceTimes(const std::vector<Target>& targets) : s_(std::make_unique<State>(targets)) {
  State& s = *s_;
  for (const Target& t : targets) {
    if (!t.direct) throw std::runtime_error(t.path + " is not opened with O_DIRECT: the page cache serves its IOs");
    if (!t.block && t.dev_major == 0)
      throw std::runtime_error(t.path + ": its filesystem is on no block device");
    observer::BlockDevice disk;
    try {
      disk = observer::resolve_device(fmt::format("{}:{}", t.dev_major, t.dev_minor));
    } catch (const std::exception&) {
      throw std::runtime_error(fmt::format("{}: its device {}:{} is not a block device", t.path, t.dev_major,
                                           t.dev_minor));
    }
    if (!disk.request_based)
      throw std::runtime_error(t.path + ": " + disk.name + " is bio-based and shows no block requests");
    uint32_t index = 0;
    while (index < s.devices.size() && (s.devices[index].major != disk.major || s.devices[index].minor != disk.minor))
      ++index;
    if (index == s.devices.size()) s.devices.push_back(disk);
    s.device_of.push_back(index);
    const uint64_t base = partition_start(t.dev_major, t.dev_minor);
    s.extents.push_back(t.block ? std::vector<Extent>{{0, base, t.size}} : file_extents(t, base));
    if (!t.block) require_written(t, s.extents.back());
  }
  s.pid = static_cast<uint32_t>(::getpid());
  observer::BackendOptions bo;
  bo.devices = s.devices;
  bo.pid = s.pid;
  bo.keep_anonymous = true;
  s.backend = observer::make_ebpf_backend(bo);
  s.ranged.resize(s.devices.size());
  s.rangeless.resize(s.devices.size());
  s.offset = boot_minus_monotonic();
}

DeviceTimes::~DeviceTimes() = default;

void DeviceTimes::join(std::vector<format::Io>& ios) {
  State& s = *s_;
  const observer::IoSink sink = [&s](const format::Io& r) { s.add(r); };
  s.backend->poll(0, sink);
  if (ios.empty()) return;
  const int64_t last_submit = ios.back().queue_ns;
  s.extra.clear();
  // IOs claim requests in the order they were reaped, each the earliest that
  // fits its span: an IO reaped sooner has fewer requests to choose from.
  // Claimed in submission order, an fsync could take the empty write of one
  // submitted after it that completed first, and leave that one none
  // (four concurrent fsyncs at a time: about one in 1,000 went untimed).
  s.order.resize(ios.size());
  for (uint32_t i = 0; i < ios.size(); ++i) s.order[i] = i;
  const auto reaped = [&ios](uint32_t i) { return ios[i].has_complete() ? ios[i].complete_ns : INT64_MAX; };
  const auto by_reap = [&](uint32_t a, uint32_t b) { return reaped(a) < reaped(b); };
  if (!std::is_sorted(s.order.begin(), s.order.end(), by_reap))
    std::stable_sort(s.order.begin(), s.order.end(), by_reap);
  for (uint32_t i : s.order) s.time(ios[i], s.extra);
  ios.insert(ios.end(), s.extra.begin(), s.extra.end());
  s.forget(last_submit - kClockSlackNs);
}

std::string DeviceTimes::describe() const {
  std::vector<std::string> names;
  for (const auto& d : s_->devices) names.push_back(fmt::format("{} ({}:{})", d.name, d.major, d.minor));
  return fmt::format("{}", fmt::join(names, ", "));
}

void DeviceTimes::finish() {
  s_->backend->finish([](const format::Io&) {});  // requests left in flight: their IOs are already untimed
}

DeviceTimesStats DeviceTimes::stats() const {
  DeviceTimesStats st = s_->stats;
  st.dropped = s_->backend->dropped();
  st.uncompleted = s_->backend->uncompleted();
  return st;
}

}  // namespace iotape::replay

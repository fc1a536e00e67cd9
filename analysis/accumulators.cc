#include "analysis/accumulators.h"

#include <algorithm>
#include <bit>
#include <functional>
#include <limits>

namespace iotape::analysis {

int SizeMix::bucket_of(uint64_t bytes) {
  constexpr uint64_t k = 1024;
  // <4K -> 0, 4K -> 1, 8K -> 2, ... 128K -> 6 (sizes in between round down),
  // >128K -> 7; without a branch, as sizes vary from one IO to the next.
  return std::bit_width((bytes > 128 * k ? 256 * k : bytes) / (4 * k));
}

void SizeMix::add(const format::Io& io) {
  ++buckets_[bucket_of(io.length)];
  histogram_.add(io.length);
}

namespace {
constexpr uint64_t kNone = std::numeric_limits<uint64_t>::max();
}

void Sequential::add(const format::Io& io) {
  if (io.device >= next_offset_.size()) next_offset_.resize(io.device + 1, {kNone, kNone});
  uint64_t& next = next_offset_[io.device][io.op == format::Op::kWrite ? 1 : 0];
  ++ios_;
  sequential_ += next == io.offset;
  next = io.end();
}

void OpLatency::add(const format::Io& io) {
  const int64_t start = io.device_start_ns();
  if (io.has_complete()) d2c.add(static_cast<uint64_t>(std::max<int64_t>(0, io.complete_ns - start)));
  if (io.has_queue()) {
    q2d.add(static_cast<uint64_t>(std::max<int64_t>(0, start - io.queue_ns)));
    if (io.has_complete()) q2c.add(static_cast<uint64_t>(std::max<int64_t>(0, io.complete_ns - io.queue_ns)));
  }
}

TimeSeries::TimeSeries(size_t max_points, int64_t interval_ns)
    : max_points_(std::max<size_t>(max_points, 2)), interval_ns_(interval_ns) {}

void TimeSeries::add(const format::Io& io) {
  const int64_t t = std::max<int64_t>(0, io.issue_ns - origin_ns_);
  // Most IOs fall in the point of the IO before: no division for them.
  if (t >= last_from_ && t < last_from_ + interval_ns_) return count(points_[last_], io);
  uint64_t i = static_cast<uint64_t>(t / interval_ns_);
  while (i >= max_points_) {
    // Coarsen: twice the interval, neighbouring points merged.
    for (size_t j = 0; j < points_.size(); ++j) {
      Point& dst = points_[j / 2];
      const Point src = points_[j];
      if (j % 2 == 0) dst = src;
      else {
        dst.ios += src.ios;
        dst.bytes_read += src.bytes_read;
        dst.bytes_written += src.bytes_written;
      }
    }
    points_.resize((points_.size() + 1) / 2);
    interval_ns_ *= 2;
    i = static_cast<uint64_t>(t / interval_ns_);
  }
  if (i >= points_.size()) points_.resize(i + 1);
  last_ = i;
  last_from_ = static_cast<int64_t>(i) * interval_ns_;
  count(points_[i], io);
}

void TimeSeries::count(Point& p, const format::Io& io) {
  ++p.ios;
  if (io.op == format::Op::kRead) p.bytes_read += io.length;
  if (io.op == format::Op::kWrite) p.bytes_written += io.length;
}

namespace {
// Process names are short: compared in line, a call to memcmp costs more than the comparison.
bool same_name(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return false;
  return true;
}
}  // namespace

Processes::Tracked& Processes::find(const format::Io& io) {
  Recent& recent = recent_[slot(io.pid)];
  if (recent.tracked && recent.tracked->entry.pid == io.pid) {
    const std::string& comm = recent.tracked->entry.comm;
    if (recent.name == io.comm.data() && comm.size() == io.comm.size()) return *recent.tracked;
    if (same_name(comm, io.comm)) {
      recent.name = io.comm.data();
      return *recent.tracked;
    }
  }
  const Key key{io.pid, std::hash<std::string_view>{}(io.comm)};
  auto it = entries_.find(key);
  Tracked& t = it != entries_.end() ? it->second : insert(io, key);
  recent_[slot(io.pid)] = {&t, io.comm.data()};  // insert may have emptied the table
  return t;
}

void Processes::new_batch() {
  for (Recent& r : recent_) r.name = nullptr;
}

Processes::Tracked& Processes::insert(const format::Io& io, const Key& key) {
  Tracked fresh;
  if (entries_.size() >= capacity_) {
    auto victim = std::min_element(entries_.begin(), entries_.end(), [](const auto& a, const auto& b) {
      return a.second.entry.bytes < b.second.entry.bytes;
    });
    fresh.entry.bytes = fresh.entry.error_bytes = victim->second.entry.bytes;
    fresh.inherited_busy_ns = victim->second.inherited_busy_ns + victim->second.busy.total_ns();
    entries_.erase(victim);
    recent_.fill({});
    ++evictions_;
  }
  fresh.entry.pid = io.pid;
  fresh.entry.comm = std::string(io.comm);
  return entries_.emplace(key, std::move(fresh)).first->second;
}

void Processes::add(const format::Io& io, int64_t end_ns) {
  Tracked& t = find(io);
  Entry& e = t.entry;
  ++e.ios;
  e.bytes += io.length;
  if (io.op == format::Op::kRead) e.bytes_read += io.length;
  if (io.op == format::Op::kWrite) e.bytes_written += io.length;
  if (io.op == format::Op::kDiscard) e.bytes_discarded += io.length;
  if (io.op == format::Op::kWriteZeroes) e.bytes_write_zeroes += io.length;
  if (!io.never_issued()) t.busy.add(io.issue_ns, end_ns);
}

std::vector<Processes::Entry> Processes::top(size_t n) const {
  std::vector<Entry> all;
  all.reserve(entries_.size());
  for (const auto& [k, t] : entries_) {
    all.push_back(t.entry);
    all.back().busy_ns = t.inherited_busy_ns + t.busy.total_ns();
  }
  std::sort(all.begin(), all.end(), [](const Entry& a, const Entry& b) {
    if (a.bytes != b.bytes) return a.bytes > b.bytes;
    if (a.pid != b.pid) return a.pid < b.pid;
    return a.comm < b.comm;
  });
  if (all.size() > n) all.resize(n);
  return all;
}

PhaseResults::PhaseResults(const v1::TraceHeader& header)
    : map_(header), figures_(static_cast<size_t>(header.phases_size())), busy_(figures_.size()) {}

void PhaseResults::add(const format::Io& io, uint64_t position, int64_t end_ns) {
  const int k = map_.of(io, position);
  if (k < 0) return;
  Figures& f = figures_[static_cast<size_t>(k)];
  f.add(io, end_ns);
  if (!io.never_issued()) busy_[static_cast<size_t>(k)].add(io.issue_ns, end_ns);
  if ((io.op == format::Op::kRead || io.op == format::Op::kWrite) && io.has_complete())
    f.latency.add(static_cast<uint64_t>(std::max<int64_t>(0, io.complete_ns - io.device_start_ns())));
}

std::vector<PhaseResults::Figures> PhaseResults::figures() const {
  std::vector<Figures> out = figures_;
  for (size_t k = 0; k < out.size(); ++k) out[k].busy_ns = busy_[k].total_ns();
  return out;
}

}  // namespace iotape::analysis

#include "replay/schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "format/error.h"

namespace iotape::replay {

bool modifies(format::Op op) {
  return op == format::Op::kWrite || op == format::Op::kDiscard || op == format::Op::kWriteZeroes;
}

int64_t event_time(const format::Io& io, EventTime e) {
  return e == EventTime::kQueue && io.has_queue() ? io.queue_ns : io.issue_ns;
}

DeviceMap::DeviceMap(const v1::TraceHeader& header, size_t targets, const ReplayOptions& o)
    : header_(header), targets_(targets), o_(o) {}

bool DeviceMap::names(const DeviceMapEntry& e, uint32_t device) const {
  if (e.source_index) return *e.source_index == device;
  if (device >= static_cast<uint32_t>(header_.devices_size())) return false;
  const auto& d = header_.devices(static_cast<int>(device));
  if (!e.source_name.empty()) return d.name() == e.source_name;
  return d.major() == e.source_major && d.minor() == e.source_minor;
}

int DeviceMap::target_of(uint32_t device) const {
  if (!o_.device_map.empty()) {
    for (const auto& e : o_.device_map)
      if (names(e, device)) return static_cast<int>(e.target);
    return kSkipped;
  }
  if (targets_ == 1) return 0;  // make_plan checks that one device has IOs
  return device < targets_ ? static_cast<int>(device) : kNoTarget;
}

Placement::Placement(const DeviceMap& map, const std::vector<Target>& targets, Fit fit,
                     std::vector<uint64_t> source_size)
    : map_(map), source_size_(std::move(source_size)), fit_(fit) {
  for (const auto& t : targets) {
    align_.push_back(std::max<uint32_t>(t.logical_block, 512));
    span_.push_back(t.size / align_.back() * align_.back());
  }
}

bool Placement::place(const format::Io& io, uint32_t& target, uint64_t& offset) const {
  const int t = map_.target_of(io.device);
  if (t < 0) return false;
  target = static_cast<uint32_t>(t);
  offset = io.offset;
  // A zero-length IO (a flush) is placed like any other: its offset, kept,
  // may lie past a smaller target.
  if (fit_ == Fit::kFail) return true;
  const uint64_t span = span_[t], align = align_[t];
  if (io.length > span) return true;  // make_plan refused this already
  if (fit_ == Fit::kWrap) {
    offset = io.offset % span;
  } else {
    const uint64_t src = io.device < source_size_.size() ? source_size_[io.device] : 0;
    if (src > span)
      offset = static_cast<uint64_t>(static_cast<unsigned __int128>(io.offset) * span / src) / align * align;
  }
  if (offset + io.length > span) offset = (span - io.length) / align * align;
  return true;
}

Timeline::Timeline(const ReplayOptions& o)
    : speed_(o.speed), cap_(o.effective_max_idle_ns()), afap_(o.timing == Timing::kAfap) {}

void Timeline::add(int64_t t, int64_t complete, int64_t& due_ns, int64_t& idle_ns) {
  if (!started_) {
    started_ = true;
    t0_ = busy_until_ = t;
  }
  const int64_t gap = t - busy_until_;  // > 0: nothing was outstanding in the recording
  idle_ns = 0;
  if (gap > 0) {
    const int64_t kept = cap_ < 0 ? gap : std::min(gap, cap_);
    removed_ += gap - kept;
    if (afap_) idle_ns = static_cast<int64_t>(std::llround(static_cast<double>(kept) / speed_));
  }
  busy_until_ = std::max(busy_until_, complete == format::kNoTime ? t : complete);
  due_ns = std::max<int64_t>(0, static_cast<int64_t>(std::llround(static_cast<double>(t - t0_ - removed_) / speed_)));
}

WindowedSource::WindowedSource(format::TraceReader& reader, const ReplayOptions& o) : reader_(reader), o_(o) {}

const format::Io* WindowedSource::next(uint64_t& index) {
  while (!ended_) {
    if (pos_ == batch_.size()) {
      batch_ = reader_.next_batch();
      pos_ = 0;
      if (batch_.empty()) return nullptr;
    }
    const format::Io& io = batch_[pos_++];
    index = index_++;
    const int64_t t = event_time(io, o_.events);
    if (!started_) started_ = true, first_ = t;
    if (t - first_ < o_.window.start_ns) continue;
    if (o_.window.end_ns && t - first_ >= *o_.window.end_ns) {
      ended_ = true;  // the source is sorted: nothing later is inside the window
      return nullptr;
    }
    if (io.op == format::Op::kFlush && io.pid == 0 && io.device < flush_until_.size() && t <= flush_until_[io.device]) {
      ++kernel_flushes_;
      continue;
    }
    if (io.op == format::Op::kWrite && (io.flags & (format::flag::kPreflush | format::flag::kFua))) {
      if (io.device >= flush_until_.size()) flush_until_.resize(io.device + 1, INT64_MIN);
      flush_until_[io.device] = std::max(flush_until_[io.device], io.has_complete() ? io.complete_ns : t);
    }
    return &io;
  }
  return nullptr;
}

Schedule::Schedule(format::TraceReader& reader, const Placement& placement, const ReplayOptions& o)
    : placement_(placement), o_(o), source_(reader, o), timeline_(o) {}

bool Schedule::next(ReplayIo& out) {
  uint64_t index;
  while (const format::Io* io = source_.next(index)) {
    if (!placement_.place(*io, out.target, out.offset)) continue;
    out.source_index = index;
    out.length = io->length;
    out.op = io->op;
    out.flags = io->flags;
    out.rec_time_ns = event_time(*io, o_.events);
    out.rec_complete_ns = io->has_complete() ? io->complete_ns : out.rec_time_ns;
    out.rec_never_issued = io->never_issued();
    timeline_.add(out.rec_time_ns, io->has_complete() ? io->complete_ns : format::kNoTime, out.due_ns, out.idle_ns);
    return true;
  }
  return false;
}

bool Plan::writes() const {
  return by_op[static_cast<int>(format::Op::kWrite)] || by_op[static_cast<int>(format::Op::kDiscard)] ||
         by_op[static_cast<int>(format::Op::kWriteZeroes)];
}

namespace {

std::string device_label(const v1::TraceHeader& h, uint32_t device) {
  if (device >= static_cast<uint32_t>(h.devices_size())) return fmt::format("#{}", device);
  const auto& d = h.devices(static_cast<int>(device));
  return fmt::format("#{} {}:{}{}", device, d.major(), d.minor(), d.name().empty() ? "" : " " + d.name());
}

// Fills p.routes; refuses what DeviceMap cannot route (see make_plan).
void route_devices(Plan& p, const std::vector<uint64_t>& device_ios, const DeviceMap& map, const v1::TraceHeader& h,
                   const std::vector<Target>& targets, const ReplayOptions& o) {
  std::vector<std::string> devices;
  bool unrouted = false;
  for (uint32_t d = 0; d < device_ios.size(); ++d) {
    if (!device_ios[d]) continue;
    DeviceRoute r{.device = d, .label = device_label(h, d), .ios = device_ios[d], .target = map.target_of(d)};
    unrouted |= r.target == DeviceMap::kNoTarget;
    devices.push_back(fmt::format("{} ({} IOs)", r.label, r.ios));
    p.routes.push_back(std::move(r));
  }
  std::vector<std::string> paths;
  for (const Target& t : targets) paths.push_back(fmt::format("{} {}", paths.size(), t.path));
  if (o.device_map.empty() && (unrouted || p.routes.size() > targets.size()))
    throw format::UsageError(fmt::format(
        "the trace has IOs on {} devices ({}) and there {} {} target{} ({}): give --device-map to say which device "
        "goes onto which target (e.g. --device-map {})",
        p.routes.size(), fmt::join(devices, ", "), targets.size() == 1 ? "is" : "are", targets.size(),
        targets.size() == 1 ? "" : "s", fmt::join(paths, ", "),
        p.routes.size() > 1 ? fmt::format("{}=0,{}=0", p.routes[0].device, p.routes[1].device) : "0=0"));
  for (const auto& e : o.device_map) {
    bool found = false;
    for (uint32_t d = 0; d < std::max<size_t>(device_ios.size(), h.devices_size()) && !found; ++d)
      found = map.names(e, d);
    if (found) continue;
    std::vector<std::string> table;
    for (int d = 0; d < h.devices_size(); ++d) table.push_back(device_label(h, static_cast<uint32_t>(d)));
    const std::string src = e.source_index ? std::to_string(*e.source_index)
                            : !e.source_name.empty() ? e.source_name
                                                     : fmt::format("{}:{}", e.source_major, e.source_minor);
    throw format::UsageError(
        fmt::format("--device-map names trace device '{}', which the trace does not have (its "
                    "devices: {})",
                    src, table.empty() ? std::string("none listed") : fmt::format("{}", fmt::join(table, ", "))));
  }
}

}  // namespace

Plan make_plan(format::TraceReader& reader, const std::vector<Target>& targets, const ReplayOptions& o) {
  Plan p;
  DeviceMap map(reader.header(), targets.size(), o);
  WindowedSource source(reader, o);
  Timeline timeline(o);
  bool first = true;
  int64_t first_t = 0, last_t = 0, idle;
  uint64_t index;
  std::vector<uint64_t> device_ios;  // IOs in the window by trace device, replayed or not
  while (const format::Io* io = source.next(index)) {
    if (io->device >= device_ios.size()) device_ios.resize(io->device + 1, 0);
    ++device_ios[io->device];
    if (map.target_of(io->device) < 0) {
      ++p.skipped;
      continue;
    }
    const int64_t t = event_time(*io, o.events);
    if (first) first = false, first_t = t;
    last_t = std::max(last_t, io->has_complete() ? io->complete_ns : t);
    timeline.add(t, io->has_complete() ? io->complete_ns : format::kNoTime, p.last_due_ns, idle);
    ++p.ios;
    ++p.by_op[static_cast<int>(io->op)];
    p.preflush_writes += io->op == format::Op::kWrite && (io->flags & format::flag::kPreflush);
    p.bytes_by_op[static_cast<int>(io->op)] += io->length;
    p.max_length = std::max(p.max_length, io->length);
    if (io->has_complete()) ++p.with_completion;
    if (io->device >= p.device_end.size()) p.device_end.resize(io->device + 1, 0);
    if (io->length) p.device_end[io->device] = std::max(p.device_end[io->device], io->end());
  }
  p.span_ns = p.ios ? last_t - first_t : 0;
  p.kernel_flushes = source.kernel_flushes();
  p.source_ios = source.read();
  route_devices(p, device_ios, map, reader.header(), targets, o);

  for (uint32_t d = 0; d < p.device_end.size(); ++d) {
    const int t = map.target_of(d);
    if (t < 0 || p.device_end[d] == 0) continue;
    const Target& tg = targets[t];
    const uint64_t span = tg.size / std::max<uint32_t>(tg.logical_block, 512) * std::max<uint32_t>(tg.logical_block, 512);
    if (o.fit == Fit::kFail && p.device_end[d] > tg.size)
      p.unfit.push_back(fmt::format("trace device #{} reaches byte {} but {} has {} bytes", d, p.device_end[d],
                                    tg.path, tg.size));
    else if (p.max_length > span)
      p.unfit.push_back(fmt::format("an IO of {} bytes is larger than {} ({} bytes)", p.max_length, tg.path, span));
  }
  return p;
}

}  // namespace iotape::replay

#include "workloads/cut.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "analysis/accumulators.h"
#include "format/error.h"
#include "format/phases.h"
#include "format/writer.h"

namespace iotape::workloads {
namespace {

bool selected(const format::Io& io, const IoFilter& f, const v1::TraceHeader& h) {
  if ((io.flags & format::flag::kSelf) && !f.include_self) return false;
  if (f.pid && io.pid != *f.pid) return false;
  if (f.comm && io.comm != *f.comm) return false;
  if (f.device) {
    if (io.device >= static_cast<uint32_t>(h.devices_size())) return false;
    const auto& d = h.devices(static_cast<int>(io.device));
    if (d.major() != f.device->major || d.minor() != f.device->minor) return false;
  }
  return true;
}

int64_t end_of(const format::Io& io) { return io.has_complete() ? std::max(io.complete_ns, io.issue_ns) : io.issue_ns; }

std::vector<ChosenWindow> in_time_order(std::vector<ChosenWindow> chosen) {
  std::sort(chosen.begin(), chosen.end(),
            [](const ChosenWindow& a, const ChosenWindow& b) { return a.activity.start_ns < b.activity.start_ns; });
  return chosen;
}

nlohmann::ordered_json to_json(const std::vector<ChosenWindow>& chosen) {
  auto out = nlohmann::ordered_json::array();
  for (const auto& c : chosen)
    out.push_back({{"start_s", c.activity.start_ns / 1e9},
                   {"end_s", c.activity.end_ns / 1e9},
                   {"busy_s", c.activity.busy_ns / 1e9},
                   {"bytes", c.activity.bytes},
                   {"discard_bytes", c.activity.discard_bytes},
                   {"write_zeroes_bytes", c.activity.write_zeroes_bytes},
                   {"ios", c.activity.ios},
                   {"why", c.why}});
  return out;
}

struct Played {
  int64_t removed_idle_ns = 0;
  int64_t between_ns = 0;
};

// Calls emit(out, in) for every IO the cut writes, in order: `out` is `in`
// with its output times. Returns the idle time cut away and the trace time
// between the windows (see CutResult).
template <class Emit>
Played play_windows(format::TraceReader& reader, const CutOptions& o, const std::vector<ChosenWindow>& chosen,
                    int64_t origin, Emit emit) {
  Played played;
  int64_t& removed = played.removed_idle_ns;
  // Output time = input time - shift; the shift grows by every idle gap's excess over max_idle.
  int64_t shift = format::kNoTime;
  int64_t done = format::kNoTime;  // latest completion written, output time
  int64_t prev_hi = format::kNoTime;
  for (const auto& c : chosen) {
    const int64_t lo = c.activity.start_ns, hi = c.activity.end_ns;
    // A window that does not touch the one before joins it: the trace time between them is no gap of the cut.
    bool joining = prev_hi != format::kNoTime && lo > prev_hi;
    if (joining) played.between_ns += lo - prev_hi;
    reader.seek_time(origin + lo);
    format::Io io;
    while (reader.next(io)) {
      const int64_t t = io.issue_ns - origin;
      if (t >= hi) break;
      if (t < lo || !selected(io, o.filter, reader.header())) continue;
      if (shift == format::kNoTime) {
        shift = io.issue_ns, done = 0;
      } else if (joining) {
        // The idle time measured at the join: the previous window's after its
        // last end, this one's before its first IO; capped like any gap.
        const int64_t idle = std::max<int64_t>(0, origin + prev_hi - (done + shift)) + (t - lo);
        const int64_t kept = std::min(idle, o.max_idle_ns);
        removed += idle - kept;
        shift = io.issue_ns - (done + kept);
      }
      joining = false;
      int64_t issue = io.issue_ns - shift;
      if (issue > done + o.max_idle_ns) {
        const int64_t excess = issue - done - o.max_idle_ns;
        shift += excess;
        issue -= excess;
        removed += excess;
      }
      format::Io out = io;
      out.issue_ns = issue;
      if (io.has_queue()) out.queue_ns = io.queue_ns - shift;
      if (io.has_complete()) out.complete_ns = io.complete_ns - shift;
      done = std::max(done, end_of(out));
      emit(out, io);
    }
    prev_hi = hi;
  }
  return played;
}

// The input's phases that have IOs in the cut, clipped to them (docs/format.md,
// "Phases"). A replay result's IOs keep their source_index, and its phases
// their source's times; other phases are renumbered to positions and times of
// the output. Reads the chosen windows once more.
std::vector<v1::Phase> clipped_phases(const CutOptions& o, const std::vector<ChosenWindow>& chosen, int64_t origin) {
  format::TraceReader reader(o.traces, {.decode_ahead = format::kToolDecodeAhead});
  const v1::TraceHeader& h = reader.header();
  const format::PhaseMap map(h);
  const bool replayed = h.source() == v1::SOURCE_REPLAY;
  std::vector<v1::Phase> phases(h.phases().begin(), h.phases().end());
  std::vector<bool> seen(phases.size(), false);
  uint64_t position = 0;
  play_windows(reader, o, chosen, origin, [&](const format::Io& out, const format::Io& in) {
    const int k = replayed ? map.of(in, 0) : map.at_time(in.issue_ns);
    const uint64_t at = replayed ? static_cast<uint64_t>(in.source_index) : position;
    ++position;
    if (k < 0) return;
    v1::Phase& p = phases[static_cast<size_t>(k)];
    if (!seen[k]) {
      seen[k] = true;
      p.set_first_index(at);
      p.set_ios(1);
      if (!replayed) {
        p.set_start_ns(out.issue_ns);
        p.set_end_ns(end_of(out));
      }
      return;
    }
    const uint64_t first = std::min(p.first_index(), at);
    p.set_ios(std::max(p.first_index() + p.ios(), at + 1) - first);
    p.set_first_index(first);
    if (!replayed) p.set_end_ns(std::max(p.end_ns(), end_of(out)));
  });
  std::vector<v1::Phase> kept;
  for (size_t k = 0; k < phases.size(); ++k)
    if (seen[k]) kept.push_back(std::move(phases[k]));
  return kept;
}

}  // namespace

WindowMeter::WindowMeter(IoFilter filter, int64_t length_ns, bool score_discards)
    : filter_(std::move(filter)), self_only_(!filter_.device && !filter_.comm && !filter_.pid), length_ns_(length_ns) {
  if (length_ns <= 0) throw format::UsageError("the window length must be positive");
  result_.score_discards = score_discards;
}

WindowActivity& WindowMeter::grow_to(size_t i) {
  auto& windows = result_.windows;
  while (windows.size() <= i) {
    const auto start = static_cast<int64_t>(windows.size()) * length_ns_;
    windows.push_back({.start_ns = start, .end_ns = start + length_ns_});
  }
  return windows[i];
}

void WindowMeter::close_before(size_t i) {
  if (i <= open_first_) return;
  const size_t closing = std::min(i - open_first_, open_.size());
  for (size_t k = 0; k < closing; ++k) window(open_first_ + k).busy_ns = open_[k].total_ns();
  open_.erase(open_.begin(), open_.begin() + static_cast<ptrdiff_t>(closing));
  open_first_ = i;
}

size_t WindowMeter::window_of(int64_t t) {
  if (t < at_lo_ || t - at_lo_ >= length_ns_) {
    at_ = static_cast<size_t>(t / length_ns_);
    at_lo_ = static_cast<int64_t>(at_) * length_ns_;
  }
  return at_;
}

void WindowMeter::add(const format::Io& io, const v1::TraceHeader& header) {
  if (!beyond_.empty()) return;
  if (origin_ == format::kNoTime) {
    origin_ = io.issue_ns;  // the grid starts at the first IO, whatever the filter
    int64_t reach;
    if (__builtin_mul_overflow(kMaxWindows, length_ns_, &reach)) reach = INT64_MAX;
    if (__builtin_sub_overflow(origin_, reach, &reach_lo_)) reach_lo_ = INT64_MIN;
    if (__builtin_add_overflow(origin_, reach, &reach_hi_)) reach_hi_ = INT64_MAX;
  }
  const uint64_t index = ios_++;
  // Beyond the grid an IO would add windows by the million (or overflow).
  if (io.issue_ns < reach_lo_ || end_of(io) >= reach_hi_) {
    const int64_t t = io.issue_ns < reach_lo_ ? io.issue_ns : end_of(io);
    beyond_ = fmt::format(
        "IO {} reaches {:.0f} s from the first IO's issue, beyond {} windows of {:.3f} s: give a longer --length",
        index, (static_cast<double>(t) - static_cast<double>(origin_)) / 1e9, kMaxWindows, length_ns_ / 1e9);
    return;
  }
  last_end_ = std::max(last_end_,
                       end_of(io));  // and the trace ends at its last, whatever the filter
  if (self_only_ ? (io.flags & format::flag::kSelf) && !filter_.include_self : !selected(io, filter_, header)) return;
  result_.timed |= io.has_complete();
  const int64_t start = std::max(io.issue_ns - origin_, int64_t{0});  // late IOs count from the origin
  const int64_t end = end_of(io) - origin_;
  const size_t first = window_of(start);
  if (first > open_first_) close_before(first);
  WindowActivity& w = window(first);
  switch (io.op) {
    case format::Op::kDiscard:
      w.discard_bytes += io.length;
      w.bytes += result_.score_discards ? io.length : 0;
      break;
    case format::Op::kWriteZeroes:
      w.write_zeroes_bytes += io.length;
      w.bytes += result_.score_discards ? io.length : 0;
      break;
    default:
      w.bytes += io.length;
  }
  ++w.ios;
  if (end <= at_lo_ + length_ns_ && first >= open_first_) {
    // Within the window it starts in, as most IOs are (a window is a minute).
    if (end > start && !io.never_issued()) {
      if (first - open_first_ >= open_.size()) open_.resize(first - open_first_ + 1);
      open_[first - open_first_].add(start, end);
    }
    return;
  }
  for (size_t i = first; static_cast<int64_t>(i) * length_ns_ < std::max(end, start + 1); ++i) {
    const int64_t lo = std::max(start, static_cast<int64_t>(i) * length_ns_);
    const int64_t hi = std::min(end, static_cast<int64_t>(i + 1) * length_ns_);
    window(i);
    if (hi <= lo || io.never_issued()) continue;
    if (i < open_first_) {
      // A late IO in a closed window: counted on its own, as BusyTime counts
      // one before its open segment.
      window(i).busy_ns += hi - lo;
      continue;
    }
    if (i - open_first_ >= open_.size()) open_.resize(i - open_first_ + 1);
    open_[i - open_first_].add(lo, hi);
  }
}

Activity WindowMeter::finish() {
  if (!beyond_.empty()) throw format::UsageError(beyond_);
  close_before(SIZE_MAX);
  if (origin_ != format::kNoTime) result_.span_ns = last_end_ - origin_;
  auto load = [&](const WindowActivity& w) {
    return static_cast<double>(result_.timed ? static_cast<uint64_t>(w.busy_ns) : w.ios);
  };
  double max_load = 1, max_bytes = 1;
  for (const auto& w : result_.windows) {
    max_load = std::max(max_load, load(w));
    max_bytes = std::max(max_bytes, static_cast<double>(w.bytes));
  }
  for (auto& w : result_.windows) w.score = (load(w) / max_load + static_cast<double>(w.bytes) / max_bytes) / 2;
  return std::move(result_);
}

Activity measure_windows(format::TraceReader& reader, const IoFilter& filter, int64_t length_ns, bool score_discards) {
  WindowMeter meter(filter, length_ns, score_discards);
  format::Io io;
  while (reader.next(io)) meter.add(io, reader.header());
  return meter.finish();
}

size_t Activity::within() const {
  size_t n = 0;
  while (n < windows.size() && windows[n].end_ns <= span_ns) ++n;
  return n;
}

std::string Activity::score_basis() const {
  const char* bytes = score_discards ? "bytes (discarded and write-zeroes included)" : "bytes read and written";
  return fmt::format("{} and {}", timed ? "busy time" : "IOs (no completion times)", bytes);
}

namespace {

// Indexes of the windows within the trace that hold selected IOs, the highest score first.
std::vector<size_t> by_score(const Activity& activity) {
  const auto& windows = activity.windows;
  std::vector<size_t> order;
  const size_t within = activity.within();  // a scan of the windows: once, not per window
  for (size_t i = 0; i < within; ++i)
    if (windows[i].ios > 0) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return windows[a].score > windows[b].score; });
  return order;
}

void too_short(const Activity& activity) {
  if (!activity.windows.empty() && activity.within() == 0)
    throw format::UsageError(
        fmt::format("the trace spans {:.3f} s, less than one window of {:.3f} s: give a shorter --length",
                    activity.span_ns / 1e9, activity.windows.empty() ? 0.0 : activity.windows[0].end_ns / 1e9));
}

}  // namespace

std::vector<ChosenWindow> pick_heavy(const Activity& activity, uint32_t count, std::string* note) {
  too_short(activity);
  const auto order = by_score(activity);
  std::vector<ChosenWindow> chosen;
  for (size_t r = 0; r < order.size() && chosen.size() < count; ++r) {
    const auto& w = activity.windows[order[r]];
    chosen.push_back({w, fmt::format("heavy: rank {} of {} active windows by {} (score {:.3f})", r + 1, order.size(),
                                     activity.score_basis(), w.score)});
  }
  if (note && chosen.size() < count)
    *note = fmt::format("the trace holds {} whole windows, {} of them with selected IOs", activity.within(),
                        order.size());
  return in_time_order(std::move(chosen));
}

std::vector<ChosenWindow> pick_light(const Activity& activity, uint32_t count, std::string* note) {
  too_short(activity);
  const auto order = by_score(activity);
  if (order.empty()) return {};
  // The lowest scores, leaving out the windows a heavy cut of `count` takes.
  const size_t heavy = std::min<size_t>(count, order.size());
  if (heavy == order.size())
    throw format::UsageError(
        fmt::format("all {} active windows within the trace are among the {} a heavy cut takes: "
                    "nothing light is left; give a shorter --length or a smaller --count",
                    order.size(), count));
  std::vector<ChosenWindow> chosen;
  const size_t candidates = order.size() - heavy;
  for (size_t r = 0; r < candidates && chosen.size() < count; ++r) {
    const auto& w = activity.windows[order[order.size() - 1 - r]];
    chosen.push_back({w, fmt::format("light: rank {} of {} active windows from the least busy by {} (score {:.3f}; "
                                     "the {} heaviest left out)",
                                     r + 1, order.size(), activity.score_basis(), w.score, heavy)});
  }
  if (note && chosen.size() < count)
    *note = fmt::format("only {} active windows within the trace are not among the {} heaviest", candidates, heavy);
  return in_time_order(std::move(chosen));
}

CutResult cut(const CutOptions& o) {
  if (o.max_idle_ns < 0) throw format::UsageError("--max-idle must not be negative");
  CutResult result;
  if (o.mode == CutMode::kWindows) {
    for (const auto& w : o.windows) {
      const WindowActivity a{.start_ns = w.start_ns, .end_ns = w.end_ns.value_or(INT64_MAX)};
      result.chosen.push_back({a, "asked for"});
    }
    result.chosen = in_time_order(std::move(result.chosen));
    for (size_t i = 1; i < result.chosen.size(); ++i)
      if (result.chosen[i].activity.start_ns < result.chosen[i - 1].activity.end_ns)
        throw format::UsageError("windows overlap: give them without overlaps");
  } else {
    format::TraceReader pass1(o.traces, {.decode_ahead = format::kToolDecodeAhead});
    const auto activity = measure_windows(pass1, o.filter, o.length_ns, o.score_discards);
    result.windows_measured = activity.windows.size();
    result.windows_within = activity.within();
    result.span_ns = activity.span_ns;
    result.score_basis = activity.score_basis();
    result.chosen = o.mode == CutMode::kHeavy ? pick_heavy(activity, o.count, &result.note)
                                              : pick_light(activity, o.count, &result.note);
  }
  format::TraceReader reader(o.traces, {.decode_ahead = format::kToolDecodeAhead});
  int64_t origin = format::kNoTime;
  {
    format::Io first;
    if (reader.next(first)) origin = first.issue_ns;
  }
  if (origin == format::kNoTime) throw format::TraceError(o.traces.front() + ": the trace has no IOs");
  if (result.chosen.empty()) throw format::UsageError("no window has any selected IO: nothing to cut");

  v1::TraceHeader h = reader.header();
  auto& meta = *h.mutable_metadata();
  const char* mode = o.mode == CutMode::kHeavy ? "heavy" : o.mode == CutMode::kLight ? "light" : "windows";
  meta["cut.mode"] = mode;
  meta["cut.windows"] = to_json(result.chosen).dump();
  meta["cut.max_idle_ns"] = std::to_string(o.max_idle_ns);
  if (o.mode != CutMode::kWindows) {
    meta["cut.window_length_ns"] = std::to_string(o.length_ns);
    meta["cut.score"] = result.score_basis;
  }
  std::string filters;
  if (o.filter.device) filters += fmt::format("device {}:{} ", o.filter.device->major, o.filter.device->minor);
  if (o.filter.comm) filters += "comm " + *o.filter.comm + " ";
  if (o.filter.pid) filters += fmt::format("pid {} ", *o.filter.pid);
  if (!filters.empty()) meta["cut.filter"] = filters.substr(0, filters.size() - 1);
  std::string sources;
  for (const auto& t : o.traces) sources += (sources.empty() ? "" : " ") + t;
  meta["cut.source"] = sources;
  const std::string workload = meta.count("workload") ? meta["workload"] : std::string("trace");
  meta["workload"] = fmt::format("{} ({} cut)", workload, mode);
  if (h.phases_size() > 0) {
    h.clear_phases();
    for (auto& p : clipped_phases(o, result.chosen, origin)) *h.add_phases() = std::move(p);
  }
  format::TraceWriter writer(o.out, h);
  const Played played = play_windows(reader, o, result.chosen, origin, [&](const format::Io& out, const format::Io&) {
    writer.append(out);
    ++result.ios;
  });
  result.removed_idle_ns = played.removed_idle_ns;
  result.between_ns = played.between_ns;
  writer.close();
  return result;
}

}  // namespace iotape::workloads

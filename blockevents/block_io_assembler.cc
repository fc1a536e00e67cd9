#include "blockevents/block_io_assembler.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "blockevents/sorted_spill.h"
#include "format/blktrace_layout.h"
#include "format/error.h"

namespace iotape::blockevents {

using namespace format::blktrace;  // events carry blktrace's action codes and category bits

namespace {

constexpr uint64_t kSector = 512;

struct Key {
  uint32_t dev;
  uint64_t sector;
  auto operator<=>(const Key&) const = default;
};

// A bio or request on its way through the queue.
struct Request {
  uint64_t start = 0;      // first sector
  uint64_t bytes = 0;
  uint64_t completed = 0;  // bytes completed so far: C events may complete a request in parts
  int64_t queue_ns = format::kNoTime;
  int64_t issue_ns = format::kNoTime;
  int32_t status = 0;
  uint32_t pid = 0;
  std::string comm;
  uint64_t cgroup = 0;
  int32_t cpu = -1;
  format::Op op = format::Op::kRead;
  uint32_t flags = 0;
  bool remapped = false;  // moved here by an A event, not yet queued on this device
  bool empty_preflush = false;  // queued as a write of no data with a preflush (an fsync's)
  EventPlace place;       // its latest Q, G, I or D, for errors about an IO written at the end
};

// Requests by (device, current sector); several may share one place.
class Requests {
 public:
  Request* front(Key k) {
    auto it = map_.find(k);
    return it == map_.end() ? nullptr : &it->second.front();
  }
  Request* back(Key k) {
    auto it = map_.find(k);
    return it == map_.end() ? nullptr : &it->second.back();
  }
  Request take_front(Key k) { return take(k, true); }
  Request take_back(Key k) { return take(k, false); }
  // The first request at `k` that `fits`, or nullptr.
  template <typename Fits>
  Request* first(Key k, Fits fits) {
    auto it = map_.find(k);
    if (it == map_.end()) return nullptr;
    for (Request& r : it->second)
      if (fits(r)) return &r;
    return nullptr;
  }
  // Removes `*r`, a request at `k`, and returns it.
  Request take(Key k, const Request* r) {
    auto it = map_.find(k);
    const auto at = it->second.begin() + (r - it->second.data());
    Request out = std::move(*at);
    it->second.erase(at);
    if (it->second.empty()) map_.erase(it);
    return out;
  }
  void put(Key k, Request r) { map_[k].push_back(std::move(r)); }

  // A request on `dev` ending at `sector`, among the few places just before it.
  Request* ending_at(uint32_t dev, uint64_t sector) {
    auto it = map_.lower_bound({dev, sector});
    for (int looked = 0; looked < 64 && it != map_.begin(); ++looked) {
      --it;
      if (it->first.dev != dev) break;
      for (Request& r : it->second)
        if (r.start + r.bytes / kSector == sector) return &r;
    }
    return nullptr;
  }

  void for_each(const std::function<void(const Request&)>& visit) const {
    for (const auto& [k, rs] : map_)
      for (const Request& r : rs) visit(r);
  }

  uint64_t size() const {
    uint64_t n = 0;
    for (const auto& [k, rs] : map_) n += rs.size();
    return n;
  }

  // Removes every request `take` returns true for, visiting them in key order.
  void take_if(const std::function<bool(Key, const Request&)>& take) {
    for (auto it = map_.begin(); it != map_.end();) {
      std::erase_if(it->second, [&](const Request& r) { return take(it->first, r); });
      it = it->second.empty() ? map_.erase(it) : std::next(it);
    }
  }

 private:
  Request take(Key k, bool front) {
    auto it = map_.find(k);
    Request r = std::move(front ? it->second.front() : it->second.back());
    if (front)
      it->second.erase(it->second.begin());
    else
      it->second.pop_back();
    if (it->second.empty()) map_.erase(it);
    return r;
  }

  // Almost always one request a place: a vector costs one allocation, a deque three.
  std::map<Key, std::vector<Request>> map_;
};

format::Op op_of(const TraceEvent& ev) {
  const uint32_t c = ev.categories();
  if (ev.zone_command) return format::Op::kOther;
  if (c & category::kDiscard) return format::Op::kDiscard;
  if ((c & category::kFlush) && ev.bytes == 0) return format::Op::kFlush;
  return (c & category::kWrite) ? format::Op::kWrite : format::Op::kRead;
}

uint32_t flags_of(uint32_t c, format::Op op) {
  uint32_t f = 0;
  if (c & category::kSync) f |= format::flag::kSync;
  if (c & category::kFua) f |= format::flag::kFua;
  if ((c & category::kFlush) && op != format::Op::kFlush) f |= format::flag::kPreflush;
  if (c & category::kMeta) f |= format::flag::kMeta;
  if (c & category::kAhead) f |= format::flag::kReadahead;
  return f;
}

// What a trace carried: the kinds of request events, and when each CPU's
// events began and ended.
class EventCensus {
 public:
  void count(const TraceEvent& ev) {
    if (ev.what() < 32) kinds_ |= 1u << ev.what();
    auto [it, added] = cpus_.try_emplace(ev.cpu, Span{ev.time, ev.time});
    if (!added) it->second.last = std::max(it->second.last, ev.time);
  }
  bool has(uint32_t what) const { return kinds_ >> what & 1; }

  // When D or C events are missing: which kinds the input carried.
  std::optional<std::string> kinds_note() const {
    std::vector<char> present;
    for (auto [what, letter] : kLetters)
      if (has(what)) present.push_back(letter);
    if (present.empty() || (has(kIssue) && has(kComplete))) return std::nullopt;
    const char* missing = has(kIssue) ? "C" : has(kComplete) ? "D" : "D or C";
    return fmt::format("the input carries only {} events, no {} (recorded with a filter mask, blktrace -a?)",
                       fmt::join(present, ", "), missing);
  }

  // When the CPUs fall in two groups whose events lie far apart in time (by
  // more than a second and than either group's own span), the clocks of the
  // smaller group likely disagree with the others'.
  std::optional<std::string> clock_note() const {
    std::vector<std::pair<Span, uint32_t>> by_first;
    for (const auto& [cpu, span] : cpus_) by_first.push_back({span, cpu});
    std::sort(by_first.begin(), by_first.end());
    Span before = by_first.empty() ? Span{} : by_first.front().first;
    for (size_t i = 1; i < by_first.size(); ++i) {
      Span after = {by_first[i].first.first, by_first[i].first.first};
      for (size_t j = i; j < by_first.size(); ++j) after.last = std::max(after.last, by_first[j].first.last);
      const uint64_t gap = after.first - std::min(after.first, before.last);
      if (gap > kSecond && gap > before.last - before.first && gap > after.last - after.first) {
        const bool later_fewer = by_first.size() - i <= i;
        std::vector<uint32_t> odd;
        for (size_t j = later_fewer ? i : 0; j < (later_fewer ? by_first.size() : i); ++j)
          odd.push_back(by_first[j].second);
        std::sort(odd.begin(), odd.end());
        return fmt::format("the events of CPU{} {} all come {:.3f} s {} the other CPUs' (clocks that disagree?): "
                           "events of one request on both sides cannot match",
                           odd.size() > 1 ? "s" : "", fmt::join(odd, ", "), static_cast<double>(gap) / kSecond,
                           later_fewer ? "after" : "before");
      }
      before.last = std::max(before.last, by_first[i].first.last);
    }
    return std::nullopt;
  }

 private:
  struct Span {
    uint64_t first = 0, last = 0;
    auto operator<=>(const Span&) const = default;
  };
  static constexpr uint64_t kSecond = 1'000'000'000;
  static constexpr std::pair<uint32_t, char> kLetters[] = {
      {kQueue, 'Q'}, {kGetrq, 'G'},  {kInsert, 'I'}, {kBackmerge, 'M'}, {kFrontmerge, 'F'},
      {kSplit, 'X'}, {kRemap, 'A'}, {kIssue, 'D'},  {kRequeue, 'R'},   {kComplete, 'C'}};

  uint32_t kinds_ = 0;                // bit `what` for each kind seen
  std::map<uint32_t, Span> cpus_;     // cpu -> its first and last event time
};

}  // namespace

class BlockIoAssembler::Impl {
 public:
  Impl(IoOutput& out, ImportReport& report, const ImportOptions& options)
      : out_(out), report_(report), options_(options) {}

  void on_event(const TraceEvent& ev, const EventPlace& place) {
    const uint32_t c = ev.categories();
    if (c & category::kNotify) {
      if (ev.what() == kNotifyProcessName) comms_[ev.pid] = std::string(ev.comm);
      return;
    }
    if (!ev.comm.empty())
      if (std::string& known = comms_[ev.pid]; known != ev.comm) known = ev.comm;
    if (c & category::kPassthrough) {
      ++passthrough_;
      ++report_.skipped;
      return;
    }
    census_.count(ev);
    const Key k{ev.dev, ev.sectorless ? 0 : ev.sector};
    switch (ev.what()) {
      case kQueue:
        if (Request* r = queued_.back(k); r && r->remapped) {
          r->remapped = false;  // the same bio, now queued here: keep its first queue time
          return;
        }
        queued_.put(k, submitted(ev, static_cast<int64_t>(ev.time), place));
        break;
      case kGetrq:
        if (!queued_.front(k)) queued_.put(k, submitted(ev, format::kNoTime, place));
        break;
      case kInsert:
        if (Request* r = queued_.front(k))
          r->queue_ns = r->queue_ns == format::kNoTime ? static_cast<int64_t>(ev.time) : r->queue_ns;
        else
          queued_.put(k, submitted(ev, static_cast<int64_t>(ev.time), place));
        break;
      case kBackmerge:
        if (queued_.back(k)) queued_.take_back(k);  // the bio, now part of the request
        if (Request* r = queued_.ending_at(ev.dev, ev.sector))
          r->bytes += ev.bytes;
        else
          unmatched_merge(ev);
        break;
      case kFrontmerge: {
        if (queued_.back(k)) queued_.take_back(k);
        const Key old{ev.dev, ev.sector + ev.bytes / kSector};
        if (!queued_.front(old)) {
          unmatched_merge(ev);
          break;
        }
        Request r = queued_.take_front(old);
        r.start = ev.sector;
        r.bytes += ev.bytes;
        queued_.put(k, std::move(r));
        break;
      }
      case kSplit:
        split(ev, k);
        break;
      case kRemap:
        remap(ev);
        break;
      case kIssue:
        issue(ev, k, place);
        break;
      case kRequeue:
        requeue(ev, k);
        break;
      case kComplete:
        complete(ev, k, place);
        break;
      default:
        break;  // plugs, sleeps, bounces, driver data: nothing an IO records
    }
  }

  void finish() {
    // Traces without D or C events: the IOs only their end can tell.
    const bool issued = census_.has(kIssue), completed = census_.has(kComplete);
    if (issued && !completed) {
      in_flight_.take_if([this](Key k, const Request& r) {
        hold(io_of(r, k.dev, r.place));
        return true;
      });
    } else if (!issued && !completed) {
      queued_.take_if([this](Key k, const Request& r) {
        if (r.queue_ns == format::kNoTime) return false;  // a G alone: no time to give it
        format::Io io = io_of(r, k.dev, r.place);
        io.issue_ns = std::exchange(io.queue_ns, format::kNoTime);
        hold(io);
        return true;
      });
    }
    const uint64_t held = held_ios_;
    if (held_) held_->drain([this](const format::Io& io) { out_.append(io); });
    report_.ios += held;

    auto note = [this](uint64_t n, const char* what) {
      if (n) report_.notes.push_back(std::to_string(n) + " " + what);
    };
    if (auto kinds = census_.kinds_note()) report_.notes.push_back(*kinds);
    if (held && !issued) {
      note(held, "IOs have no issue time: each has its Q, else its C, as issue time, a later C as completion");
      out_.set_metadata("import.issue_times", "Q, else C: the input has no D events");
    } else if (held) {
      note(held, "IOs have no completion time");
    }
    note(unmatched_completions_,
         "C events matched no D (issued before the trace started, or a bio-based device)");
    note(flush_sequence_ends_,
         "C events of no bytes ended a preflush or FUA write's flush sequence (its second completion: not an IO)");
    note(unmatched_merges_, "merge (M/F) events matched no queued request");
    note(unqueued_issues_, "D events had no Q, G or I (queue time, pid and process name unknown)");
    note(in_flight_.size(), "requests were issued but not completed when the trace ended");
    note(queued_.size() + requeued_.size(), "queued bios or requests were never issued");
    note(requeues_, "requeues (R): those requests were issued again");
    note(remaps_followed_, "remap (A) events moved a queued bio to the device below");
    note(passthrough_, "passthrough (PC) events skipped");
    if (auto clocks = census_.clock_note()) report_.notes.push_back(*clocks);
  }

  int64_t oldest_outstanding_ns(int64_t floor_ns) const {
    int64_t oldest = format::kNoTime;
    auto visit = [&](const Request& r) {
      const int64_t t = r.queue_ns != format::kNoTime ? r.queue_ns : r.issue_ns;
      if (t != format::kNoTime && t >= floor_ns && (oldest == format::kNoTime || t < oldest)) oldest = t;
    };
    queued_.for_each(visit);
    requeued_.for_each(visit);
    in_flight_.for_each(visit);
    return oldest;
  }

  uint64_t unmatched_completions() const { return unmatched_completions_; }
  uint64_t unmatched_completion_bytes() const { return unmatched_completion_bytes_; }

  uint64_t write_outstanding(int64_t before_ns) {
    uint64_t written = 0;
    in_flight_.take_if([&](Key k, const Request& r) {
      if (r.issue_ns >= before_ns) return false;
      out_.append(io_of(r, k.dev, r.place));
      ++written;
      return true;
    });
    const auto old = [&](Key, const Request& r) {
      const int64_t t = r.queue_ns != format::kNoTime ? r.queue_ns : r.issue_ns;
      return t < before_ns;
    };
    queued_.take_if(old);
    requeued_.take_if(old);
    report_.ios += written;
    return written;
  }

 private:
  Request submitted(const TraceEvent& ev, int64_t queue_ns, const EventPlace& place) {
    Request r;
    r.start = ev.sector;
    r.bytes = ev.bytes;
    r.queue_ns = queue_ns;
    r.pid = ev.pid;
    if (auto it = comms_.find(ev.pid); it != comms_.end()) r.comm = it->second;
    r.cgroup = ev.cgroup;
    r.cpu = static_cast<int32_t>(ev.cpu);
    set_op(r, ev);  // until a D says how it was issued
    r.empty_preflush = ev.bytes == 0 && (ev.categories() & category::kFlush) && (ev.categories() & category::kWrite);
    r.place = place;
    return r;
  }

  // The bytes of an issued request not completed yet.
  static uint64_t left(const Request& r) { return r.bytes - r.completed; }

  static void set_op(Request& r, const TraceEvent& ev) {
    r.op = op_of(ev);
    r.flags = flags_of(ev.categories(), r.op);
  }

  void unmatched_merge(const TraceEvent&) {
    ++unmatched_merges_;
    ++report_.skipped;
  }

  void split(const TraceEvent& ev, Key k) {
    Request* r = queued_.back(k);
    if (!r || r->bytes <= ev.bytes) return;
    const uint64_t second = ev.split_sector;
    Request rest = *r;
    rest.start = second;
    rest.bytes = r->bytes - ev.bytes;
    r->bytes = ev.bytes;
    queued_.put({ev.dev, second}, std::move(rest));
  }

  void remap(const TraceEvent& ev) {
    const Key from{ev.remap_from_dev, ev.remap_from_sector};
    if (!queued_.back(from)) return;  // the upper device was not traced
    Request r = queued_.take_back(from);
    r.start = ev.sector;
    r.remapped = true;
    queued_.put({ev.remap_to_dev, ev.sector}, std::move(r));
    ++remaps_followed_;
  }

  void issue(const TraceEvent& ev, Key k, const EventPlace& place) {
    if (held_) {  // the trace has D events after all: the Cs held before the first matched none
      unmatched_completions_ += held_ios_;
      report_.skipped += held_ios_;
      held_.reset();
      held_ios_ = 0;
    }
    Request r;
    // A flush request (a flush without a write: REQ_OP_FLUSH, kernels since
    // 4.8) is the flush machinery's own, not the empty preflush write queued
    // at the same place: that one completes without being issued.
    const bool flush_request =
        ev.bytes == 0 && (ev.categories() & category::kFlush) && !(ev.categories() & category::kWrite);
    // A requeued request is issued again before anything queued behind it:
    // in the queue, a requeued flush request would stand in the place of the
    // fsyncs' empty writes queued at sector 0, which complete without issue.
    // An fsync's empty write is never issued: a request issued at sector 0
    // is not the one queued there (unless it is an empty write itself), nor
    // is a flush request the write or discard queued at sector 0.
    const auto issued_as = [&](const Request& q) {
      return flush_request ? !q.empty_preflush && q.bytes == 0 : !q.empty_preflush || ev.bytes == 0;
    };
    if (Request* q = requeued_.front(k); q && (q->op == format::Op::kFlush) == flush_request) {
      r = requeued_.take_front(k);
    } else if (Request* q = queued_.first(k, issued_as)) {
      r = queued_.take(k, q);
      r.remapped = false;
    } else {
      r.start = ev.sector;
      ++unqueued_issues_;
    }
    r.bytes = ev.bytes;
    r.issue_ns = static_cast<int64_t>(ev.time);
    set_op(r, ev);
    r.completed = 0;
    r.place = place;
    in_flight_.put(k, std::move(r));
  }

  // The request sent back is one of the R's kind: at sector 0 a flush
  // request and a discard or write of sector 0 may both be in flight, and a
  // drive that cannot queue one beside the other (SATA: neither flushes nor
  // TRIM are NCQ commands) requeues the one issued last.
  void requeue(const TraceEvent& ev, Key k) {
    const format::Op op = op_of(ev);
    // Of two requests of the op in flight from one place, the one of the R's length.
    Request* r = in_flight_.first(k, [&](const Request& q) { return q.op == op && left(q) == ev.bytes; });
    if (!r) r = in_flight_.first(k, [op](const Request& q) { return q.op == op; });
    if (!r) return;
    Request back = in_flight_.take(k, r);
    back.issue_ns = format::kNoTime;
    requeued_.put(k, std::move(back));
    ++requeues_;
  }

  void complete(const TraceEvent& ev, Key k, const EventPlace& place) {
    // At sector 0 an fsync's empty write (never issued) completes where a
    // flush request, and a write or discard of sector 0, may be in flight:
    // a completion is that of a request of its kind.
    const bool empty_write = ev.bytes == 0 && (ev.categories() & category::kWrite);
    const bool flush = ev.bytes == 0 && (ev.categories() & category::kFlush) && !empty_write;
    // An empty write in flight was issued: a flush request as kernels before
    // 4.8 made them (a write of no data with a preflush), completed as one.
    const auto of_kind = [&](const Request& q) {
      if (flush) return q.op == format::Op::kFlush;
      if (empty_write) return q.bytes == 0 && (q.op != format::Op::kFlush || q.empty_preflush);
      return q.op != format::Op::kFlush;
    };
    // A read and a discard, or two writes, may be in flight from the same
    // sector: the C of each is its own (its bytes taken from the other, they
    // would have read as a partial completion of it, whose rest never
    // comes). The same op with as many bytes left first, then the same op,
    // then any request of the kind (a trace whose C events say less than
    // its Ds).
    const format::Op op = op_of(ev);
    Request* r = in_flight_.first(k, [&](const Request& q) { return of_kind(q) && q.op == op && left(q) == ev.bytes; });
    if (!r) r = in_flight_.first(k, [&](const Request& q) { return of_kind(q) && q.op == op; });
    if (!r) r = in_flight_.first(k, of_kind);
    if (!r) {
      // A bio-based device (dm, md) completes bios it never issued as
      // requests: forget the bio, so its queue does not grow without end.
      std::optional<Request> bio;
      if (!empty_write) {
        if (queued_.front(k)) bio = queued_.take_front(k);
      } else if (Request* e = queued_.first(k, [](const Request& q) { return q.empty_preflush; })) {
        bio = queued_.take(k, e);
      }
      if (!census_.has(kIssue)) return hold_undispatched(bio, ev, place);
      if (bio && bio->empty_preflush && bio->queue_ns != format::kNoTime) return complete_unissued(*bio, ev, place);
      if (!bio && ev.bytes == 0 && (ev.categories() & category::kWrite)) {
        // Without queue events (blktrace -a issue,complete), an fsync's empty
        // write shows only as the C of a write of no data, at sector 0 (its
        // bio's).
        const bool queue_events = census_.has(kQueue) || census_.has(kGetrq) || census_.has(kInsert);
        if (!queue_events && ev.sector == 0) {
          Request unqueued;
          unqueued.start = ev.sector;
          set_op(unqueued, ev);
          return complete_unissued(unqueued, ev, place);
        }
        // The flush machinery completes a write it sequenced (preflush or
        // FUA, on a drive with a write cache) twice: when its data is done
        // (the IO, written then) and, with no bytes, after the flush that
        // follows. The kernel counts the write once; so does the trace.
        ++flush_sequence_ends_;
        ++report_.skipped;
        return;
      }
      ++unmatched_completions_;
      unmatched_completion_bytes_ += ev.bytes;
      ++report_.skipped;
      return;
    }
    const int16_t err = static_cast<int16_t>(ev.error);
    if (err != 0) r->status = err > 0 ? -err : err;
    r->completed += ev.bytes;
    if (r->completed < r->bytes) {  // a partial completion: the rest continues after it
      Request rest = in_flight_.take(k, r);
      in_flight_.put({ev.dev, ev.sector + ev.bytes / kSector}, std::move(rest));
      return;
    }
    if (ev.sectorless) r->start = ev.sector;
    const Request done = in_flight_.take(k, r);
    format::Io io = io_of(done, ev.dev, place);
    io.complete_ns = static_cast<int64_t>(ev.time);
    out_.append(io);
    ++report_.ios;
  }

  // An empty preflush write completed by the flush machinery, never issued:
  // its issue time is its queue time (as the eBPF back end records it), or
  // its completion time when it was not seen queued.
  void complete_unissued(Request r, const TraceEvent& ev, const EventPlace& place) {
    r.issue_ns = r.queue_ns != format::kNoTime ? r.queue_ns : static_cast<int64_t>(ev.time);
    r.op = format::Op::kWrite;
    r.flags |= format::flag::kPreflush;
    const int16_t err = static_cast<int16_t>(ev.error);
    r.status = err > 0 ? -err : err;
    format::Io io = io_of(r, ev.dev, place);
    io.complete_ns = static_cast<int64_t>(ev.time);
    out_.append(io);
    ++report_.ios;
  }

  // A C with no D before it, in a trace that may have none: the IO of the
  // queued `bio` (or of the C alone), held until a D shows up or the trace
  // ends. The C gives what completed and how; the bio, who asked when.
  void hold_undispatched(const std::optional<Request>& bio, const TraceEvent& ev, const EventPlace& place) {
    Request r = bio.value_or(Request{});
    r.start = ev.sector;
    r.bytes = ev.bytes;
    set_op(r, ev);
    const int16_t err = static_cast<int16_t>(ev.error);
    r.status = err > 0 ? -err : err;
    format::Io io = io_of(r, ev.dev, place);
    io.queue_ns = format::kNoTime;  // each time is written once: the queue time stands as issue time
    if (r.queue_ns == format::kNoTime) {
      io.issue_ns = static_cast<int64_t>(ev.time);
    } else {
      io.issue_ns = r.queue_ns;
      io.complete_ns = static_cast<int64_t>(ev.time);
    }
    hold(io);
  }

  void hold(const format::Io& io) {
    if (!held_) held_.emplace(options_.sort_run_ios, options_.spill_dir);
    held_->add(io);
    ++held_ios_;
  }

  // The IO of request `r` on `dev`, without its completion; its process name
  // points into `r` or the names known.
  format::Io io_of(const Request& r, uint32_t dev, const EventPlace& place) {
    format::Io io;
    if (r.start > UINT64_MAX / kSector || r.start * kSector + r.bytes < r.start * kSector)
      throw place.error("sector " + std::to_string(r.start) + " is out of range");
    io.offset = r.start * kSector;
    io.length = r.bytes;
    io.queue_ns = r.queue_ns;
    io.issue_ns = r.issue_ns;
    io.device = device(dev);
    io.op = r.op;
    io.flags = r.flags;
    io.status = r.status;
    io.pid = r.pid;
    io.comm = r.comm;
    if (io.comm.empty() && r.pid != 0)
      if (auto it = comms_.find(r.pid); it != comms_.end()) io.comm = it->second;
    io.cgroup = r.cgroup;
    io.cpu = r.cpu;
    return io;
  }

  uint32_t device(uint32_t dev) {
    auto [it, added] = devices_.try_emplace(dev, 0);
    if (added) {
      v1::Device d;
      d.set_major(major_of(dev));
      d.set_minor(minor_of(dev));
      d.set_name(std::to_string(d.major()) + "," + std::to_string(d.minor()));
      it->second = out_.add_device(d);
    }
    return it->second;
  }

  IoOutput& out_;
  ImportReport& report_;
  const ImportOptions options_;
  EventCensus census_;
  Requests queued_;     // Q/G/I seen, not yet issued
  Requests requeued_;   // issued, then requeued (R): to be issued again
  Requests in_flight_;  // issued, not yet completed
  std::unordered_map<uint32_t, std::string> comms_;  // pid -> process name, from notify records
  std::unordered_map<uint32_t, uint32_t> devices_;   // dev_t -> device index
  uint64_t unmatched_completions_ = 0;
  uint64_t unmatched_completion_bytes_ = 0;
  uint64_t flush_sequence_ends_ = 0;
  uint64_t unmatched_merges_ = 0;
  uint64_t unqueued_issues_ = 0;
  uint64_t requeues_ = 0;
  uint64_t remaps_followed_ = 0;
  uint64_t passthrough_ = 0;
  std::optional<SortedSpill> held_;  // IOs the end of the trace decides on
  uint64_t held_ios_ = 0;
};

format::InputError EventPlace::error(const std::string& why) const {
  return is_line ? format::error_at_line(*file, at, why) : format::error_at_byte(*file, at, why);
}

BlockIoAssembler::BlockIoAssembler(IoOutput& out, ImportReport& report, const ImportOptions& options)
    : impl_(std::make_unique<Impl>(out, report, options)) {}
BlockIoAssembler::~BlockIoAssembler() = default;

void BlockIoAssembler::on_event(const TraceEvent& ev, const EventPlace& place) { impl_->on_event(ev, place); }
void BlockIoAssembler::finish() { impl_->finish(); }
int64_t BlockIoAssembler::oldest_outstanding_ns(int64_t floor_ns) const {
  return impl_->oldest_outstanding_ns(floor_ns);
}
uint64_t BlockIoAssembler::write_outstanding(int64_t before_ns) { return impl_->write_outstanding(before_ns); }
uint64_t BlockIoAssembler::unmatched_completions() const { return impl_->unmatched_completions(); }
uint64_t BlockIoAssembler::unmatched_completion_bytes() const { return impl_->unmatched_completion_bytes(); }

}  // namespace iotape::blockevents

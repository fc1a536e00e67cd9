#include "traces/import/blktrace.h"

#include <cstring>
#include <deque>
#include <map>
#include <queue>
#include <string_view>
#include <unordered_map>

#include "traces/error.h"

namespace iotape {
namespace {

constexpr uint32_t kMagic = 0x65617400;  // low byte: format version
constexpr uint32_t kVersion = 0x07;
constexpr size_t kRecordSize = 48;
constexpr uint32_t kCgroupFlag = 1u << 8;  // a u64 cgroup id leads the payload
constexpr uint64_t kSector = 512;

enum Action : uint32_t {
  kQueue = 1,
  kBackmerge = 2,
  kFrontmerge = 3,
  kGetrq = 4,
  kRequeue = 6,
  kIssue = 7,
  kComplete = 8,
  kInsert = 12,
  kSplit = 13,
  kRemap = 15,
};
constexpr uint32_t kNotifyProcessName = 0;

// Category bits (the high 16 bits of the action).
namespace category {
constexpr uint32_t kWrite = 1u << 1;
constexpr uint32_t kFlush = 1u << 2;
constexpr uint32_t kSync = 1u << 3;
constexpr uint32_t kPassthrough = 1u << 9;
constexpr uint32_t kNotify = 1u << 10;
constexpr uint32_t kAhead = 1u << 11;
constexpr uint32_t kMeta = 1u << 12;
constexpr uint32_t kDiscard = 1u << 13;
constexpr uint32_t kFua = 1u << 15;
}  // namespace category

uint16_t bswap(uint16_t v) { return __builtin_bswap16(v); }
uint32_t bswap(uint32_t v) { return __builtin_bswap32(v); }
uint64_t bswap(uint64_t v) { return __builtin_bswap64(v); }

// Remap and split payloads are big-endian whatever the record's byte order.
template <typename T>
T big_endian(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return std::endian::native == std::endian::big ? v : bswap(v);
}

struct Event {
  uint64_t time = 0;
  uint64_t sector = 0;
  uint32_t bytes = 0;
  uint32_t action = 0;
  uint32_t pid = 0;
  uint32_t dev = 0;
  uint32_t cpu = 0;
  uint16_t error = 0;
  uint64_t cgroup = 0;
  std::string_view payload;  // after the cgroup id
  uint64_t at = 0;           // byte offset of the record in its input

  uint32_t what() const { return action & 0xff; }
  uint32_t categories() const { return action >> 16; }
};

// The records of one input, in file order.
class EventStream {
 public:
  explicit EventStream(const Input& in) : in_(in) {}

  // Reads the next event; false at the end of the input.
  bool next() {
    char h[kRecordSize];
    const size_t got = read_bytes(*in_.stream, h, sizeof h);
    if (got == 0) return false;
    if (got < sizeof h)
      throw error_at_byte(in_.name, pos_, "truncated record: " + std::to_string(got) + " of 48 bytes");
    if (pos_ == 0) {
      const uint32_t raw = get<uint32_t>(h);
      swap_ = (raw & 0xffffff00) != kMagic && (bswap(raw) & 0xffffff00) == kMagic;
    }
    const uint32_t magic = get<uint32_t>(h);
    if ((magic & 0xffffff00) != kMagic)
      throw error_at_byte(in_.name, pos_, "bad magic: not a blktrace record");
    if ((magic & 0xff) != kVersion)
      throw error_at_byte(in_.name, pos_, "unsupported blktrace version " + std::to_string(magic & 0xff));
    ev_.at = pos_;
    ev_.time = get<uint64_t>(h + 8);
    ev_.sector = get<uint64_t>(h + 16);
    ev_.bytes = get<uint32_t>(h + 24);
    ev_.action = get<uint32_t>(h + 28);
    ev_.pid = get<uint32_t>(h + 32);
    ev_.dev = get<uint32_t>(h + 36);
    ev_.cpu = get<uint32_t>(h + 40);
    ev_.error = get<uint16_t>(h + 44);
    const uint16_t pdu_len = get<uint16_t>(h + 46);
    if (ev_.time > static_cast<uint64_t>(INT64_MAX))
      throw error_at_byte(in_.name, pos_, "timestamp " + std::to_string(ev_.time) + " is out of range");
    pdu_.resize(pdu_len);
    if (read_bytes(*in_.stream, pdu_.data(), pdu_len) < pdu_len)
      throw error_at_byte(in_.name, pos_,
                          "truncated record: payload of " + std::to_string(pdu_len) + " bytes cut short");
    std::string_view payload = pdu_;
    ev_.cgroup = 0;
    if (ev_.action & kCgroupFlag) {
      if (payload.size() < sizeof(uint64_t))
        throw error_at_byte(in_.name, pos_, "cgroup flag set but the payload has no cgroup id");
      ev_.cgroup = get<uint64_t>(payload.data());
      payload.remove_prefix(sizeof(uint64_t));
    }
    ev_.payload = payload;
    pos_ += sizeof h + pdu_len;
    return true;
  }

  const Event& event() const { return ev_; }
  const std::string& name() const { return in_.name; }

 private:
  template <typename T>
  T get(const char* p) const {
    T v;
    std::memcpy(&v, p, sizeof v);
    return swap_ ? bswap(v) : v;
  }

  Input in_;
  bool swap_ = false;
  uint64_t pos_ = 0;
  Event ev_;
  std::string pdu_;
};

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
  int64_t queue_ns = kNoTime;
  int64_t issue_ns = kNoTime;
  int32_t status = 0;
  uint32_t pid = 0;
  std::string comm;
  uint64_t cgroup = 0;
  int32_t cpu = -1;
  Op op = Op::kRead;
  uint32_t flags = 0;
  bool remapped = false;  // moved here by an A event, not yet queued on this device
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

  uint64_t size() const {
    uint64_t n = 0;
    for (const auto& [k, rs] : map_) n += rs.size();
    return n;
  }

 private:
  Request take(Key k, bool front) {
    auto it = map_.find(k);
    Request r = std::move(front ? it->second.front() : it->second.back());
    if (front)
      it->second.pop_front();
    else
      it->second.pop_back();
    if (it->second.empty()) map_.erase(it);
    return r;
  }

  std::map<Key, std::deque<Request>> map_;
};

Op op_of(uint32_t c, uint32_t bytes) {
  if (c & category::kDiscard) return Op::kDiscard;
  if ((c & category::kFlush) && bytes == 0) return Op::kFlush;
  return (c & category::kWrite) ? Op::kWrite : Op::kRead;
}

uint32_t flags_of(uint32_t c, Op op) {
  uint32_t f = 0;
  if (c & category::kSync) f |= flag::kSync;
  if (c & category::kFua) f |= flag::kFua;
  if ((c & category::kFlush) && op != Op::kFlush) f |= flag::kPreflush;
  if (c & category::kMeta) f |= flag::kMeta;
  if (c & category::kAhead) f |= flag::kReadahead;
  return f;
}

// A process name from a notify payload: up to the NUL, printable ASCII only.
std::string process_name(std::string_view payload) {
  std::string s(payload.substr(0, payload.find('\0')));
  for (char& c : s)
    if (c < 0x20 || c > 0x7e) c = '?';
  return s;
}

// Folds the merged event stream into IOs.
class Folder {
 public:
  Folder(TraceWriter& out, ImportReport& report) : out_(out), report_(report) {}

  void on_event(const Event& ev, const std::string& file) {
    const uint32_t c = ev.categories();
    if (c & category::kNotify) {
      if (ev.what() == kNotifyProcessName) comms_[ev.pid] = process_name(ev.payload);
      return;
    }
    if (c & category::kPassthrough) {
      ++passthrough_;
      ++report_.skipped;
      return;
    }
    const Key k{ev.dev, ev.sector};
    switch (ev.what()) {
      case kQueue:
        if (Request* r = queued_.back(k); r && r->remapped) {
          r->remapped = false;  // the same bio, now queued here: keep its first queue time
          return;
        }
        queued_.put(k, submitted(ev, static_cast<int64_t>(ev.time)));
        break;
      case kGetrq:
        if (!queued_.front(k)) queued_.put(k, submitted(ev, kNoTime));
        break;
      case kInsert:
        if (Request* r = queued_.front(k))
          r->queue_ns = r->queue_ns == kNoTime ? static_cast<int64_t>(ev.time) : r->queue_ns;
        else
          queued_.put(k, submitted(ev, static_cast<int64_t>(ev.time)));
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
        split(ev, k, file);
        break;
      case kRemap:
        remap(ev, file);
        break;
      case kIssue:
        issue(ev, k);
        break;
      case kRequeue:
        if (in_flight_.front(k)) {
          Request r = in_flight_.take_front(k);
          r.issue_ns = kNoTime;
          queued_.put(k, std::move(r));
          ++requeues_;
        }
        break;
      case kComplete:
        complete(ev, k, file);
        break;
      default:
        break;  // plugs, sleeps, bounces, driver data: nothing an IO records
    }
  }

  void finish() {
    auto note = [this](uint64_t n, const char* what) {
      if (n) report_.notes.push_back(std::to_string(n) + " " + what);
    };
    note(unmatched_completions_,
         "C events matched no D (issued before the trace started, or a bio-based device)");
    note(unmatched_merges_, "merge (M/F) events matched no queued request");
    note(unqueued_issues_, "D events had no Q, G or I (queue time, pid and process name unknown)");
    note(in_flight_.size(), "requests were issued but not completed when the trace ended");
    note(queued_.size(), "queued bios or requests were never issued");
    note(requeues_, "requeues (R): those requests were issued again");
    note(remaps_followed_, "remap (A) events moved a queued bio to the device below");
    note(passthrough_, "passthrough (PC) events skipped");
  }

 private:
  Request submitted(const Event& ev, int64_t queue_ns) {
    Request r;
    r.start = ev.sector;
    r.bytes = ev.bytes;
    r.queue_ns = queue_ns;
    r.pid = ev.pid;
    if (auto it = comms_.find(ev.pid); it != comms_.end()) r.comm = it->second;
    r.cgroup = ev.cgroup;
    r.cpu = static_cast<int32_t>(ev.cpu);
    return r;
  }

  void unmatched_merge(const Event&) {
    ++unmatched_merges_;
    ++report_.skipped;
  }

  void split(const Event& ev, Key k, const std::string& file) {
    if (ev.payload.size() < sizeof(uint64_t))
      throw error_at_byte(file, ev.at, "split event without the new sector in its payload");
    Request* r = queued_.back(k);
    if (!r || r->bytes <= ev.bytes) return;
    const uint64_t second = big_endian<uint64_t>(ev.payload.data());
    Request rest = *r;
    rest.start = second;
    rest.bytes = r->bytes - ev.bytes;
    r->bytes = ev.bytes;
    queued_.put({ev.dev, second}, std::move(rest));
  }

  void remap(const Event& ev, const std::string& file) {
    if (ev.payload.size() < 16) throw error_at_byte(file, ev.at, "remap event with a short payload");
    const uint32_t from_dev = big_endian<uint32_t>(ev.payload.data());
    const uint32_t to_dev = big_endian<uint32_t>(ev.payload.data() + 4);
    const uint64_t from_sector = big_endian<uint64_t>(ev.payload.data() + 8);
    const Key from{from_dev, from_sector};
    if (!queued_.back(from)) return;  // the upper device was not traced
    Request r = queued_.take_back(from);
    r.start = ev.sector;
    r.remapped = true;
    queued_.put({to_dev, ev.sector}, std::move(r));
    ++remaps_followed_;
  }

  void issue(const Event& ev, Key k) {
    Request r;
    if (queued_.front(k)) {
      r = queued_.take_front(k);
      r.remapped = false;
    } else {
      r.start = ev.sector;
      ++unqueued_issues_;
    }
    r.bytes = ev.bytes;
    r.issue_ns = static_cast<int64_t>(ev.time);
    r.op = op_of(ev.categories(), ev.bytes);
    r.flags = flags_of(ev.categories(), r.op);
    r.completed = 0;
    in_flight_.put(k, std::move(r));
  }

  void complete(const Event& ev, Key k, const std::string& file) {
    Request* r = in_flight_.front(k);
    if (!r) {
      // A bio-based device (dm, md) completes bios it never issued as
      // requests: forget the bio, so its queue does not grow without end.
      if (queued_.front(k)) queued_.take_front(k);
      ++unmatched_completions_;
      ++report_.skipped;
      return;
    }
    const int16_t err = static_cast<int16_t>(ev.error);
    if (err != 0) r->status = err > 0 ? -err : err;
    r->completed += ev.bytes;
    if (r->completed < r->bytes) {  // a partial completion: the rest continues after it
      Request rest = in_flight_.take_front(k);
      in_flight_.put({ev.dev, ev.sector + ev.bytes / kSector}, std::move(rest));
      return;
    }
    emit(in_flight_.take_front(k), ev, file);
  }

  void emit(const Request& r, const Event& ev, const std::string& file) {
    Io io;
    if (r.start > UINT64_MAX / kSector || r.start * kSector + r.bytes < r.start * kSector)
      throw error_at_byte(file, ev.at, "sector " + std::to_string(r.start) + " is out of range");
    io.offset = r.start * kSector;
    io.length = r.bytes;
    io.queue_ns = r.queue_ns;
    io.issue_ns = r.issue_ns;
    io.complete_ns = static_cast<int64_t>(ev.time);
    io.device = device(ev.dev);
    io.op = r.op;
    io.flags = r.flags;
    io.status = r.status;
    io.pid = r.pid;
    io.comm = r.comm;
    if (io.comm.empty() && r.pid != 0)
      if (auto it = comms_.find(r.pid); it != comms_.end()) io.comm = it->second;
    io.cgroup = r.cgroup;
    io.cpu = r.cpu;
    out_.append(io);
    ++report_.ios;
  }

  uint32_t device(uint32_t dev) {
    auto [it, added] = devices_.try_emplace(dev, 0);
    if (added) {
      v1::Device d;
      d.set_major(dev >> 20);
      d.set_minor(dev & 0xfffff);
      d.set_name(std::to_string(d.major()) + "," + std::to_string(d.minor()));
      it->second = out_.add_device(d);
    }
    return it->second;
  }

  TraceWriter& out_;
  ImportReport& report_;
  Requests queued_;     // Q/G/I seen, not yet issued
  Requests in_flight_;  // issued, not yet completed
  std::unordered_map<uint32_t, std::string> comms_;  // pid -> process name, from notify records
  std::unordered_map<uint32_t, uint32_t> devices_;   // dev_t -> device index
  uint64_t unmatched_completions_ = 0;
  uint64_t unmatched_merges_ = 0;
  uint64_t unqueued_issues_ = 0;
  uint64_t requeues_ = 0;
  uint64_t remaps_followed_ = 0;
  uint64_t passthrough_ = 0;
};

}  // namespace

ImportReport import_blktrace(std::span<const Input> inputs, TraceWriter& out) {
  if (inputs.empty()) throw TraceError("no blktrace inputs");
  std::vector<EventStream> streams(inputs.begin(), inputs.end());
  // Merge the inputs by event time; within one input, file order stands.
  auto later = [&streams](size_t a, size_t b) {
    const uint64_t ta = streams[a].event().time, tb = streams[b].event().time;
    return ta != tb ? ta > tb : a > b;
  };
  std::priority_queue<size_t, std::vector<size_t>, decltype(later)> heads(later);
  for (size_t i = 0; i < streams.size(); ++i)
    if (streams[i].next()) heads.push(i);
  if (heads.empty())
    throw error_at_byte(inputs[0].name, 0,
                        inputs.size() == 1 ? "empty file: no blktrace events"
                                           : "no blktrace events in any input");

  ImportReport report;
  Folder folder(out, report);
  while (!heads.empty()) {
    const size_t i = heads.top();
    heads.pop();
    ++report.records;
    folder.on_event(streams[i].event(), streams[i].name());
    if (streams[i].next()) heads.push(i);
  }
  folder.finish();
  return report;
}

}  // namespace iotape

// The blktrace back end. blktrace's own relay files in debugfs are refused
// under kernel lockdown, so this uses the ftrace `blk` tracer: per-device
// trace/enable, current_tracer=blk, trace_clock=boot (the clock of the eBPF
// back end). Each CPU's ring buffer is read page by page from
// per_cpu/cpuN/trace_pipe_raw: the kernel only hands over pages, and the
// records in them are blktrace's own (struct blk_io_trace, its first 16
// bytes overlaid by ftrace's entry header; kernel/trace/blktrace.c builds the
// binary stream's records from them the same way). The CPUs' events are merged
// by time here and folded into IOs by the same code as `iotape import
// blktrace` (blockevents/), so capture and import reconstruct IOs alike:
// merges, splits, remaps, requeues, flushes, with nanosecond times.
//
// The records name the thread, not the process, and carry no process name:
// both are looked up in /proc while the thread lives, in the tracer's saved
// command lines and thread-to-process table after.
#include "capture/blktrace_backend.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "blockevents/block_io_assembler.h"
#include "blockevents/record_decoder.h"
#include "format/blktrace_layout.h"
#include "format/error.h"
#include "host/clocks.h"

namespace iotape::capture {
namespace {

const std::string kTracefs = "/sys/kernel/tracing";
constexpr uint64_t kDefaultBuffer = 16 << 20;        // all CPUs' ring buffers together
constexpr size_t kMaxThreads = 1 << 16;              // bound on the thread cache
constexpr int64_t kThreadCacheNs = 1'000'000'000;    // names change (exec, prctl): look again this often
// A request in flight this long had its completion lost (an overrun) or is
// stuck: it is written without completion and forgotten, so memory stays bounded.
constexpr int64_t kOutstandingLimitNs = 600'000'000'000;
constexpr uint32_t kNoDevice = UINT32_MAX;
constexpr int64_t kReadIntervalNs = 2'000'000;  // at most one read of the buffers this often
constexpr int64_t kMaxSlackNs = 50'000'000;     // the longest wait for an event stamped before it is written
constexpr int kDrainRounds = 100;               // reads of the buffers at the stop, a millisecond apart

// The ring buffer's page (events/header_page) and event header (events/header_event).
constexpr size_t kPageHeader = 16;          // u64 time stamp, u64 commit
constexpr uint64_t kCommitMask = (1u << 27) - 1;  // the commit's data length; flags above
constexpr uint32_t kTypePadding = 29, kTypeTimeExtend = 30, kTypeTimeStamp = 31;
// An ftrace blk entry: ftrace's 8-byte entry header and 8 unused bytes, then
// blk_io_trace from its sector on.
constexpr size_t kEntryOverlay = 16;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

void write_file(const std::string& path, const std::string& value) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) throw format::error_errno(path, "cannot open", errno);
  const ssize_t n = ::write(fd, value.data(), value.size());
  const int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(value.size())) throw format::error_errno(path, "cannot write '" + value + "'", err);
}

// The selected entry of a tracefs choice file: "[local] global boot" -> "local".
std::string selected(const std::string& choices) {
  const auto a = choices.find('['), b = choices.find(']');
  return a == std::string::npos || b == std::string::npos ? choices : choices.substr(a + 1, b - a - 1);
}

void ensure_tracefs() {
  struct stat st;
  if (::stat((kTracefs + "/trace_pipe").c_str(), &st) == 0) return;
  if (::mount("nodev", kTracefs.c_str(), "tracefs", 0, nullptr) != 0)
    throw format::error_errno(kTracefs, "cannot mount tracefs", errno);
}

// Sets a tracefs (or sysfs) file and puts the old value back on destruction.
class Setting {
 public:
  Setting(std::string path, const std::string& value, std::string restore)
      : path_(std::move(path)), restore_(std::move(restore)) {
    write_file(path_, value);
  }
  ~Setting() {
    try {
      write_file(path_, restore_);
    } catch (const std::exception&) {
      // Nothing better to do while tearing down; the next start reports it.
    }
  }
  Setting(const Setting&) = delete;
  Setting& operator=(const Setting&) = delete;

 private:
  std::string path_, restore_;
};

// An open file descriptor, closed on destruction.
struct HeldDevice {
  explicit HeldDevice(int f) : fd(f) {}
  ~HeldDevice() { ::close(fd); }
  HeldDevice(const HeldDevice&) = delete;
  HeldDevice& operator=(const HeldDevice&) = delete;
  int fd;
};

// Keeps the tracer's thread-to-process table (saved_tgids) filled while it
// lives: the blk tracer alone does not; a trace instance of its own with
// record-tgid and one rare event (process exit) starts the recording for all
// of tracefs, and its buffer keeps the main one free of those events.
class TgidRecording {
 public:
  TgidRecording() : dir_(kTracefs + "/instances/iotape-tgid-" + std::to_string(::getpid())) {
    if (::mkdir(dir_.c_str(), 0700) != 0) throw format::error_errno(dir_, "cannot make a trace instance", errno);
    try {
      write_file(dir_ + "/options/record-tgid", "1");
      write_file(dir_ + "/events/sched/sched_process_exit/enable", "1");
    } catch (...) {
      ::rmdir(dir_.c_str());
      throw;
    }
  }
  ~TgidRecording() {
    try {
      write_file(dir_ + "/events/sched/sched_process_exit/enable", "0");
    } catch (const std::exception&) {
      // rmdir below fails then, and the next start reports the busy tracefs.
    }
    ::rmdir(dir_.c_str());
  }
  TgidRecording(const TgidRecording&) = delete;
  TgidRecording& operator=(const TgidRecording&) = delete;

 private:
  std::string dir_;
};

// A thread's process id and name.
struct Thread {
  uint32_t tgid = 0;
  std::string comm;
};

// Tgid and name of a live thread from /proc/TID/status; false if it is gone.
bool proc_thread(uint32_t tid, Thread& t) {
  const int fd = ::open(("/proc/" + std::to_string(tid) + "/status").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[1024];  // Name and Tgid are in its first lines
  const ssize_t n = ::read(fd, buf, sizeof buf);
  ::close(fd);
  if (n <= 0) return false;
  const std::string_view s(buf, static_cast<size_t>(n));
  auto field = [&s](std::string_view key) {
    const auto at = s.find(key);
    if (at == std::string_view::npos) return std::string_view();
    const auto start = at + key.size(), end = s.find('\n', start);
    return s.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
  };
  t.comm = field("Name:\t");
  const std::string_view tgid = field("\nTgid:\t");
  return std::from_chars(tgid.data(), tgid.data() + tgid.size(), t.tgid).ec == std::errc();
}

// TID of "iou-wrk-TID" or "iou-sqp-TID"; 0 for any other name.
uint32_t io_uring_owner(std::string_view comm) {
  uint32_t owner = 0;
  if (comm.starts_with("iou-wrk-") || comm.starts_with("iou-sqp-"))
    std::from_chars(comm.data() + 8, comm.data() + comm.size(), owner);
  return owner;
}

class BlktraceBackend final : public observer::Backend, private blockevents::IoOutput {
 public:
  explicit BlktraceBackend(const observer::BackendOptions& o) : opt_(o) {
    ensure_tracefs();
    const std::string tracer = read_file(kTracefs + "/current_tracer");
    if (tracer != "nop")
      throw format::TraceError("the ftrace tracer is busy (current_tracer is " + tracer + " in " + kTracefs +
                               "): another tool is tracing, or a recorder was killed; "
                               "`echo nop > " +
                               kTracefs + "/current_tracer` frees it");
    for (uint32_t i = 0; i < o.devices.size(); ++i)
      index_[format::blktrace::device(o.devices[i].major, o.devices[i].minor)] = i;
    change(kTracefs + "/trace_clock", "boot", selected(read_file(kTracefs + "/trace_clock")));
    change(kTracefs + "/options/blk_cgroup", "0");  // a cgroup id would lengthen the records
    tgids_ = std::make_unique<TgidRecording>();
    // Wake the reader when there are events (not when half the buffer is
    // full): a thread's process is looked up in /proc when its events are
    // read, and short-lived threads are gone soon.
    change(kTracefs + "/buffer_percent", "0");
    const long cpus = ::sysconf(_SC_NPROCESSORS_CONF);
    const uint64_t buffer = o.buffer_bytes ? o.buffer_bytes : kDefaultBuffer;
    change(kTracefs + "/buffer_size_kb", std::to_string(buffer / 1024 / static_cast<uint64_t>(cpus > 0 ? cpus : 1)));
    for (const auto& d : o.devices) {
      // Before 5.11 (bdget in the sysfs handler) the tracer finds a disk's
      // queue only while the disk is open: trace/enable says ENXIO on a
      // disk nobody holds. Hold it for the capture.
      if (const int fd = ::open(("/dev/" + d.name).c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC); fd >= 0)
        held_.push_back(std::make_unique<HeldDevice>(fd));
      change("/sys/block/" + d.name + "/trace/enable", "1", "0");
      // Only once enabled: the mask belongs to the device's tracing session.
      if (o.issue_complete_only) change("/sys/block/" + d.name + "/trace/act_mask", "issue,complete");
    }
    write_file(kTracefs + "/trace", "");  // start from an empty buffer
    overrun_base_ = overruns();
    // The tracer cannot change while its pipes are open (EBUSY): set it first, close the pipes first.
    tracer_ = std::make_unique<Setting>(kTracefs + "/current_tracer", "blk", "nop");
    for (long cpu = 0; cpu < cpus; ++cpu) {
      const std::string path = kTracefs + "/per_cpu/cpu" + std::to_string(cpu) + "/trace_pipe_raw";
      const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
      if (fd < 0) {
        if (errno == ENOENT) continue;  // not a possible CPU
        throw format::error_errno(path, "cannot open", errno);
      }
      cpus_.push_back(std::make_unique<CpuStream>(fd, path));
    }
  }

  ~BlktraceBackend() override {
    cpus_.clear();
    tracer_.reset();
    while (!settings_.empty()) settings_.pop_back();  // reverse order of setting up
  }

  v1::Source source() const override { return v1::SOURCE_BLKTRACE; }
  std::string detail() const override {
    return opt_.issue_complete_only ? "blktrace:ftrace-raw:issue,complete" : "blktrace:ftrace-raw";
  }

  std::map<std::string, std::string> metadata() const override {
    if (!opt_.issue_complete_only) return {{"capture.hooks", "ftrace blk tracer: all events"}};
    return {{"capture.hooks", "ftrace blk tracer: issue and complete events"},
            {"capture.unavailable", "queue time and submitter (--blk-events issue-complete)"}};
  }

  void poll(int timeout_ms, const observer::IoSink& sink) override {
    // Every wakeup costs: reading at most every kReadInterval lets the
    // events of that long come in one batch of pages.
    if (const int64_t since = host::boottime_ns() - last_read_; timeout_ms > 0 && since < kReadIntervalNs) {
      const timespec pause{0, kReadIntervalNs - since};
      if (::nanosleep(&pause, nullptr) != 0) return;  // a signal
    }
    std::vector<pollfd> fds;
    for (const auto& c : cpus_) fds.push_back({c->fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), timeout_ms) < 0) return;  // a signal
    sink_ = &sink;
    last_read_ = host::boottime_ns();
    read_and_merge(false);
    if (const int64_t now = host::boottime_ns(); now - last_expiry_ > kThreadCacheNs) {
      // Events waiting to be merged point into the cache: clear it only without them.
      const bool waiting = std::any_of(cpus_.begin(), cpus_.end(), [](const auto& c) { return !c->events.empty(); });
      if (threads_.size() > kMaxThreads && !waiting) threads_.clear();
      ++generation_;
      uncompleted_ += assembler_.write_outstanding(now - kOutstandingLimitNs);
      last_expiry_ = now;
    }
    sink_ = nullptr;
  }

  // Every IO still to come is a request the assembler holds, or its first
  // event is not merged yet: stamped after what read_and_merge passed on.
  int64_t oldest_outstanding_ns(int64_t floor_ns, const observer::IoSink& sink) override {
    sink_ = &sink;
    const int64_t merged = read_and_merge(false);
    sink_ = nullptr;
    const int64_t held = assembler_.oldest_outstanding_ns(floor_ns);
    return std::max(held == format::kNoTime ? merged : std::min(held, merged), floor_ns);
  }

  uint64_t dropped() override { return overruns() - overrun_base_ + left_unread_; }

  void finish(const observer::IoSink& sink) override {
    // The buffers stop taking events, then are read to their end: a read
    // may come back empty while a CPU's buffer still holds events (its
    // writer was moving to a new page), so each is read until the kernel
    // says it is empty, and what a CPU still holds then is counted lost.
    change(kTracefs + "/tracing_on", "0");
    sink_ = &sink;
    for (int round = 0; round < kDrainRounds && !drained(); ++round) {
      if (round) ::usleep(1000);
      for (auto& c : cpus_) read_pages(*c);
    }
    left_unread_ = unread_entries();
    read_and_merge(true);
    uncompleted_ += assembler_.write_outstanding(INT64_MAX);
    sink_ = nullptr;
  }

  uint64_t uncompleted() override { return uncompleted_; }
  uint64_t unmatched() override { return assembler_.unmatched_completions(); }
  uint64_t unmatched_bytes() override { return assembler_.unmatched_completion_bytes(); }

 private:
  // One CPU's ring buffer: its pipe, and the events read but not yet merged.
  struct CpuStream {
    CpuStream(int fd_, std::string name_) : fd(fd_), decoder(std::move(name_)) {}
    ~CpuStream() { ::close(fd); }
    int fd;
    blockevents::RecordDecoder decoder;  // names the pipe in errors
    std::vector<std::pair<blockevents::TraceEvent, uint64_t>> events;  // and each one's byte in the pipe
    size_t merged = 0;  // events[0, merged) are passed on: removed after each merge
    uint64_t offset = 0;  // bytes read from the pipe so far
    bool empty = false;   // the last read found the buffer empty
  };

  // Reads every CPU's pages, then passes the assembler, in time order, the
  // events no other CPU's can come before any more (all of them at the end):
  // those stamped slack_ns_ before the reads began (kStampSlackNs, longer
  // once an event came later than that, see add_entry).
  // Returns the time before which every event has been passed on.
  int64_t read_and_merge(bool all) {
    const int64_t read_start = host::boottime_ns();
    for (auto& c : cpus_) read_pages(*c);
    const uint64_t until = all ? UINT64_MAX : static_cast<uint64_t>(std::max<int64_t>(read_start - slack_ns_, 0));
    for (;;) {
      CpuStream* first = nullptr;
      for (auto& c : cpus_)
        if (c->merged < c->events.size() && c->events[c->merged].first.time <= until &&
            (!first || c->events[c->merged].first.time < first->events[first->merged].first.time))
          first = c.get();
      if (!first) break;
      const auto& [ev, at] = first->events[first->merged++];
      assembler_.on_event(ev, {&first->decoder.name(), at, false});
    }
    for (auto& c : cpus_) {
      c->events.erase(c->events.begin(), c->events.begin() + static_cast<ptrdiff_t>(c->merged));
      c->merged = 0;
    }
    merged_until_ = std::max(merged_until_, until);
    return static_cast<int64_t>(std::min<uint64_t>(until, INT64_MAX));
  }

  // Reads a CPU's pages until the kernel has none to give: EAGAIN (its
  // buffer is empty, c.empty) or an empty read (events are there, but not
  // readable yet: a writer is between pages; the next call reads them).
  void read_pages(CpuStream& c) {
    for (;;) {
      const ssize_t n = ::read(c.fd, page_.data(), page_.size());
      if (n < 0 && errno == EINTR) continue;
      c.empty = n < 0 && errno == EAGAIN;
      if (n <= 0) return;
      parse_page(c, static_cast<size_t>(n));
      c.offset += static_cast<uint64_t>(n);
    }
  }

  bool drained() const {
    return std::all_of(cpus_.begin(), cpus_.end(), [](const auto& c) { return c->empty; });
  }

  // The events of one page (kernel/trace/ring_buffer.c): a time stamp, the
  // length of the data, then events each with a 5-bit type or length and a
  // 27-bit time delta.
  void parse_page(CpuStream& c, size_t n) {
    if (n < kPageHeader) throw format::error_at_byte(c.decoder.name(), c.offset, "a ring buffer page cut short");
    const char* page = page_.data();
    uint64_t ts = load<uint64_t>(page);
    const size_t end = kPageHeader + std::min<size_t>(load<uint64_t>(page + 8) & kCommitMask, n - kPageHeader);
    size_t at = kPageHeader;
    auto fail = [&](const std::string& why) { return format::error_at_byte(c.decoder.name(), c.offset + at, why); };
    while (at + 4 <= end) {
      const uint32_t header = load<uint32_t>(page + at);
      const uint32_t type = header & 0x1f, delta = header >> 5;
      uint64_t array0 = at + 8 <= end ? load<uint32_t>(page + at + 4) : 0;
      if (type == kTypePadding) {
        if (delta == 0) break;  // the rest of the page is empty
        at += 4 + array0;
        continue;
      }
      if (type == kTypeTimeExtend || type == kTypeTimeStamp) {
        const uint64_t t = array0 << 27 | delta;
        ts = type == kTypeTimeExtend ? ts + t : t;
        at += 8;
        continue;
      }
      ts += delta;
      size_t data = at + 4, len = type * 4u;
      if (type == 0) {  // a long event: its length (and that word) in array[0]
        data = at + 8;
        len = array0 >= 4 ? array0 - 4 : 0;
      }
      if (data + len > end) throw fail("an event runs past the end of its ring buffer page");
      add_entry(c, page + data, len, ts, c.offset + data);
      at = data + len;
    }
  }

  // One ftrace blk entry as the blktrace record it stands for.
  void add_entry(CpuStream& c, const char* entry, size_t len, uint64_t ts, uint64_t at) {
    if (ts < merged_until_ && merged_until_ != UINT64_MAX) {
      // Written after events of other CPUs stamped later were passed on: its
      // CPU was held up between stamping and committing it (a VM's vCPU
      // preempted by its host). Wait longer for such events from now on.
      slack_ns_ = std::min<int64_t>(std::max<int64_t>(2 * slack_ns_, static_cast<int64_t>(merged_until_ - ts) * 2),
                                    kMaxSlackNs);
    }
    if (len < sizeof(format::blktrace::Record)) return;  // not the blk tracer's
    // Most events are plugs and unplugs, which make no IO: skip them, and
    // other devices' events, before decoding.
    switch (load<uint32_t>(entry + offsetof(format::blktrace::Record, action)) & 0xffff) {
      case format::blktrace::kPlug:
      case format::blktrace::kUnplug:
      case format::blktrace::kUnplugTimer:
      case format::blktrace::kSleeprq:
      case format::blktrace::kBounce:
        return;
      case format::blktrace::kRemap:
        break;  // may come from another device
      default:
        if (!index_.contains(load<uint32_t>(entry + offsetof(format::blktrace::Record, device)))) return;
    }
    const size_t size =
        sizeof(format::blktrace::Record) + load<uint16_t>(entry + offsetof(format::blktrace::Record, pdu_len));
    if (size > len) return;
    record_.resize(size);
    format::blktrace::Record head{};
    head.magic = format::blktrace::kMagic | format::blktrace::kVersion;
    head.time = ts;
    std::memcpy(record_.data(), &head, kEntryOverlay);
    std::memcpy(record_.data() + kEntryOverlay, entry + kEntryOverlay, size - kEntryOverlay);
    c.decoder.record_size(record_.data(), at);
    blockevents::TraceEvent ev = c.decoder.decode(record_.data(), at);
    // Q, G and I run in the submitter's context: they give the IO its
    // process, looked up now, while the thread most likely still lives. The
    // name points into the thread cache.
    if (const uint32_t w = ev.what();
        w == format::blktrace::kQueue || w == format::blktrace::kGetrq || w == format::blktrace::kInsert) {
      const Thread& t = thread(ev.pid);
      ev.pid = t.tgid;
      ev.comm = t.comm;
    }
    c.events.emplace_back(ev, at);
  }

  template <typename T>
  static T load(const char* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }

  // The process and name of thread `tid`, looked up again once a generation
  // (names change: exec, prctl); a thread gone since keeps what was known.
  const Thread& thread(uint32_t tid) {
    auto [it, added] = threads_.try_emplace(tid);
    if (!added && it->second.generation == generation_) return it->second.thread;
    it->second.generation = generation_;
    Thread& t = it->second.thread;
    if (Thread now; proc_thread(tid, now)) {
      t = std::move(now);
      return t;
    }
    if (!added) return t;
    // Gone already (a job's thread at its end, io_uring's workers with their
    // ring): the name and process the tracer saved; without a saved process,
    // that of the thread that made the ring.
    t.comm = saved_for("saved_cmdlines", tid);
    const std::string tgid = saved_for("saved_tgids", tid);
    if (std::from_chars(tgid.data(), tgid.data() + tgid.size(), t.tgid).ec == std::errc() && t.tgid) return t;
    t.tgid = tid;  // best guess: the thread of a single-threaded process
    if (const uint32_t owner = io_uring_owner(t.comm)) {
      Thread o;
      t.tgid = proc_thread(owner, o) ? o.tgid : owner;
    }
    return t;
  }

  // What the tracer saved for thread `tid` in `table` ("TID VALUE" lines:
  // saved_cmdlines, its name; saved_tgids, its process); "" if nothing.
  static std::string saved_for(const char* table, uint32_t tid) {
    std::ifstream in(kTracefs + "/" + table);
    const std::string prefix = std::to_string(tid) + " ";
    for (std::string line; std::getline(in, line);)
      if (line.starts_with(prefix)) return line.substr(prefix.size());
    return {};
  }

  // blockevents::IoOutput: the IOs the assembler completes, filtered as asked.
  uint32_t add_device(const v1::Device& d) override {
    const auto it = index_.find(format::blktrace::device(d.major(), d.minor()));
    return it == index_.end() ? kNoDevice : it->second;
  }
  void append(const format::Io& io) override {
    if (io.device == kNoDevice || !sink_) return;
    if (opt_.pid || !opt_.comm.empty()) {
      const bool anonymous = io.pid == 0;
      if (anonymous ? !opt_.keep_anonymous
                    : (opt_.pid && io.pid != opt_.pid) || (!opt_.comm.empty() && io.comm != opt_.comm))
        return;
    }
    (*sink_)(io);
  }
  void set_metadata(const std::string&, const std::string&) override {}  // only finish() sets any; never called

  // Sets a tracefs file for the capture's time; a file this kernel lacks is left alone.
  void change(const std::string& path, const std::string& value, std::string restore = "") {
    if (restore.empty()) {
      if (::access(path.c_str(), F_OK) != 0) return;
      restore = read_file(path);
    }
    if (restore == value) return;
    settings_.push_back(std::make_unique<Setting>(path, value, restore));
  }

  // Events the ftrace ring buffer overwrote or could not store.
  uint64_t overruns() const { return sum_of_stats({"overrun", "commit overrun", "dropped events"}); }

  // Events the CPUs' buffers hold and no read has taken, by the kernel's
  // own count (per_cpu/cpuN/stats, `entries`). Neither a read nor the
  // non-consuming iterator (per_cpu/cpuN/trace) always reaches them: on 6.12
  // under QEMU a CPU's read answered EAGAIN with 2 events kept, which both
  // read and iterator skipped (every event the kernel counted as read had
  // been parsed): two events of one IO, its issue and completion once, its
  // queue and request allocation another time.
  uint64_t unread_entries() const {
    uint64_t total = 0;
    for (const auto& c : cpus_) {
      const std::string& pipe = c->decoder.name();
      total += stats_in(pipe.substr(0, pipe.rfind('/')) + "/stats", {"entries"});
    }
    return total;
  }

  // The sum of the counters `keys` in one CPU's stats file ("KEY: N" lines).
  static uint64_t stats_in(const std::string& path, std::initializer_list<std::string_view> keys) {
    uint64_t total = 0;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) {
      const auto colon = line.find(':');
      if (colon != std::string::npos &&
          std::find(keys.begin(), keys.end(), std::string_view(line).substr(0, colon)) != keys.end())
        total += std::stoull(line.substr(colon + 1));
    }
    return total;
  }

  // The sum over the CPUs of counters in their per_cpu/cpuN/stats ("KEY: N" lines).
  static uint64_t sum_of_stats(std::initializer_list<std::string_view> keys) {
    uint64_t total = 0;
    for (long cpu = 0;; ++cpu) {
      const std::string path = kTracefs + "/per_cpu/cpu" + std::to_string(cpu) + "/stats";
      if (::access(path.c_str(), R_OK) != 0) break;
      total += stats_in(path, keys);
    }
    return total;
  }

  observer::BackendOptions opt_;
  std::unordered_map<uint32_t, uint32_t> index_;  // kernel dev_t -> index into opt_.devices
  // The traced disks, open (see the constructor): declared before the
  // settings, so closed after trace/enable is back to 0.
  std::vector<std::unique_ptr<HeldDevice>> held_;
  std::vector<std::unique_ptr<Setting>> settings_;
  std::unique_ptr<TgidRecording> tgids_;
  std::unique_ptr<Setting> tracer_;
  std::vector<std::unique_ptr<CpuStream>> cpus_;
  std::vector<char> page_ = std::vector<char>(1 << 20);  // a read returns one page (sub-buffer) at most
  std::string record_;
  blockevents::ImportReport report_;
  blockevents::BlockIoAssembler assembler_{*this, report_};
  const observer::IoSink* sink_ = nullptr;
  struct CachedThread {
    Thread thread;
    uint64_t generation = 0;
  };
  std::unordered_map<uint32_t, CachedThread> threads_;
  uint64_t generation_ = 1;
  int64_t last_expiry_ = 0;
  int64_t last_read_ = 0;
  uint64_t overrun_base_ = 0;
  uint64_t merged_until_ = 0;                       // every event stamped before it was passed on
  int64_t slack_ns_ = observer::kStampSlackNs;     // how long before a read its CPUs' events may still come
  uint64_t uncompleted_ = 0;
  uint64_t left_unread_ = 0;  // events the buffers still held when the capture stopped
};

}  // namespace

std::unique_ptr<observer::Backend> make_blktrace_backend(const observer::BackendOptions& options) {
  return std::make_unique<BlktraceBackend>(options);
}

}  // namespace iotape::capture

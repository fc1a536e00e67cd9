// The blktrace back end. blktrace's own relay files in debugfs are refused
// under kernel lockdown, so this uses the ftrace `blk` tracer: per-device
// trace/enable, current_tracer=blk, and the text stream of trace_pipe with
// trace_clock=boot (the clock of the eBPF back end). IOs are requests: a D
// (issue) event opens one, its C (completion) closes it; the Q (queue) event
// at the same sector gives the submitter and the queue time.
//
// Limits of the text stream: microsecond times; it names the thread, not the
// process, so the process id is looked up in /proc while the thread lives;
// requests without sectors (flushes) are not recorded.
#include <fcntl.h>
#include <poll.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "capture/backend.h"
#include "traces/error.h"

namespace iotape::capture {
namespace {

const std::string kTracefs = "/sys/kernel/tracing";
constexpr size_t kMaxPending = 1 << 18;  // bound on unmatched Q/D events kept

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

void write_file(const std::string& path, const std::string& value) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) throw error_errno(path, "cannot open", errno);
  const ssize_t n = ::write(fd, value.data(), value.size());
  const int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(value.size())) throw error_errno(path, "cannot write '" + value + "'", err);
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
    throw error_errno(kTracefs, "cannot mount tracefs", errno);
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

struct Queued {
  int64_t ns;
  uint32_t pid;
  std::string comm;
  uint32_t flags;  // as queued: a completion without dispatch prints fewer
};

struct Issued {
  int64_t queue_ns;
  int64_t issue_ns;
  uint32_t pid;
  std::string comm;
  Op op;
  uint32_t flags;
  uint64_t bytes;
};

// Op and flags from the RWBS column ("WS", "RA", "FWFS", "D", ...).
void parse_rwbs(std::string_view rwbs, Op* op, uint32_t* flags) {
  *op = Op::kOther;
  *flags = 0;
  size_t i = 0;
  if (rwbs.size() > 1 && rwbs[0] == 'F') {
    *flags |= flag::kPreflush;
    i = 1;
  }
  if (i < rwbs.size()) {
    switch (rwbs[i++]) {
      case 'R': *op = Op::kRead; break;
      case 'W': *op = Op::kWrite; break;
      case 'D': *op = Op::kDiscard; break;
      case 'F': *op = Op::kFlush; break;
      // The flush the kernel makes for preflushes prints as "FN": a
      // preflush of no operation (blk_fill_rwbs has no letter for REQ_OP_FLUSH).
      case 'N': *op = *flags & flag::kPreflush ? Op::kFlush : Op::kOther; break;
      default: break;
    }
  }
  for (; i < rwbs.size(); ++i) {
    switch (rwbs[i]) {
      case 'F': *flags |= flag::kFua; break;
      case 'A': *flags |= flag::kReadahead; break;
      case 'S': *flags |= flag::kSync; break;
      case 'M': *flags |= flag::kMeta; break;
      default: break;
    }
  }
}

template <typename T>
bool to_number(std::string_view s, T* out) {
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

std::vector<std::string_view> split_ws(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && s[i] == ' ') ++i;
    size_t j = i;
    while (j < s.size() && s[j] != ' ') ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

class BlktraceBackend final : public Backend {
 public:
  explicit BlktraceBackend(const BackendOptions& o) : opt_(o) {
    ensure_tracefs();
    const std::string tracer = read_file(kTracefs + "/current_tracer");
    if (tracer != "nop")
      throw TraceError("the ftrace tracer is busy (current_tracer is " + tracer + " in " + kTracefs +
                               "): another tool is tracing, or a recorder was killed; "
                               "`echo nop > " + kTracefs + "/current_tracer` frees it");
    for (uint32_t i = 0; i < o.devices.size(); ++i) index_[dev_key(o.devices[i].major, o.devices[i].minor)] = i;
    settings_.push_back(std::make_unique<Setting>(kTracefs + "/trace_clock", "boot",
                                                  selected(read_file(kTracefs + "/trace_clock"))));
    if (o.buffer_bytes) {
      const long cpus = ::sysconf(_SC_NPROCESSORS_CONF);
      settings_.push_back(std::make_unique<Setting>(kTracefs + "/buffer_size_kb",
                                                    std::to_string(o.buffer_bytes / 1024 / (cpus > 0 ? cpus : 1)),
                                                    read_file(kTracefs + "/buffer_size_kb")));
    }
    for (const auto& d : o.devices)
      settings_.push_back(std::make_unique<Setting>("/sys/block/" + d.name + "/trace/enable", "1", "0"));
    write_file(kTracefs + "/trace", "");  // start from an empty buffer
    overrun_base_ = overruns();
    // The tracer cannot change while trace_pipe is open (EBUSY): set it first, close the pipe first.
    tracer_ = std::make_unique<Setting>(kTracefs + "/current_tracer", "blk", "nop");
    fd_ = ::open((kTracefs + "/trace_pipe").c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd_ < 0) throw error_errno(kTracefs + "/trace_pipe", "cannot open", errno);
  }

  ~BlktraceBackend() override {
    ::close(fd_);
    tracer_.reset();
    while (!settings_.empty()) settings_.pop_back();  // reverse order of setting up
  }

  v1::Source source() const override { return v1::SOURCE_BLKTRACE; }
  std::string detail() const override { return "blktrace:ftrace-text"; }

  void poll(int timeout_ms, const IoSink& sink) override {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return;  // timeout or signal
    read_pipe(sink);
  }

  // Every IO still to come is in flight in the maps below, or its first
  // event (D, or the C of a request never dispatched) is not written yet.
  int64_t oldest_outstanding_ns(int64_t floor_ns, const IoSink& sink) override {
    const int64_t emptied = read_pipe(sink);
    if (emptied == kNoTime) return floor_ns;
    int64_t oldest = emptied - kStampSlackNs;
    const auto consider = [&](int64_t issue) {
      if (issue >= floor_ns && issue < oldest) oldest = issue;
    };
    for (const auto& [key, ios] : issued_)
      for (const Issued& is : ios) consider(is.issue_ns);
    // A queued request is issued later, or completed undispatched with its queue time.
    for (const auto& [key, ios] : queued_)
      for (const Queued& q : ios) consider(q.ns);
    return std::max(oldest, floor_ns);
  }

  uint64_t dropped() override { return overruns() - overrun_base_ + lost_; }

 private:
  static uint64_t dev_key(uint32_t major, uint32_t minor) { return (uint64_t{major} << 32) | minor; }
  // Requests in flight at one sector of one device, oldest first (concurrent
  // IOs at one sector do happen: overlapping random workloads).
  static uint64_t io_key(uint32_t device, uint64_t sector, Op op) {
    return (uint64_t{device} << 48) ^ (uint64_t{static_cast<uint8_t>(op)} << 40) ^ sector;
  }
  // The sector of requests without data (flushes, an fsync's empty preflush
  // write): their events print none, so they are matched first in, first out.
  static constexpr uint64_t kNoSector = (uint64_t{1} << 40) - 1;
  template <typename T>
  static void push(std::unordered_map<uint64_t, std::vector<T>>& m, uint64_t key, T v, uint64_t& count) {
    m[key].push_back(std::move(v));
    ++count;
  }
  template <typename T>
  static bool pop(std::unordered_map<uint64_t, std::vector<T>>& m, uint64_t key, T* out, uint64_t& count) {
    const auto it = m.find(key);
    if (it == m.end()) return false;
    *out = std::move(it->second.front());
    it->second.erase(it->second.begin());
    if (it->second.empty()) m.erase(it);
    --count;
    return true;
  }

  // Parses every line trace_pipe holds. Returns when the read that found it
  // empty began (every event stamped before then, less kStampSlackNs, has
  // been parsed), or kNoTime when a read failed otherwise.
  int64_t read_pipe(const IoSink& sink) {
    char buf[1 << 16];
    for (;;) {
      const int64_t before = boottime_ns();
      const ssize_t n = ::read(fd_, buf, sizeof buf);
      if (n <= 0) return n < 0 && errno == EAGAIN ? before : kNoTime;
      pending_.append(buf, static_cast<size_t>(n));
      size_t start = 0, nl;
      while ((nl = pending_.find('\n', start)) != std::string::npos) {
        parse_line(std::string_view(pending_).substr(start, nl - start), sink);
        start = nl + 1;
      }
      pending_.erase(0, start);
    }
  }

  // Events the ftrace ring buffer overwrote or could not store.
  uint64_t overruns() const {
    uint64_t total = 0;
    for (long cpu = 0;; ++cpu) {
      std::ifstream in(kTracefs + "/per_cpu/cpu" + std::to_string(cpu) + "/stats");
      if (!in) break;
      std::string line;
      while (std::getline(in, line)) {
        const auto colon = line.find(':');
        if (colon == std::string::npos) continue;
        const std::string key = line.substr(0, colon);
        if (key == "overrun" || key == "dropped events") total += std::stoull(line.substr(colon + 1));
      }
    }
    return total;
  }

  // The process of thread `tid`, whose name is `comm`, from /proc. A thread that is gone
  // from /proc by the time its line is read (io_uring's workers exit with
  // their ring) is named after the thread that made the ring: "iou-wrk-TID".
  uint32_t process_of(uint32_t tid, std::string_view comm) {
    if (auto it = tgid_.find(tid); it != tgid_.end()) return it->second;
    uint32_t tgid = proc_tgid(tid);
    if (const uint32_t owner = io_uring_owner(comm); !tgid && owner) {
      const auto it = tgid_.find(owner);
      tgid = it != tgid_.end() ? it->second : proc_tgid(owner);
    }
    if (!tgid) tgid = tid;  // best guess: the thread of a single-threaded process
    if (tgid_.size() > kMaxPending) tgid_.clear();
    tgid_[tid] = tgid;
    return tgid;
  }

  // Tgid of a live thread, 0 if it is gone.
  static uint32_t proc_tgid(uint32_t tid) {
    std::ifstream in("/proc/" + std::to_string(tid) + "/status");
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("Tgid:", 0) == 0) return static_cast<uint32_t>(std::stoul(line.substr(5)));
    return 0;
  }

  // TID of "iou-wrk-TID" or "iou-sqp-TID"; 0 for any other name.
  static uint32_t io_uring_owner(std::string_view comm) {
    uint32_t owner = 0;
    if (comm.starts_with("iou-wrk-") || comm.starts_with("iou-sqp-")) to_number(comm.substr(8), &owner);
    return owner;
  }

  // "  comm-TID  (TGID) [CPU] FLAGS  SECONDS.MICROS:  MAJ,MIN  ACT RWBS SECTOR + N [COMM|ERR]"
  void parse_line(std::string_view line, const IoSink& sink) {
    if (line.empty() || line[0] == '#') return;
    // The task column may contain spaces; the CPU column "[NNN]" is the first anchor.
    size_t cpu_open = std::string_view::npos;
    for (size_t i = line.find(" ["); i != std::string_view::npos; i = line.find(" [", i + 1)) {
      const size_t close = line.find(']', i);
      uint32_t cpu;
      if (close != std::string_view::npos && to_number(line.substr(i + 2, close - i - 2), &cpu)) {
        cpu_open = i;
        break;
      }
    }
    if (cpu_open == std::string_view::npos) return;
    std::string_view task = line.substr(0, cpu_open);
    if (const auto paren = task.rfind(" ("); paren != std::string_view::npos) task = task.substr(0, paren);
    while (!task.empty() && task.back() == ' ') task.remove_suffix(1);
    const auto dash = task.rfind('-');
    uint32_t tid = 0;
    if (dash == std::string_view::npos || !to_number(task.substr(dash + 1), &tid)) return;

    const auto f = split_ws(line.substr(line.find(']', cpu_open) + 1));
    // f: FLAGS TIME: MAJ,MIN ACT RWBS ...
    if (f.size() < 5 || f[1].back() != ':') return;
    const std::string_view time = f[1].substr(0, f[1].size() - 1);
    const auto dot = time.find('.');
    int64_t secs = 0, micros = 0;
    if (dot == std::string_view::npos || !to_number(time.substr(0, dot), &secs) ||
        !to_number(time.substr(dot + 1), &micros))
      return;
    const int64_t ns = secs * 1'000'000'000 + micros * 1000;
    const auto comma = f[2].find(',');
    uint32_t major = 0, minor = 0;
    if (comma == std::string_view::npos || !to_number(f[2].substr(0, comma), &major) ||
        !to_number(f[2].substr(comma + 1), &minor))
      return;
    const auto dev = index_.find(dev_key(major, minor));
    if (dev == index_.end()) return;
    const std::string_view act = f[3];
    uint64_t sector = 0;
    uint32_t sectors = 0;
    size_t tail = 8;  // the field after "SECTOR + N": [COMM] or [ERR]
    if (f.size() < 8 || f[6] != "+" || !to_number(f[5], &sector) || !to_number(f[7], &sectors)) {
      if (f.size() == 5 || f[5].front() == '[')  // "Q FWS [comm]", "D FN [comm]"
        tail = 5;
      else if (act == "C" && f[5] == "0")  // "C FN 0 [0]"
        tail = 6;
      else
        return;
      sector = kNoSector;
    }
    Op op;
    uint32_t flags;
    parse_rwbs(f[4], &op, &flags);
    const uint64_t key = io_key(dev->second, sector, op);

    if (act == "Q") {
      std::string_view comm = f.size() > tail ? f[tail] : std::string_view();
      if (comm.size() >= 2 && comm.front() == '[' && comm.back() == ']') comm = comm.substr(1, comm.size() - 2);
      const uint32_t pid = process_of(tid, comm);
      if ((opt_.pid && pid != opt_.pid) || (!opt_.comm.empty() && comm != opt_.comm)) return;
      if (n_queued_ >= kMaxPending) lost_ += n_queued_, n_queued_ = 0, queued_.clear();
      push(queued_, key, Queued{ns, pid, std::string(comm), flags}, n_queued_);
    } else if (act == "M" || act == "F") {
      Queued merged;
      pop(queued_, key, &merged, n_queued_);  // merged into a request that starts elsewhere
    } else if (act == "D") {
      Issued is{0, ns, 0, {}, op, flags, uint64_t{sectors} * 512};
      if (Queued q; pop(queued_, key, &q, n_queued_)) {
        is.queue_ns = q.ns;
        is.pid = q.pid;
        is.comm = std::move(q.comm);
      } else if (opt_.pid || !opt_.comm.empty()) {
        return;  // not from the selected submitter
      }
      if (n_issued_ >= kMaxPending) lost_ += n_issued_, n_issued_ = 0, issued_.clear();
      push(issued_, key, std::move(is), n_issued_);
    } else if (act == "C") {
      Issued is;
      if (!pop(issued_, key, &is, n_issued_)) {
        // An fsync's empty write is completed by the flush machinery, never
        // dispatched: its issue time is its queue time, as in the eBPF back end.
        Queued q;
        if (sector != kNoSector || !pop(queued_, key, &q, n_queued_)) return;  // issued before the capture
        is = Issued{q.ns, q.ns, q.pid, std::move(q.comm), op, q.flags, 0};
      }
      int32_t err = 0;
      if (f.size() > tail && f[tail].size() > 2) to_number(f[tail].substr(1, f[tail].size() - 2), &err);
      Io io;
      io.issue_ns = is.issue_ns;
      if (is.queue_ns) io.queue_ns = is.queue_ns;
      io.complete_ns = ns;
      io.offset = sector == kNoSector ? 0 : sector * 512;
      io.length = is.bytes;
      io.device = dev->second;
      io.op = is.op;
      io.flags = is.flags;
      io.status = err;
      io.pid = is.pid;
      io.comm = is.comm;
      sink(io);
    }
  }

  BackendOptions opt_;
  std::unordered_map<uint64_t, uint32_t> index_;
  std::vector<std::unique_ptr<Setting>> settings_;
  std::unique_ptr<Setting> tracer_;
  int fd_ = -1;
  std::string pending_;
  std::unordered_map<uint64_t, std::vector<Queued>> queued_;
  std::unordered_map<uint64_t, std::vector<Issued>> issued_;
  uint64_t n_queued_ = 0, n_issued_ = 0;
  std::unordered_map<uint32_t, uint32_t> tgid_;
  uint64_t overrun_base_ = 0;
  uint64_t lost_ = 0;
};

}  // namespace

std::unique_ptr<Backend> make_blktrace_backend(const BackendOptions& options) {
  return std::make_unique<BlktraceBackend>(options);
}

}  // namespace iotape::capture

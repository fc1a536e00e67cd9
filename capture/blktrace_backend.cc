// The blktrace back end. blktrace's own relay files in debugfs are refused
// under kernel lockdown, so this uses the ftrace `blk` tracer: per-device
// trace/enable, current_tracer=blk, trace_clock=boot (the clock of the eBPF
// back end). With options/bin set and options/context-info cleared, trace_pipe
// yields blktrace's own binary records (the kernel synthesizes them:
// blk_trace_synthesize_old_trace in kernel/trace/blktrace.c), merged across
// CPUs in time order. They are decoded and folded into IOs by the same code
// as `iotape import blktrace` (traces/blk), so capture and import reconstruct
// IOs alike: merges, splits, remaps, requeues, flushes.
//
// The records name the thread, not the process, and carry no process name:
// both are looked up in /proc while the thread lives, in the tracer's saved
// command lines after.
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
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "capture/backend.h"
#include "traces/blk/block_io_assembler.h"
#include "traces/blk/record_decoder.h"
#include "traces/blktrace_layout.h"
#include "traces/error.h"

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

class BlktraceBackend final : public Backend, private blk::IoOutput {
 public:
  explicit BlktraceBackend(const BackendOptions& o) : opt_(o), decoder_(kTracefs + "/trace_pipe") {
    ensure_tracefs();
    const std::string tracer = read_file(kTracefs + "/current_tracer");
    if (tracer != "nop")
      throw TraceError("the ftrace tracer is busy (current_tracer is " + tracer + " in " + kTracefs +
                       "): another tool is tracing, or a recorder was killed; "
                       "`echo nop > " + kTracefs + "/current_tracer` frees it");
    for (uint32_t i = 0; i < o.devices.size(); ++i)
      index_[blktrace::device(o.devices[i].major, o.devices[i].minor)] = i;
    change(kTracefs + "/trace_clock", "boot", selected(read_file(kTracefs + "/trace_clock")));
    // Binary records without ftrace's own prefix; the blk tracer's options
    // that would print text (classic) or lengthen the records (cgroup) off.
    change(kTracefs + "/options/bin", "1");
    change(kTracefs + "/options/context-info", "0");
    change(kTracefs + "/options/blk_classic", "0");
    change(kTracefs + "/options/blk_cgroup", "0");
    const long cpus = ::sysconf(_SC_NPROCESSORS_CONF);
    const uint64_t buffer = o.buffer_bytes ? o.buffer_bytes : kDefaultBuffer;
    change(kTracefs + "/buffer_size_kb", std::to_string(buffer / 1024 / static_cast<uint64_t>(cpus > 0 ? cpus : 1)));
    for (const auto& d : o.devices) change("/sys/block/" + d.name + "/trace/enable", "1", "0");
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
  std::string detail() const override { return "blktrace:ftrace-bin"; }

  void poll(int timeout_ms, const IoSink& sink) override {
    pollfd p{fd_, POLLIN, 0};
    // The pipe wakes its reader only when the buffer is partly full
    // (buffer_percent): read what is there after the timeout too.
    if (::poll(&p, 1, timeout_ms) < 0) return;  // a signal
    sink_ = &sink;
    for (;;) {
      if (buf_.size() - end_ < kRead) buf_.resize(end_ + kRead);
      const ssize_t n = ::read(fd_, buf_.data() + end_, buf_.size() - end_);
      if (n <= 0) break;
      end_ += static_cast<size_t>(n);
      consume();
    }
    if (const int64_t now = boottime_ns(); now - last_expiry_ > kThreadCacheNs) {
      if (threads_.size() > kMaxThreads) threads_.clear();
      ++generation_;
      uncompleted_ += assembler_.write_outstanding(now - kOutstandingLimitNs);
      last_expiry_ = now;
    }
    sink_ = nullptr;
  }

  uint64_t dropped() override { return overruns() - overrun_base_; }

  void finish(const IoSink& sink) override {
    sink_ = &sink;
    uncompleted_ += assembler_.write_outstanding(INT64_MAX);
    sink_ = nullptr;
  }

  uint64_t uncompleted() override { return uncompleted_; }

 private:
  static constexpr size_t kRead = 1 << 20;

  // Decodes every whole record in buf_[0, end_) and keeps the rest.
  void consume() {
    size_t at = 0;
    while (end_ - at >= sizeof(blktrace::Record)) {
      const char* p = buf_.data() + at;
      if (!blktrace::is_magic(load<uint32_t>(p))) {
        // trace_pipe reports an overrun in text between the records: "CPU:1 [LOST 12 EVENTS]\n".
        const size_t line_max = std::min<size_t>(end_ - at, 256);
        const char* nl = static_cast<const char*>(std::memchr(p, '\n', line_max));
        if (std::string_view(p, 4) != "CPU:" || (!nl && line_max == 256))
          throw error_at_byte(decoder_.name(), offset_ + at,
                              "bad magic: not a blktrace record (another tool's events in the ftrace buffer?)");
        if (!nl) break;
        at = static_cast<size_t>(nl + 1 - buf_.data());
        continue;
      }
      const size_t size = decoder_.record_size(p, offset_ + at);
      if (end_ - at < size) break;
      on_event(decoder_.decode(p, offset_ + at), offset_ + at);
      at += size;
    }
    std::memmove(buf_.data(), buf_.data() + at, end_ - at);
    end_ -= at;
    offset_ += at;
  }

  template <typename T>
  static T load(const char* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }

  void on_event(const blk::TraceEvent& decoded, uint64_t at) {
    if (!index_.contains(decoded.dev) && decoded.what() != blktrace::kRemap) return;
    blk::TraceEvent ev = decoded;
    // Q, G and I run in the submitter's context: they give the IO its process.
    if (const uint32_t w = ev.what(); w == blktrace::kQueue || w == blktrace::kGetrq || w == blktrace::kInsert) {
      const Thread& t = thread(ev.pid);
      ev.pid = t.tgid;
      ev.comm = t.comm;
    }
    assembler_.on_event(ev, {&decoder_.name(), at, false});
  }

  // The process and name of thread `tid`, cached for a while.
  const Thread& thread(uint32_t tid) {
    auto [it, added] = threads_.try_emplace(tid);
    if (!added && it->second.generation == generation_) return it->second.thread;
    it->second.generation = generation_;
    Thread& t = it->second.thread;
    if (proc_thread(tid, t)) return t;
    // Gone already (io_uring's workers exit with their ring): the name the
    // tracer saved, and the process of the thread that made the ring.
    t.comm = saved_cmdline(tid);
    t.tgid = tid;  // best guess: the thread of a single-threaded process
    if (const uint32_t owner = io_uring_owner(t.comm)) {
      Thread o;
      t.tgid = proc_thread(owner, o) ? o.tgid : owner;
    }
    return t;
  }

  // The name the tracer saved for `tid` (saved_cmdlines: "TID NAME" lines).
  static std::string saved_cmdline(uint32_t tid) {
    std::ifstream in(kTracefs + "/saved_cmdlines");
    const std::string prefix = std::to_string(tid) + " ";
    for (std::string line; std::getline(in, line);)
      if (line.starts_with(prefix)) return line.substr(prefix.size());
    return {};
  }

  // blk::IoOutput: the IOs the assembler completes, filtered as asked.
  uint32_t add_device(const v1::Device& d) override {
    const auto it = index_.find(blktrace::device(d.major(), d.minor()));
    return it == index_.end() ? kNoDevice : it->second;
  }
  void append(const Io& io) override {
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

  BackendOptions opt_;
  std::unordered_map<uint32_t, uint32_t> index_;  // kernel dev_t -> index into opt_.devices
  std::vector<std::unique_ptr<Setting>> settings_;
  std::unique_ptr<Setting> tracer_;
  int fd_ = -1;
  std::vector<char> buf_;
  size_t end_ = 0;       // bytes in buf_
  uint64_t offset_ = 0;  // stream offset of buf_[0]
  blk::RecordDecoder decoder_;
  ImportReport report_;
  blk::BlockIoAssembler assembler_{*this, report_};
  const IoSink* sink_ = nullptr;
  struct CachedThread {
    Thread thread;
    uint64_t generation = 0;
  };
  std::unordered_map<uint32_t, CachedThread> threads_;
  uint64_t generation_ = 1;
  int64_t last_expiry_ = 0;
  uint64_t overrun_base_ = 0;
  uint64_t uncompleted_ = 0;
};

}  // namespace

std::unique_ptr<Backend> make_blktrace_backend(const BackendOptions& options) {
  return std::make_unique<BlktraceBackend>(options);
}

}  // namespace iotape::capture

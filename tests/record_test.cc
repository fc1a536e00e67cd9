// iotape record against independent truth: fio's own totals and iolog, and
// the kernel's /sys/block stat counters, on a loop device over tmpfs.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>
#include <vector>

#include "capture/issue_order.h"
#include "capture/recorder.h"
#include "format/reader.h"
#include "format/writer.h"
#include "host/clocks.h"
#include "tests/blk_tracer.h"
#include "tests/test_support.h"

namespace iotape::test {
namespace {

// A child process with stdout and stderr in `log`; killed and reaped by its
// own pid if still running at destruction.
class Process {
 public:
  Process(const std::vector<std::string>& argv, const std::string& log) : log_(log) {
    pid_ = ::fork();
    if (pid_ == 0) {
      int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execvp(args[0], args.data());
      ::_exit(127);
    }
  }
  ~Process() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      wait();
    }
  }
  pid_t pid() const { return pid_; }
  void signal(int sig) {
    if (pid_ > 0) ::kill(pid_, sig);
  }
  // Exit status, or 128 + the signal that ended it.
  int wait() {
    if (pid_ > 0) {
      int st = 0;
      while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
      }
      reap(st);
    }
    return status_;
  }
  bool running() {
    int st = 0;
    if (pid_ > 0 && ::waitpid(pid_, &st, WNOHANG) == pid_) reap(st);
    return pid_ > 0;
  }
  bool wait_for_output(const std::string& needle, int timeout_ms) {
    for (int t = 0; t < timeout_ms; t += 20) {
      if (read_file(log_).find(needle) != std::string::npos) return true;
      if (!running()) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }
  std::string output() const { return read_file(log_); }

 private:
  void reap(int st) {
    status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    pid_ = -1;
  }
  std::string log_;
  pid_t pid_ = -1;
  int status_ = -1;
};

// `iotape record` running until stop(); the constructor returns once it is
// capturing, so IOs started afterwards are all in the trace.
class Recording {
 public:
  Recording(const std::string& backend, const std::string& dev, const std::string& out, const std::string& log,
            std::vector<std::string> extra = {})
      : proc_(args(backend, dev, out, std::move(extra)), log) {
    if (!proc_.wait_for_output("iotape: recording", 30000)) FAIL("iotape record did not start:\n" << proc_.output());
  }
  // A failed test still stops it gently, so a back end restores the kernel's settings.
  ~Recording() {
    proc_.signal(SIGTERM);
    for (int t = 0; t < 200 && proc_.running(); ++t) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  int stop(int sig = SIGINT) {
    proc_.signal(sig);
    return proc_.wait();
  }
  Process& process() { return proc_; }

 private:
  static std::vector<std::string> args(const std::string& backend, const std::string& dev, const std::string& out,
                                       std::vector<std::string> extra) {
    std::vector<std::string> a{iotape_binary(), "record", "-d", dev, "-o", out, "--backend", backend};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  Process proc_;
};

// (op, offset, length) of one IO; op is 0 read, 1 write.
using IoKey = std::tuple<int, uint64_t, uint64_t>;

struct Totals {
  uint64_t ios[2] = {0, 0};
  uint64_t bytes[2] = {0, 0};
};

// A known mix: reads and writes of several sizes, at QD1 and QD16, with a
// fixed IO count per job. Jobs are threads, so every IO's pid is fio's.
// With `fsync_every`, writing jobs also fsync the device every that many writes.
std::string write_job(const TempDir& dir, const std::string& device, int fsync_every = 0) {
  struct Job {
    const char* name;
    const char* rw;
    const char* bs;
    int depth;
    int ios;
  };
  const Job jobs[] = {{"qd1-randread-4k", "randread", "4k", 1, 300},
                      {"qd16-randwrite-16k", "randwrite", "16k", 16, 400},
                      {"qd16-randrw-8k", "randrw", "8k", 16, 400},
                      {"qd1-randwrite-64k", "randwrite", "64k", 1, 100},
                      {"qd16-randread-128k", "randread", "128k", 16, 200}};
  std::ostringstream f;
  f << "[global]\nfilename=" << device << "\ndirect=1\nioengine=io_uring\nthread\nrandrepeat=1\nrandseed=42\n"
    << "size=192M\n";
  for (const auto& j : jobs)
    f << "[" << j.name << "]\nrw=" << j.rw << "\nbs=" << j.bs << "\niodepth=" << j.depth
      << "\nnumber_ios=" << j.ios << "\nwrite_iolog=" << dir.file(std::string(j.name) + ".iolog") << "\n"
      << (fsync_every && std::string_view(j.rw).find("w") != std::string_view::npos
              ? "fsync=" + std::to_string(fsync_every) + "\n"
              : "");
  std::ofstream(dir.file("mix.fio")) << f.str();
  return dir.file("mix.fio");
}

struct FioRun {
  pid_t pid = 0;
  Totals totals;
  uint64_t syncs = 0;
  std::vector<IoKey> iolog;  // sorted
};

FioRun run_fio(const TempDir& dir, const std::string& device, int fsync_every = 0) {
  const std::string job = write_job(dir, device, fsync_every);
  FioRun r;
  Process fio({"fio", "--output-format=json", "--output=" + dir.file("fio.json"), job}, dir.file("fio.log"));
  r.pid = fio.pid();
  REQUIRE(fio.wait() == 0);
  const auto j = nlohmann::json::parse(read_file(dir.file("fio.json")));
  for (const auto& job : j["jobs"]) {
    r.totals.ios[0] += job["read"]["total_ios"].get<uint64_t>();
    r.totals.bytes[0] += job["read"]["io_bytes"].get<uint64_t>();
    r.totals.ios[1] += job["write"]["total_ios"].get<uint64_t>();
    r.totals.bytes[1] += job["write"]["io_bytes"].get<uint64_t>();
    if (job.contains("sync")) r.syncs += job["sync"]["total_ios"].get<uint64_t>();
    std::ifstream log(dir.file(job["jobname"].get<std::string>() + ".iolog"));
    std::string line;
    while (std::getline(log, line)) {
      // v3 lines: TIME FILE ACTION OFFSET LENGTH (v2 lacks the TIME).
      std::istringstream ls(line);
      std::vector<std::string> f{std::istream_iterator<std::string>(ls), std::istream_iterator<std::string>()};
      if (f.size() == 5) f.erase(f.begin());
      if (f.size() == 4 && (f[1] == "read" || f[1] == "write"))
        r.iolog.emplace_back(f[1] == "write", std::stoull(f[2]), std::stoull(f[3]));
    }
  }
  std::sort(r.iolog.begin(), r.iolog.end());
  return r;
}

struct TraceContents {
  Totals totals;
  std::vector<IoKey> ios;  // reads and writes of the device, sorted
  uint64_t other_ops = 0;
  uint64_t empty_preflush_writes = 0;  // an fsync of a block device: a write of no data, with a preflush
  uint64_t flushes = 0;                // flush requests the kernel made of them
  uint64_t other_device = 0;
  uint64_t dropped = 0;
  uint64_t without_completion = 0;  // IOs of the device recorded without a completion time
  uint64_t uncompleted = 0;         // what the capture says it recorded so (capture.uncompleted_ios)
  std::vector<format::Io> all;      // with comm copied out below
  std::vector<std::string> comms;
};

TraceContents read_trace(const std::vector<std::string>& paths, uint32_t major, uint32_t minor) {
  format::TraceReader reader(paths);
  TraceContents t;
  int dev = -1;
  format::Io io;
  while (reader.next(io)) {
    if (dev < 0)
      for (int i = 0; i < reader.header().devices_size(); ++i)
        if (reader.header().devices(i).major() == major && reader.header().devices(i).minor() == minor) dev = i;
    t.other_device += static_cast<int>(io.device) != dev;
    t.all.push_back(io);
    t.comms.emplace_back(io.comm);
    t.without_completion += static_cast<int>(io.device) == dev && !io.has_complete();
    if (static_cast<int>(io.device) != dev) continue;
    if (io.op == format::Op::kWrite && io.length == 0 && (io.flags & format::flag::kPreflush)) {
      ++t.empty_preflush_writes;
      continue;
    }
    t.flushes += io.op == format::Op::kFlush;
    if (io.op != format::Op::kRead && io.op != format::Op::kWrite) {
      ++t.other_ops;
      continue;
    }
    const int w = io.op == format::Op::kWrite;
    ++t.totals.ios[w];
    t.totals.bytes[w] += io.length;
    t.ios.emplace_back(w, io.offset, io.length);
  }
  CHECK_FALSE(reader.status().damaged);
  t.dropped = reader.dropped_events();
  // The capture's closing counts are in the last part: in its index, or in its
  // header when nothing was written to it before the end.
  format::TraceReader last(paths.back());
  REQUIRE(last.index());
  if (const auto it = last.metadata().find("capture.uncompleted_ios"); it != last.metadata().end())
    t.uncompleted = std::stoull(it->second);
  std::sort(t.ios.begin(), t.ios.end());
  return t;
}

void set_nomerges(const LoopDevice& loop) {
  // Adjacent random IOs would otherwise merge into one request: the trace
  // records requests, fio counts its own IOs.
  std::ofstream("/sys/block/" + loop.name() + "/queue/nomerges") << "2";
}

// The trace equals fio's IOs exactly: counts, bytes, offsets, submitter, times.
// Without `submitters` (issue and completion events only), no IO may claim a
// submitter or a queue time.
void check_exact(const TraceContents& t, const FioRun& fio, const BlockStat& before, const BlockStat& after,
                 bool submitters = true) {
  CHECK(t.dropped == 0);
  CHECK(t.other_device == 0);
  for (int w = 0; w < 2; ++w) {
    INFO((w ? "writes" : "reads"));
    CHECK(t.totals.ios[w] == fio.totals.ios[w]);
    CHECK(t.totals.bytes[w] == fio.totals.bytes[w]);
  }
  CHECK(t.empty_preflush_writes == fio.syncs);
  CHECK(t.totals.ios[0] == after.read_ios - before.read_ios);
  CHECK(t.totals.ios[1] + t.empty_preflush_writes == after.write_ios - before.write_ios);
  CHECK(t.flushes == after.flush_ios - before.flush_ios);
  CHECK(t.totals.bytes[0] == (after.read_sectors - before.read_sectors) * 512);
  CHECK(t.totals.bytes[1] == (after.write_sectors - before.write_sectors) * 512);
  std::vector<IoKey> missing, extra;
  std::set_difference(fio.iolog.begin(), fio.iolog.end(), t.ios.begin(), t.ios.end(), std::back_inserter(missing));
  std::set_difference(t.ios.begin(), t.ios.end(), fio.iolog.begin(), fio.iolog.end(), std::back_inserter(extra));
  INFO("iolog " << fio.iolog.size() << " IOs, trace " << t.ios.size());
  CHECK(missing.size() == 0);
  CHECK(extra.size() == 0);
  uint64_t bad_pid = 0, bad_comm = 0, bad_order = 0;
  std::string first_bad_pid;
  for (size_t i = 0; i < t.all.size(); ++i) {
    const format::Io& io = t.all[i];
    if (!submitters) {
      bad_pid += io.pid != 0 || !t.comms[i].empty();
      bad_order += io.has_queue() || !io.has_complete() || io.issue_ns > io.complete_ns;
      continue;
    }
    if (io.op != format::Op::kRead && io.op != format::Op::kWrite)
      continue;  // flushes are the kernel's, without a submitter
    if (io.pid != static_cast<uint32_t>(fio.pid) && bad_pid++ == 0)
      first_bad_pid = "pid " + std::to_string(io.pid) + " comm " + t.comms[i] + " length " + std::to_string(io.length);
    // io_uring may run a blocking fsync on its worker thread, named after the
    // job's thread: "iou-wrk-TID".
    const bool fsync_worker = io.length == 0 && t.comms[i].starts_with("iou-wrk-");
    bad_comm += t.comms[i] != "fio" && !fsync_worker;
    // The kernel, rarely, does not deliver a completion to the BPF program:
    // such an IO is kept without one, and counted.
    bad_order += !(io.has_queue() && io.queue_ns <= io.issue_ns && (!io.has_complete() || io.issue_ns <= io.complete_ns));
  }
  INFO("fio's pid " << fio.pid << ", first IO with another: " << first_bad_pid);
  CHECK(bad_pid == 0);
  CHECK(bad_comm == 0);
  CHECK(bad_order == 0);
  CHECK(t.without_completion == t.uncompleted);
}

// The loop device's IO scheduler for the life of the object; "none" after.
class Scheduler {
 public:
  Scheduler(const LoopDevice& loop, const std::string& name) : path_("/sys/block/" + loop.name() + "/queue/scheduler") {
    std::ofstream(path_) << name;
    REQUIRE(read_file(path_).find("[" + name + "]") != std::string::npos);
  }
  ~Scheduler() { std::ofstream(path_) << "none"; }

 private:
  std::string path_;
};

// `scheduler`: with one, requests carry the scheduler's tags, not the driver's.
// `fsync_every`: fsyncs add empty preflush writes and the flush requests made
// of them (which borrow the tag of the request they flush for).
void exact_capture_test(const std::string& backend, const std::string& scheduler = "none", int fsync_every = 0) {
  if (!require_root("record block IOs")) return;
  TempDir dir;
  LoopDevice loop(256u << 20);
  set_nomerges(loop);
  Scheduler sched(loop, scheduler);
  const BlockStat before = block_stat(loop.name());
  Recording rec(backend, loop.path(), dir.file("t.iot"), dir.file("record.log"));
  const FioRun fio = run_fio(dir, loop.path(), fsync_every);
  REQUIRE(rec.stop(SIGINT) == 0);
  const BlockStat after = block_stat(loop.name());
  REQUIRE(fio.totals.ios[0] + fio.totals.ios[1] == 1400);
  REQUIRE((fio.syncs > 0) == (fsync_every > 0));
  INFO(read_file(dir.file("record.log")));
  check_exact(read_trace({dir.file("t.iot")}, loop.dev_major(), loop.dev_minor()), fio, before, after);
}

// Durability: how much IO a killed or powered-off recorder loses, against
// fio's own log of every completion.
constexpr int64_t kFlushInterval = 1'000'000'000;  // `iotape record`'s default
constexpr int64_t kFlushMargin = 100'000'000;       // the documented bound is the interval + 0.1 s
constexpr int64_t kDurableWithin = kFlushInterval + kFlushMargin;

// An IO fio completed: what it was, and by when it had completed (CLOCK_BOOTTIME).
struct FioCompletion {
  IoKey key;
  int64_t by_ns;
};

// fio's completion log (clat, with offsets) in whole CLOCK_BOOTTIME
// milliseconds: "MS, CLAT_NS, DIR, BS, OFFSET, PRIO". An IO logged at MS
// completed by the end of that millisecond.
std::vector<FioCompletion> read_fio_completions(const std::string& path) {
  std::vector<FioCompletion> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::replace(line.begin(), line.end(), ',', ' ');
    std::istringstream f(line);
    int64_t ms = 0, clat = 0;
    int dir = 0;
    uint64_t bs = 0, offset = 0;
    if (f >> ms >> clat >> dir >> bs >> offset) out.push_back({{dir, offset, bs}, (ms + 1) * 1'000'000});
  }
  return out;
}

// 4 KiB random reads at `iops` with `depth` in flight, every completion logged.
Process paced_fio(const TempDir& dir, const LoopDevice& loop, int depth, int runtime_s, int iops = 5000) {
  return Process({"fio", "--name=paced", "--filename=" + loop.path(), "--direct=1", "--ioengine=libaio", "--thread",
                  "--rw=randread", "--bs=4k", "--iodepth=" + std::to_string(depth),
                  "--rate_iops=" + std::to_string(iops),
                  "--time_based", "--runtime=" + std::to_string(runtime_s), "--write_lat_log=" + dir.file("paced"),
                  "--log_offset=1", "--log_alternate_epoch=1",
                  "--log_alternate_epoch_clock_id=" + std::to_string(CLOCK_BOOTTIME)},
                 dir.file("fio.log"));
}

// The IOs of a trace by what they are, each with its completion time.
std::map<IoKey, int64_t> trace_keys(const std::string& path, format::ReadStatus* status = nullptr) {
  format::TraceReader reader(path);
  std::map<IoKey, int64_t> keys;
  format::Io io;
  while (reader.next(io)) keys.emplace(IoKey{io.op == format::Op::kWrite, io.offset, io.length}, io.complete_ns);
  if (status) *status = reader.status();
  return keys;
}

// What a trace lacks of the IOs fio completed before `until`.
struct Loss {
  uint64_t completed = 0;       // fio IOs completed before `until`
  uint64_t missing = 0;         // of those, not in the trace
  uint64_t missing_early = 0;   // of those, completed more than `within` before `until`
  uint64_t mistimed = 0;        // in the trace, but its completion time is not fio's
  uint64_t uncompleted = 0;     // in the trace without a completion time (the back end missed it)
  int64_t fio_later_ns = 0;     // how much later than the trace's completion fio logged an IO, at most
  int64_t fio_earlier_ns = 0;   // and earlier
  int64_t worst_ns = 0;         // how long before `until` the earliest missing one completed
};

// How long after the kernel completes an IO fio may log it (its reaping, on
// two cores shared with other work: measured up to tens of milliseconds), and
// how far fio's log time may be ahead of the kernel's clock (fio reads the
// epoch once, then logs whole milliseconds of its own clock: measured within
// 0.8 ms).
constexpr int64_t kFioReapNs = 250'000'000;
constexpr int64_t kFioClockNs = 2'000'000;

// An fio IO is in the trace when an IO of the same op, offset and length is
// (fio's random map reads each block once), completed just before fio logged it.
Loss loss_before(const std::vector<FioCompletion>& fio, const std::map<IoKey, int64_t>& trace, int64_t until,
                 int64_t within = kDurableWithin) {
  Loss l;
  for (const auto& c : fio) {
    if (c.by_ns > until) continue;
    ++l.completed;
    if (const auto it = trace.find(c.key); it != trace.end()) {
      if (it->second == format::kNoTime) {
        ++l.uncompleted;
        continue;
      }
      l.mistimed += it->second > c.by_ns + kFioClockNs || it->second < c.by_ns - kFioReapNs;
      l.fio_later_ns = std::max(l.fio_later_ns, c.by_ns - it->second);
      l.fio_earlier_ns = std::max(l.fio_earlier_ns, it->second - c.by_ns);
      continue;
    }
    ++l.missing;
    l.missing_early += c.by_ns <= until - within;
    l.worst_ns = std::max(l.worst_ns, until - c.by_ns);
  }
  return l;
}

// The ftrace tracer is machine-wide: waits while another capture holds it.
bool wait_for_free_tracer() {
  for (int t = 0; t < 600; ++t) {
    if (read_file("/sys/kernel/tracing/current_tracer") == "nop\n") return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

// A SIGKILLed blktrace recorder cannot restore what it set: once armed, this
// puts back the tracer, the trace clock, the buffer's size and wakeup level
// and the device's trace switch, and removes the recorder's trace instance.
struct KilledTracerReset {
  explicit KilledTracerReset(std::string device) : device(std::move(device)) {
    const std::string clocks = read_file("/sys/kernel/tracing/trace_clock");  // "local [boot] ...": [] is selected
    const size_t open = clocks.find('['), close = clocks.find(']');
    if (open != std::string::npos && close != std::string::npos) clock = clocks.substr(open + 1, close - open - 1);
    buffer_kb = test::tracefs_buffer_kb();
    buffer_percent = read_file("/sys/kernel/tracing/buffer_percent");
  }
  ~KilledTracerReset() {
    if (!armed) return;
    std::ofstream("/sys/kernel/tracing/current_tracer") << "nop";
    if (!clock.empty()) std::ofstream("/sys/kernel/tracing/trace_clock") << clock;
    std::ofstream("/sys/kernel/tracing/buffer_size_kb") << buffer_kb;
    std::ofstream("/sys/kernel/tracing/buffer_percent") << buffer_percent;
    std::ofstream("/sys/block/" + device + "/trace/enable") << "0";
    // The instance that kept the tracer's thread-to-process table filled.
    const std::string instance = "/sys/kernel/tracing/instances/iotape-tgid-" + std::to_string(recorder);
    std::ofstream(instance + "/events/sched/sched_process_exit/enable") << "0";
    ::rmdir(instance.c_str());
  }
  std::string device;
  pid_t recorder = 0;
  std::string clock;  // as they were before the capture
  std::string buffer_kb;
  std::string buffer_percent;
  bool armed = false;
};

// The file as each fdatasync of an in-process capture left it.
struct DurableState {
  int64_t at_ns;     // when the fdatasync had returned
  uint64_t bytes;    // what it made durable
  std::string file;  // the whole file then: a power loss from then on keeps its first `bytes`
};

struct DurableStates {
  std::vector<DurableState> states;  // the last one: the closed file
};

// Records `device` with `backend` in this process, as `iotape record` would,
// while `workload` runs, keeping the file as every flush's fdatasync left it.
DurableStates record_durable_states(const std::string& backend, const std::string& device, const std::string& path,
                                    const std::function<void()>& workload) {
  capture::RecordOptions o;
  o.devices = {device};
  o.backend = backend;
  o.output.path = path;
  o.output.writer.durability = format::Durability::kFdatasync;
  o.output.writer.flush_interval_ns = kFlushInterval;
  o.output.writer.zstd_level = 1;
  DurableStates out;
  std::atomic<bool> started{false}, stop{false}, ended{false};
  capture::RecordCallbacks cb;
  cb.note = [&](const std::string& note) { started = started || note.starts_with("recording"); };
  cb.durable = [&](const std::string& file, uint64_t bytes) {
    out.states.push_back({host::boottime_ns(), bytes, read_file(file)});
  };
  capture::RecordResult result;
  std::string error;
  std::thread recorder([&] {
    try {
      result = capture::record(o, stop, cb);
    } catch (const std::exception& e) {
      error = e.what();
    }
    ended = true;
  });
  struct Join {  // the capture stops, restoring the kernel's settings, whatever the workload did
    std::atomic<bool>& stop;
    std::thread& recorder;
    ~Join() {
      stop = true;
      recorder.join();
    }
  };
  {
    Join join{stop, recorder};
    for (int t = 0; t < 3000 && !started && !ended; ++t) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    REQUIRE(started);
    workload();
  }
  REQUIRE(error.empty());
  CHECK_FALSE(result.write_failed);
  return out;
}

// Checks every durable state against fio's completions: each holds every IO
// that completed more than kDurableWithin before the next state, and the
// closed file holds them all. Returns the worst loss: how long before the
// next state the earliest IO missing from a state completed.
int64_t check_durable_states(const DurableStates& c, const std::vector<FioCompletion>& fio, const TempDir& dir) {
  REQUIRE(c.states.size() >= 4);  // a flush about every second of fio's run
  std::set<IoKey> keys;
  for (const auto& f : fio) keys.insert(f.key);
  REQUIRE(keys.size() == fio.size());  // each IO is told apart by what it is
  int64_t worst = 0;
  for (size_t i = 0; i < c.states.size(); ++i) {
    const DurableState& s = c.states[i];
    const bool closed = i + 1 == c.states.size();
    const int64_t until = closed ? INT64_MAX : c.states[i + 1].at_ns;
    REQUIRE(s.file.size() >= s.bytes);
    const std::string image = dir.file("durable.iot");
    write_file(image, s.file.substr(0, s.bytes));
    format::ReadStatus status;
    const Loss l = loss_before(fio, trace_keys(image, &status), until);
    INFO("state " << i << " of " << c.states.size() << ": " << s.bytes << " bytes, " << l.completed
                  << " IOs completed before the next, " << l.missing << " missing, " << l.uncompleted
                  << " without a completion time; fio logged IOs up to "
                  << l.fio_later_ns / 1e6 << " ms after and " << l.fio_earlier_ns / 1e6
                  << " ms before their completion in the trace");
    CHECK_FALSE(status.damaged);
    CHECK(l.missing_early == 0);
    CHECK(l.mistimed == 0);
    if (closed)
      CHECK(l.missing == 0);
    else
      worst = std::max(worst, l.worst_ns);
  }
  return worst;
}

}  // namespace

TEST_CASE("IssueOrder releases completed IOs in issue order before the cutoff", "[record]") {
  capture::IssueOrder order(1000);
  std::vector<int64_t> out;
  const observer::IoSink emit = [&](const format::Io& io) { out.push_back(io.issue_ns); };
  auto add = [&](std::initializer_list<int64_t> issues) {
    for (int64_t t : issues) {
      format::Io io;
      io.issue_ns = t;
      io.comm = "x";
      order.add(io);
    }
  };
  add({50, 10, 30});  // one poll: completion order differs from issue order
  order.release(20, emit);
  CHECK(out == std::vector<int64_t>{10});
  add({20, 60, 5});   // 5 and 20 completed after 10 was written: they go out late, still in order
  order.release(70, emit);
  CHECK(out == std::vector<int64_t>{10, 5, 20, 30, 50, 60});
  add({300, 200});
  order.release(0, emit, true);
  CHECK(out == std::vector<int64_t>{10, 5, 20, 30, 50, 60, 200, 300});
  CHECK(order.held() == 0);

  capture::IssueOrder bounded(2);
  out.clear();
  for (int64_t t : {3, 1, 2, 4}) {
    format::Io io;
    io.issue_ns = t;
    bounded.add(io);
  }
  bounded.release(0, emit);  // none before the cutoff, but only 2 may be held
  CHECK(out == std::vector<int64_t>{1, 2});

  // Many runs of jittered IOs: every IO comes out exactly once.
  capture::IssueOrder many(1 << 20);
  out.clear();
  uint64_t added = 0, seed = 1;
  for (int64_t poll = 0; poll < 2000; ++poll) {
    for (int i = 0; i < 7; ++i) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      format::Io io;
      io.issue_ns = poll * 10 - static_cast<int64_t>((seed >> 33) % 80);
      many.add(io);
      ++added;
    }
    many.release(poll * 10 - 50, emit);
  }
  many.release(0, emit, true);
  CHECK(out.size() == added);
}

TEST_CASE("ebpf back end records exactly fio's IOs", "[record][ebpf]") { exact_capture_test("ebpf"); }

TEST_CASE("blktrace back end records exactly fio's IOs", "[record][blktrace]") { exact_capture_test("blktrace"); }

TEST_CASE("ebpf back end records exactly fio's IOs and fsyncs under mq-deadline", "[record][ebpf]") {
  exact_capture_test("ebpf", "mq-deadline", 16);
}

TEST_CASE("blktrace back end records exactly fio's IOs and fsyncs under mq-deadline", "[record][blktrace]") {
  exact_capture_test("blktrace", "mq-deadline", 16);
}

TEST_CASE("ebpf back end records exactly the requests beyond its slot table", "[record][ebpf]") {
  if (!require_root("record block IOs")) return;
  TempDir dir;
  LoopDevice loop(256u << 20);
  set_nomerges(loop);
  Scheduler sched(loop, "mq-deadline");
  const std::string nr_requests = "/sys/block/" + loop.name() + "/queue/nr_requests";
  // The slot table is sized at the start (the larger of 128 driver tags and
  // 64 scheduler requests); raised to 256 afterwards, scheduler tags 128-255
  // have no slot and their entries go to the hash table.
  std::ofstream(nr_requests) << "64";
  const BlockStat before = block_stat(loop.name());
  Recording rec("ebpf", loop.path(), dir.file("t.iot"), dir.file("record.log"));
  std::ofstream(nr_requests) << "256";
  REQUIRE(std::stoul(read_file(nr_requests)) == 256);
  Process fio({"fio", "--name=deep", "--filename=" + loop.path(), "--direct=1", "--ioengine=io_uring",
               "--rw=randread", "--bs=4k", "--iodepth=256", "--iodepth_batch_submit=64", "--number_ios=20000",
               "--thread", "--output-format=json", "--output=" + dir.file("fio.json")},
              dir.file("fio.log"));
  REQUIRE(fio.wait() == 0);
  REQUIRE(rec.stop(SIGINT) == 0);
  const BlockStat after = block_stat(loop.name());
  const auto j = nlohmann::json::parse(read_file(dir.file("fio.json")));
  const uint64_t fio_reads = j["jobs"][0]["read"]["total_ios"].get<uint64_t>();
  INFO(read_file(dir.file("record.log")));
  const TraceContents t = read_trace({dir.file("t.iot")}, loop.dev_major(), loop.dev_minor());
  CHECK(fio_reads == 20000);
  CHECK(t.dropped == 0);
  CHECK(t.totals.ios[0] == fio_reads);
  CHECK(t.totals.ios[0] == after.read_ios - before.read_ios);
  CHECK(t.totals.ios[1] == 0);
  CHECK(t.without_completion == t.uncompleted);
}

// The smallest buffer (512 records a CPU) at full speed: what does not fit
// is counted, never lost silently, and a filling ring wakes the recorder long
// before its 100 ms timer would (which alone would keep a few percent).
TEST_CASE("ebpf back end with the smallest buffer counts every IO it cannot keep", "[record][ebpf]") {
  if (!require_root("record block IOs")) return;
  TempDir dir;
  LoopDevice loop(256u << 20);
  set_nomerges(loop);
  const BlockStat before = block_stat(loop.name());
  Recording rec("ebpf", loop.path(), dir.file("t.iot"), dir.file("record.log"), {"--buffer", "4K"});
  Process fio({"fio", "--name=fast", "--filename=" + loop.path(), "--direct=1", "--ioengine=io_uring",
               "--rw=randread", "--bs=4k", "--iodepth=32", "--number_ios=65536", "--thread"},
              dir.file("fio.log"));
  REQUIRE(fio.wait() == 0);
  REQUIRE(rec.stop(SIGINT) == 0);
  const BlockStat after = block_stat(loop.name());
  INFO(read_file(dir.file("record.log")));
  const TraceContents t = read_trace({dir.file("t.iot")}, loop.dev_major(), loop.dev_minor());
  const uint64_t reads = after.read_ios - before.read_ios;
  INFO(t.totals.ios[0] << " IOs recorded, " << t.dropped << " dropped, " << reads << " by the device's counters");
  CHECK(reads == 65536);
  CHECK(t.totals.ios[0] + t.dropped == reads);
  CHECK(t.totals.ios[0] > reads / 2);
}

// Both back ends on one fio run (with fsyncs every `fsync_every` writes);
// `blk_events`: the blktrace back end's --blk-events.
void back_ends_agree_test(const std::string& blk_events, int fsync_every = 0) {
  if (!require_root("record block IOs")) return;
  const bool submitters = blk_events == "all";
  TempDir dir;
  LoopDevice loop(256u << 20);
  set_nomerges(loop);
  const BlockStat before = block_stat(loop.name());
  Recording ebpf("ebpf", loop.path(), dir.file("e.iot"), dir.file("e.log"));
  Recording blk("blktrace", loop.path(), dir.file("b.iot"), dir.file("b.log"), {"--blk-events", blk_events});
  const FioRun fio = run_fio(dir, loop.path(), fsync_every);
  REQUIRE(ebpf.stop(SIGINT) == 0);
  REQUIRE(blk.stop(SIGTERM) == 0);
  const BlockStat after = block_stat(loop.name());
  const auto e = read_trace({dir.file("e.iot")}, loop.dev_major(), loop.dev_minor());
  const auto b = read_trace({dir.file("b.iot")}, loop.dev_major(), loop.dev_minor());
  check_exact(e, fio, before, after);
  INFO(read_file(dir.file("b.log")));
  check_exact(b, fio, before, after, submitters);
  // The same request seen by both: the same submitter, and issue and
  // completion times that agree to within the few hundred nanoseconds between
  // the blk tracer's and the BPF programs' runs on the same tracepoints.
  struct Seen {
    int64_t issue, complete;
    uint32_t pid;
    std::string comm;
  };
  auto seen = [](const TraceContents& t) {
    std::map<IoKey, std::vector<Seen>> m;
    for (size_t i = 0; i < t.all.size(); ++i) {
      const format::Io& io = t.all[i];
      m[{io.op == format::Op::kWrite, io.offset, io.length}].push_back(
          {io.issue_ns, io.complete_ns, io.pid, t.comms[i]});
    }
    return m;
  };
  const auto es = seen(e), bs = seen(b);
  std::vector<int64_t> issue_diffs, complete_diffs;
  uint64_t other_submitter = 0;
  for (const auto& [key, ios] : es) {
    const auto it = bs.find(key);
    if (it == bs.end() || it->second.size() != ios.size()) continue;
    for (size_t i = 0; i < ios.size(); ++i) {
      issue_diffs.push_back(std::llabs(ios[i].issue - it->second[i].issue));
      complete_diffs.push_back(std::llabs(ios[i].complete - it->second[i].complete));
      other_submitter += submitters && (ios[i].pid != it->second[i].pid || ios[i].comm != it->second[i].comm);
    }
  }
  // Every IO of both (an fsync's empty writes share one key), flushes aside.
  REQUIRE(issue_diffs.size() >= fio.iolog.size());
  CHECK(other_submitter == 0);
  std::sort(issue_diffs.begin(), issue_diffs.end());
  std::sort(complete_diffs.begin(), complete_diffs.end());
  INFO("median |issue difference| " << issue_diffs[issue_diffs.size() / 2] << " ns, |completion difference| "
                                    << complete_diffs[complete_diffs.size() / 2] << " ns");
  CHECK(issue_diffs[issue_diffs.size() / 2] < 5'000);
  CHECK(complete_diffs[complete_diffs.size() / 2] < 5'000);
}

TEST_CASE("both back ends agree on one fio run", "[record][ebpf][blktrace]") { back_ends_agree_test("all"); }

TEST_CASE("blktrace back end with issue and completion events only agrees with the ebpf back end, fsyncs too",
          "[record][ebpf][blktrace]") {
  back_ends_agree_test("issue-complete", 16);
}

TEST_CASE("the header describes the capture, --anonymize hides names", "[record][ebpf]") {
  if (!require_root("record block IOs")) return;
  TempDir dir;
  LoopDevice loop(64u << 20);
  Recording rec("ebpf", loop.path(), dir.file("t.iot"), dir.file("record.log"), {"--anonymize"});
  REQUIRE(run("dd if=" + loop.path() + " of=/dev/null bs=4k count=10 iflag=direct").exit_code == 0);
  REQUIRE(rec.stop(SIGTERM) == 0);
  struct stat st;
  REQUIRE(::stat(dir.file("t.iot").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  format::TraceReader reader(dir.file("t.iot"));
  const auto& h = reader.header();
  CHECK(h.source() == v1::SOURCE_EBPF);
  CHECK(h.clock() == v1::CLOCK_DOMAIN_BOOTTIME);
  CHECK(h.host().empty());
  CHECK_FALSE(h.kernel().empty());
  CHECK(h.anchor_unix_ns() > 0);
  CHECK(h.trace_id().size() == 32);
  REQUIRE(h.devices_size() == 1);
  CHECK(h.devices(0).name() == loop.name());
  CHECK(h.devices(0).major() == loop.dev_major());
  CHECK(h.devices(0).minor() == loop.dev_minor());
  CHECK(h.devices(0).size_bytes() == 64u << 20);
  CHECK(h.devices(0).logical_block_size() == 512);
  CHECK(h.metadata().at("capture.backend") == "ebpf");
  // How idle CPUs wait here, as sysfs says, read apart from the recorder.
  std::ifstream driver("/sys/devices/system/cpu/cpuidle/current_driver");
  std::string name;
  if (std::getline(driver, name)) {
    REQUIRE(h.metadata().count("host.cpu_idle") == 1);
    CHECK(h.metadata().at("host.cpu_idle").rfind("driver " + name + ", governor ", 0) == 0);
  }
  format::Io io;
  uint64_t dd = 0;
  while (reader.next(io)) {
    CHECK(io.comm != "dd");
    dd += io.comm.substr(0, 2) == "c-";
  }
  CHECK(dd == 10);
}

TEST_CASE("bio-based devices are refused with a reason", "[record]") {
  if (!require_root("record block IOs")) return;
  if (!require(std::filesystem::exists("/sys/block/zram0"), "a zram0 device (the zram driver)")) return;
  TempDir dir;
  const auto r = run(iotape_binary() + " record -d /dev/zram0 -o " + dir.file("t.iot") + " --duration 1s");
  CHECK(r.exit_code == 77);  // a device refused
  CHECK(r.output.find("bio-based") != std::string::npos);
}

TEST_CASE("record refuses --blk-events issue-complete without the blktrace back end, and with --pid or --comm",
          "[record]") {
  if (!require_root("record block IOs")) return;
  TempDir dir;
  LoopDevice loop(16u << 20);
  const std::string base = iotape_binary() + " record -d " + loop.path() + " -o " + dir.file("t.iot") +
                           " --duration 1s --blk-events issue-complete";
  for (const std::string extra : {"", " --backend blktrace --pid 1", " --backend blktrace --comm fio"}) {
    INFO(extra);
    const auto r = run(base + extra);
    CHECK(r.exit_code == 64);
    CHECK(r.output.find(extra.empty() ? "blktrace back end" : "--pid and --comm") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(dir.file("t.iot")));
  }
}

TEST_CASE("rotation writes numbered parts that read as one trace", "[record][ebpf]") {
  if (!require_root("record block IOs")) return;
  TempDir dir;
  LoopDevice loop(64u << 20);
  const BlockStat before = block_stat(loop.name());
  Recording rec("ebpf", loop.path(), dir.file("week.iot"), dir.file("record.log"),
                {"--rotate-size", "1K", "--flush-interval", "100ms"});
  Process fio({"fio", "--name=rot", "--filename=" + loop.path(), "--direct=1", "--ioengine=io_uring", "--thread",
               "--rw=randread", "--bs=4k", "--iodepth=1", "--rate_iops=600", "--number_ios=3000"},
              dir.file("fio.log"));
  REQUIRE(fio.wait() == 0);
  REQUIRE(rec.stop(SIGINT) == 0);
  const BlockStat after = block_stat(loop.name());
  std::vector<std::string> parts;
  for (int i = 0;; ++i) {
    char name[32];
    std::snprintf(name, sizeof name, "week.%04d.iot", i);
    if (!std::filesystem::exists(dir.file(name))) break;
    parts.push_back(dir.file(name));
  }
  REQUIRE(parts.size() >= 3);
  std::string id;
  for (size_t i = 0; i < parts.size(); ++i) {
    format::TraceReader one(parts[i]);
    CHECK(one.header().part() == i);
    if (i == 0) id = one.header().trace_id();
    CHECK(one.header().trace_id() == id);
  }
  const auto t = read_trace(parts, loop.dev_major(), loop.dev_minor());
  CHECK(t.totals.ios[0] == 3000);
  CHECK(t.totals.ios[0] == after.read_ios - before.read_ios);
  CHECK(t.without_completion == t.uncompleted);
}

TEST_CASE("record: --comm keeps only the IOs of that submitter", "[record][ebpf][blktrace]") {
  if (!require_root("record block IOs")) return;
  for (const std::string backend : {"ebpf", "blktrace"}) {
    INFO(backend);
    TempDir dir;
    LoopDevice loop(64u << 20);
    Recording rec(backend, loop.path(), dir.file("t.iot"), dir.file("record.log"), {"--comm", "dd"});
    REQUIRE(run("fio --name=other --filename=" + loop.path() +
                " --direct=1 --ioengine=psync --rw=randread --bs=4k --number_ios=100 --thread")
                .exit_code == 0);
    REQUIRE(run("dd if=" + loop.path() + " of=/dev/null bs=8k count=10 iflag=direct").exit_code == 0);
    REQUIRE(rec.stop(SIGINT) == 0);
    format::TraceReader reader(dir.file("t.iot"));
    uint64_t ios = 0, not_dd = 0;
    format::Io io;
    while (reader.next(io)) {
      ++ios;
      not_dd += io.comm != "dd" || io.length != 8192;
    }
    CHECK(ios == 10);
    CHECK(not_dd == 0);
    CHECK(reader.header().metadata().at("capture.comm") == "dd");
  }
}

TEST_CASE("SIGKILL mid-capture leaves a trace readable up to the last flush", "[record]") {
  if (!require_root("record block IOs")) return;
  TempDir dir;
  LoopDevice loop(64u << 20);
  Recording rec("ebpf", loop.path(), dir.file("t.iot"), dir.file("record.log"), {"--flush-interval", "200ms"});
  Process fio({"fio", "--name=kill", "--filename=" + loop.path(), "--direct=1", "--ioengine=io_uring", "--thread",
               "--rw=randread", "--bs=4k", "--iodepth=4", "--time_based", "--runtime=5"},
              dir.file("fio.log"));
  std::this_thread::sleep_for(std::chrono::milliseconds(4000));
  CHECK(rec.stop(SIGKILL) == 128 + SIGKILL);
  REQUIRE(fio.wait() == 0);
  format::TraceReader reader(dir.file("t.iot"));
  uint64_t ios = 0;
  format::Io io;
  uint64_t other = 0;
  while (reader.next(io)) {
    ++ios;
    other += io.op != format::Op::kRead;
  }
  CHECK(other == 0);
  CHECK_FALSE(reader.status().damaged);
  CHECK_FALSE(reader.has_index());
  CHECK(ios > 1000);  // at least the first second of fio's IOs was flushed
}

TEST_CASE("a full file system ends the capture with a valid trace", "[record]") {
  if (!require_root("mount tmpfs and record block IOs")) return;
  TempDir dir;
  const std::string mnt = dir.file("small");
  std::filesystem::create_directory(mnt);
  REQUIRE(run("mount -t tmpfs -o size=128k iotape-full " + mnt).exit_code == 0);
  struct Unmount {
    std::string path;
    ~Unmount() { run("umount " + path); }
  } unmount{mnt};
  LoopDevice loop(64u << 20);
  Recording rec("ebpf", loop.path(), mnt + "/t.iot", dir.file("record.log"), {"--flush-interval", "100ms"});
  // At a fixed rate, so that the first flushes fit in the file system and
  // it fills over seconds (unthrottled, one 100 ms flush of a tmpfs loop
  // device's IOs could exceed 128 KiB by itself and leave no IO to check).
  Process fio({"fio", "--name=full", "--filename=" + loop.path(), "--direct=1", "--ioengine=io_uring", "--thread",
               "--rw=randrw", "--bs=4k", "--iodepth=8", "--rate_iops=10000", "--time_based", "--runtime=60"},
              dir.file("fio.log"));
  for (int t = 0; t < 600 && rec.process().running(); ++t) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  fio.signal(SIGTERM);
  fio.wait();
  const std::string log = read_file(dir.file("record.log"));
  INFO(log);
  REQUIRE_FALSE(rec.process().running());
  CHECK(rec.process().wait() == 3);  // the documented exit status for an unwritable output
  CHECK(log.find("No space left on device") != std::string::npos);
  format::TraceReader reader(mnt + "/t.iot");
  uint64_t ios = 0;
  format::Io io;
  while (reader.next(io)) ++ios;
  CHECK_FALSE(reader.status().damaged);
  CHECK(ios > 0);
}

// The README's promise: an IO that completed more than the flush interval
// plus 0.1 s before `iotape record` was killed is in the trace. Both back
// ends, at QD1 (1 s interval; --no-sync with blktrace) and QD8 (0.5 s), each
// killed at a random moment of fio's run.
TEST_CASE("SIGKILL loses at most the IOs of the last flush interval plus 0.1 s", "[record][ebpf][blktrace]") {
  if (!require_root("record block IOs")) return;
  struct Kill {
    std::string backend;
    int depth;
    int64_t interval_ns;  // --flush-interval
    bool no_sync;         // --no-sync: a kill keeps the bound all the same
    double at_s;          // into fio's run
  };
  const unsigned seed = std::random_device{}();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> moment(2.0, 5.0);
  std::vector<Kill> kills;
  for (const char* backend : {"ebpf", "blktrace"}) {
    kills.push_back({backend, 1, kFlushInterval, backend == std::string("blktrace"), moment(rng)});
    kills.push_back({backend, 8, kFlushInterval / 2, false, moment(rng)});
  }
  constexpr int kIops = 10'000;
  int64_t worst = INT64_MIN;  // the loss beyond the flush interval, over the kills
  for (const Kill& k : kills) {
    const int64_t within = k.interval_ns + kFlushMargin;
    INFO(k.backend << ", QD" << k.depth << ", --flush-interval " << k.interval_ns / 1'000'000 << "ms"
                   << (k.no_sync ? " --no-sync" : "") << ", killed " << k.at_s << " s into fio (seed " << seed
                   << ")");
    TempDir dir;
    LoopDevice loop(1u << 30);  // 262,144 blocks: fio's random map reads each at most once
    set_nomerges(loop);
    KilledTracerReset reset(loop.name());
    if (k.backend == "blktrace") REQUIRE(wait_for_free_tracer());
    std::vector<std::string> options{"--flush-interval", std::to_string(k.interval_ns / 1'000'000) + "ms"};
    if (k.no_sync) options.push_back("--no-sync");
    Recording rec(k.backend, loop.path(), dir.file("t.iot"), dir.file("record.log"), options);
    const auto fio_start = std::chrono::steady_clock::now();
    Process fio = paced_fio(dir, loop, k.depth, static_cast<int>(std::ceil(k.at_s)) + 1, kIops);
    std::this_thread::sleep_until(fio_start + std::chrono::duration<double>(k.at_s));
    reset.armed = k.backend == "blktrace";
    reset.recorder = rec.process().pid();
    const int64_t killed_at = host::boottime_ns();
    CHECK(rec.stop(SIGKILL) == 128 + SIGKILL);
    REQUIRE(fio.wait() == 0);
    format::ReadStatus status;
    const std::map<IoKey, int64_t> trace = trace_keys(dir.file("t.iot"), &status);
    CHECK_FALSE(status.damaged);
    const std::vector<FioCompletion> fio_ios = read_fio_completions(dir.file("paced_clat.1.log"));
    std::set<IoKey> fio_keys;
    for (const auto& c : fio_ios) fio_keys.insert(c.key);
    REQUIRE(fio_keys.size() == fio_ios.size());  // each IO is told apart by what it is
    uint64_t foreign = 0;
    for (const auto& [key, complete] : trace) foreign += !fio_keys.count(key);
    const Loss l = loss_before(fio_ios, trace, killed_at, within);
    WARN("SIGKILL of the " << k.backend << " recorder (--flush-interval " << k.interval_ns / 1'000'000 << "ms"
                           << (k.no_sync ? " --no-sync" : "") << ") "
                           << k.at_s << " s into fio (" << kIops << " IOPS, QD" << k.depth << "): " << l.completed
                           << " IOs completed before it, " << trace.size()
                           << " in the trace (" << l.uncompleted << " without a completion time)"
                           << "; the earliest missing completed " << l.worst_ns / 1e6
                           << " ms before the kill (bound " << within / 1e6 << " ms); fio logged IOs up to "
                           << l.fio_later_ns / 1e6 << " ms after and " << l.fio_earlier_ns / 1e6
                           << " ms before their completion in the trace");
    CHECK(foreign == 0);
    CHECK(l.completed > 1'000);  // fio ran (QD1 under the blk tracer, on a busy machine, falls far short of its rate)
    CHECK(l.missing_early == 0);
    CHECK(l.mistimed == 0);
    CHECK(l.worst_ns <= within);
    worst = std::max(worst, l.worst_ns - k.interval_ns);
  }
  WARN("SIGKILL, worst of " << kills.size() << " kills: the earliest missing IO completed the flush interval "
                            << std::showpos << worst / 1e6 << " ms before the kill (bound " << kFlushMargin / 1e6
                            << " ms)");
}

// A power loss keeps what the last fdatasync made durable: the file as it
// was after each flush must hold every IO that completed more than the flush
// interval plus 0.1 s before the next flush made a newer state durable.
TEST_CASE("a power loss at any moment loses at most the last flush interval plus 0.1 s", "[record][ebpf][blktrace]") {
  if (!require_root("record block IOs")) return;
  for (const std::string backend : {"ebpf", "blktrace"}) {
    INFO(backend);
    TempDir dir;
    LoopDevice loop(256u << 20);
    set_nomerges(loop);
    if (backend == "blktrace") REQUIRE(wait_for_free_tracer());
    const DurableStates c = record_durable_states(backend, loop.path(), dir.file("t.iot"), [&] {
      REQUIRE(paced_fio(dir, loop, 8, 5, 10'000).wait() == 0);
    });
    const int64_t worst = check_durable_states(c, read_fio_completions(dir.file("paced_clat.1.log")), dir);
    WARN(backend << ", power loss (10,000 IOPS, QD8, " << c.states.size() << " fdatasyncs): the earliest IO missing "
         "from a durable state completed " << worst / 1e6 << " ms before the next state (bound "
         << kDurableWithin / 1e6 << " ms)");
    CHECK(worst <= kDurableWithin);
    format::TraceReader reader(dir.file("t.iot"));
    format::Io io;
    while (reader.next(io)) {
    }
    CHECK(reader.late_ios() == 0);  // the in-flight tables bound what can still come: nothing out of order
  }
}

// A request stuck in the device (here: a write to a loop device whose backing
// file system is frozen) is not waited for beyond the flush interval: the
// reads after it are durable in time, and it is written late, and counted,
// when it completes.
TEST_CASE("a stuck request is written late and holds back no other IO", "[record][ebpf][blktrace]") {
  if (!require_root("record block IOs, freeze a file system")) return;
  const std::string blkio = "/sys/fs/cgroup/blkio";
  if (!require(std::filesystem::exists(blkio), "a cgroup v1 blkio hierarchy (the stuck write needs a loop worker "
                                              "of its own)"))
    return;
  for (const std::string backend : {"ebpf", "blktrace"}) {
    INFO(backend);
    TempDir dir;
    LoopDevice lower(512u << 20);
    REQUIRE(run("mkfs.ext4 -q " + lower.path()).exit_code == 0);
    const std::string mnt = dir.file("fs");
    std::filesystem::create_directory(mnt);
    REQUIRE(run("mount -o noatime " + lower.path() + " " + mnt).exit_code == 0);  // atime updates would block reads
    struct Unmount {
      std::string path;
      ~Unmount() { run("umount " + path); }
    } unmount{mnt};
    // 51,200 blocks: fio's random map reads each at most once in its 6 s.
    REQUIRE(run("fallocate -l 200M " + mnt + "/disk").exit_code == 0);
    struct FileLoop {  // a loop device over a file of the frozen file system
      std::string dev, nomerges;  // the setting found, put back: it outlives the detach
      ~FileLoop() {
        if (dev.empty()) return;
        if (!nomerges.empty()) write_file("/sys/block/" + dev.substr(5) + "/queue/nomerges", nomerges);
        run("losetup -d " + dev);
      }
    } upper{};
    const CommandResult attached = run("losetup -f --show " + mnt + "/disk");
    REQUIRE(attached.exit_code == 0);
    upper.dev = attached.output.substr(0, attached.output.find('\n'));
    upper.nomerges = read_file("/sys/block/" + upper.dev.substr(5) + "/queue/nomerges");
    std::ofstream("/sys/block/" + upper.dev.substr(5) + "/queue/nomerges") << "2";
    // The loop driver runs each cgroup's requests on a worker of its own: the
    // stuck write must not be on the one fio's reads wait for.
    const std::string cgroup = blkio + "/iotape-stuck-" + std::to_string(::getpid());
    std::filesystem::create_directory(cgroup);
    struct RemoveCgroup {
      std::string path;
      ~RemoveCgroup() { ::rmdir(path.c_str()); }
    } remove_cgroup{cgroup};
    constexpr uint64_t kStuckOffset = 100 * 4096;
    int64_t stuck_for = 0;
    if (backend == "blktrace") REQUIRE(wait_for_free_tracer());
    const DurableStates c = record_durable_states(backend, upper.dev, dir.file("t.iot"), [&] {
      Process fio({"fio", "--name=paced", "--filename=" + upper.dev, "--direct=1", "--ioengine=libaio", "--thread",
                   "--rw=randread", "--bs=4k", "--iodepth=4", "--rate_iops=5000", "--time_based", "--runtime=6",
                   "--offset=1M", "--write_lat_log=" + dir.file("paced"), "--log_offset=1", "--log_alternate_epoch=1",
                   "--log_alternate_epoch_clock_id=" + std::to_string(CLOCK_BOOTTIME)},
                  dir.file("fio.log"));
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      REQUIRE(run("fsfreeze -f " + mnt).exit_code == 0);
      Process dd({"sh", "-c",
                  "echo $$ > " + cgroup + "/cgroup.procs && exec dd if=/dev/zero of=" + upper.dev +
                      " bs=4k count=1 seek=" + std::to_string(kStuckOffset / 4096) + " oflag=direct"},
                 dir.file("dd.log"));
      struct Thaw {  // after dd: a failure thaws before dd's destructor waits for its write
        std::string path;
        bool frozen = true;
        void now() {
          if (frozen) REQUIRE(run("fsfreeze -u " + path).exit_code == 0);
          frozen = false;
        }
        ~Thaw() {
          if (frozen) run("fsfreeze -u " + path);
        }
      } thaw{mnt};
      const int64_t frozen_at = host::boottime_ns();
      std::this_thread::sleep_for(std::chrono::milliseconds(3000));
      REQUIRE(dd.running());  // still stuck
      thaw.now();
      REQUIRE(dd.wait() == 0);
      stuck_for = host::boottime_ns() - frozen_at;
      REQUIRE(fio.wait() == 0);
    });
    INFO(read_file(dir.file("dd.log")));
    const int64_t worst = check_durable_states(c, read_fio_completions(dir.file("paced_clat.1.log")), dir);
    format::TraceReader reader(dir.file("t.iot"));
    format::Io io;
    uint64_t stuck = 0;
    int64_t stuck_latency = 0;
    while (reader.next(io))
      if (io.op == format::Op::kWrite && io.offset == kStuckOffset && io.length == 4096) {
        ++stuck;
        stuck_latency = io.complete_ns - io.issue_ns;
      }
    WARN(backend << ", a write stuck " << stuck_for / 1e6 << " ms among 5,000 reads/s: recorded with "
                 << stuck_latency / 1e6 << " ms in flight, " << reader.late_ios()
                 << " IO(s) written late; the earliest read missing from a durable state completed " << worst / 1e6
                 << " ms before the next state");
    CHECK(worst <= kDurableWithin);
    CHECK(stuck == 1);
    CHECK(stuck_latency > kFlushInterval);
    CHECK(reader.late_ios() == 1);
  }
}

namespace {

// A file system's own IO: ext4 with its journal on a loop device, under
// sqlite commits, fsynced files, git, tar, rm and fstrim. Journal commits
// are preflush and FUA writes the kernel's flush machinery sequences.
class Ext4 {
 public:
  // `mount_options`: for mount -o, e.g. no_prefetch_block_bitmaps (no
  // reads of the kernel's own a while after the mount).
  Ext4(const LoopDevice& loop, const std::string& dir, const std::string& mount_options = "") : mnt_(dir + "/mnt") {
    const auto mkfs = run("mkfs.ext4 -q -F -b 4096 -E lazy_itable_init=0,lazy_journal_init=0 " + loop.path());
    REQUIRE(mkfs.exit_code == 0);
    std::filesystem::create_directories(mnt_);
    const std::string o = mount_options.empty() ? "" : "-o " + mount_options + " ";
    REQUIRE(run("mount " + o + loop.path() + " " + mnt_).exit_code == 0);
  }
  const std::string& path() const { return mnt_; }
  ~Ext4() { run("umount " + mnt_); }
  Ext4(const Ext4&) = delete;
  Ext4& operator=(const Ext4&) = delete;

  // Application work in folder `name` of the file system, then sync.
  void work(const std::string& name) const {
    const std::string d = mnt_ + "/" + name;
    const std::string script = "set -e; mkdir " + d + "; cd " + d + R"(
python3 - <<'PY'
import os, sqlite3
c = sqlite3.connect('t.db')
c.execute('create table t(a, b)')
for i in range(150):
    c.execute('insert into t values(?, ?)', (i, 'x' * 300)); c.commit()
c.close()
for i in range(100):
    fd = os.open('f%d' % i, os.O_WRONLY | os.O_CREAT, 0o644)
    os.write(fd, b'y' * 8192); os.fsync(fd); os.close(fd)
PY
cp -r /usr/include/linux inc
git init -q g && cp -r inc/usb g/ && git -C g add -A && git -C g -c user.name=t -c user.email=t@t commit -qm w
tar cf a.tar inc
sync
rm -rf inc g a.tar
sync
fstrim )" + mnt_ + "\nsync\n";
    const auto r = run("sh -c '" + escape(script) + "'");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
  }

 private:
  static std::string escape(const std::string& s) {
    std::string out;
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out;
  }
  std::string mnt_;
};

// The device's counters once nothing is in flight and they stop moving, and
// when (CLOCK_BOOTTIME, the traces' clock) they were read: an IO a trace
// shows completed before then is in them, one after is not.
struct QuietStat {
  BlockStat stat;
  int64_t at_ns;
  int64_t monotonic_at_ns;  // the same moment on CLOCK_MONOTONIC, the blk tracer's clock here
};

QuietStat quiet_stat(const LoopDevice& loop) {
  BlockStat last = block_stat(loop.name());
  for (int t = 0; t < 100; ++t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const BlockStat now = block_stat(loop.name());
    const int64_t at = host::boottime_ns(), monotonic_at = host::monotonic_ns();
    if (now.in_flight == 0 && std::memcmp(&now, &last, sizeof now) == 0) return {now, at, monotonic_at};
    last = now;
  }
  FAIL("the device did not go quiet");
  return {};
}

// What /sys/block/*/stat counts, tallied from a trace: the kernel counts a
// write-zeroes as a write and an fsync's empty write as one too.
struct DeviceTally {
  uint64_t reads = 0, writes = 0, discards = 0, flushes = 0;
  uint64_t read_bytes = 0, write_bytes = 0, discard_bytes = 0;
};

// The IOs of `t` completed between the two readings of the counters.
DeviceTally tally(const TraceContents& t, const QuietStat& before, const QuietStat& after) {
  DeviceTally d;
  for (const format::Io& io : t.all) {
    if (io.complete_ns < before.at_ns || io.complete_ns > after.at_ns) continue;
    switch (io.op) {
      case format::Op::kRead:
        ++d.reads, d.read_bytes += io.length;
        break;
      case format::Op::kWrite:
      case format::Op::kWriteZeroes:
        ++d.writes, d.write_bytes += io.length;
        break;
      case format::Op::kDiscard:
        ++d.discards, d.discard_bytes += io.length;
        break;
      case format::Op::kFlush:
        ++d.flushes;
        break;
      default: break;
    }
  }
  return d;
}

void check_against_stat(const TraceContents& t, const QuietStat& quiet_before, const QuietStat& quiet_after) {
  const DeviceTally d = tally(t, quiet_before, quiet_after);
  const BlockStat &before = quiet_before.stat, &after = quiet_after.stat;
  CHECK(t.dropped == 0);
  CHECK(t.other_device == 0);
  CHECK(t.without_completion == 0);
  CHECK(d.reads == after.read_ios - before.read_ios);
  CHECK(d.writes == after.write_ios - before.write_ios);
  CHECK(d.discards == after.discard_ios - before.discard_ios);
  CHECK(d.flushes == after.flush_ios - before.flush_ios);
  CHECK(d.read_bytes == (after.read_sectors - before.read_sectors) * 512);
  CHECK(d.write_bytes == (after.write_sectors - before.write_sectors) * 512);
  CHECK(d.discard_bytes == (after.discard_sectors - before.discard_sectors) * 512);
  CHECK(d.writes > 1000);  // the journal's writes, the data and the fsyncs
  CHECK(d.discards > 0);
  CHECK(d.flushes > 100);
}

// The capture's closing count of completions it could not place.
uint64_t unmatched_completions(const std::string& path) {
  format::TraceReader last(path);
  REQUIRE(last.index());
  if (const auto it = last.metadata().find("capture.unmatched_completions"); it != last.metadata().end())
    return std::stoull(it->second);
  FAIL("no capture.unmatched_completions in " << path);
  return 0;
}

// (op, offset, length) of every IO the device was issued, as the blk tracer
// names ops; the flush requests as ('N', 0, 0).
using Request = std::tuple<char, uint64_t, uint64_t>;

std::vector<std::pair<Request, int64_t>> issued_requests(const TraceContents& t, const QuietStat& before,
                                                         const QuietStat& after) {
  std::vector<std::pair<Request, int64_t>> out;
  for (const format::Io& io : t.all) {
    if (!io.has_complete() || (io.op == format::Op::kWrite && io.length == 0))
      continue;  // an empty write is never issued
    if (io.complete_ns < before.at_ns || io.complete_ns > after.at_ns) continue;
    const char op = io.op == format::Op::kRead      ? 'R'
                    : io.op == format::Op::kWrite   ? 'W'
                    : io.op == format::Op::kDiscard ? 'D'
                    : io.op == format::Op::kFlush   ? 'N'
                                                    : '?';
    out.push_back({{op, io.op == format::Op::kFlush ? 0 : io.offset, io.length}, io.complete_ns - io.issue_ns});
  }
  return out;
}

}  // namespace

TEST_CASE("both back ends record a file system's IO exactly as the device counts it", "[record][ebpf][blktrace]") {
  if (!require_root("record block IOs")) return;
  TempDir dir;
  LoopDevice loop(256u << 20);
  Ext4 fs(loop, dir.path());
  quiet_stat(loop);
  Recording ebpf("ebpf", loop.path(), dir.file("e.iot"), dir.file("e.log"));
  Recording blk("blktrace", loop.path(), dir.file("b.iot"), dir.file("b.log"));
  const QuietStat before = quiet_stat(loop);
  fs.work("a");
  const QuietStat after = quiet_stat(loop);
  REQUIRE(ebpf.stop(SIGINT) == 0);
  REQUIRE(blk.stop(SIGTERM) == 0);
  INFO(read_file(dir.file("e.log")) << read_file(dir.file("b.log")));
  const auto e = read_trace({dir.file("e.iot")}, loop.dev_major(), loop.dev_minor());
  const auto b = read_trace({dir.file("b.iot")}, loop.dev_major(), loop.dev_minor());
  {
    INFO("ebpf");
    check_against_stat(e, before, after);
    CHECK(unmatched_completions(dir.file("e.iot")) == 0);
  }
  {
    INFO("blktrace");
    check_against_stat(b, before, after);
    CHECK(unmatched_completions(dir.file("b.iot")) == 0);
  }
  // One by one: the same requests, with the same submitters, in the window
  // the counters were compared over (before it, a process probing the new
  // file system may read while only the recorder started first records).
  auto keyed = [&](const TraceContents& t) {
    std::multiset<std::tuple<int, uint64_t, uint64_t, uint32_t, uint32_t>> s;
    for (const format::Io& io : t.all)
      if (io.complete_ns >= before.at_ns && io.complete_ns <= after.at_ns)
        s.emplace(static_cast<int>(io.op), io.offset, io.length, io.flags & format::flag::kPreflush, io.pid);
    return s;
  };
  const auto ek = keyed(e), bk = keyed(b);
  std::vector<std::tuple<int, uint64_t, uint64_t, uint32_t, uint32_t>> only_e, only_b;
  std::set_difference(ek.begin(), ek.end(), bk.begin(), bk.end(), std::back_inserter(only_e));
  std::set_difference(bk.begin(), bk.end(), ek.begin(), ek.end(), std::back_inserter(only_b));
  auto describe = [](const auto& ios) {
    std::ostringstream s;
    for (size_t i = 0; i < std::min<size_t>(ios.size(), 5); ++i) {
      const auto& [op, off, len, pre, pid] = ios[i];
      s << " (op " << op << " offset " << off << " length " << len << " preflush " << pre << " pid " << pid << ")";
    }
    return s.str();
  };
  INFO("only the ebpf back end has" << describe(only_e) << "; only the blktrace back end has" << describe(only_b));
  CHECK(only_e.size() == 0);
  CHECK(only_b.size() == 0);
}

TEST_CASE("ebpf back end records a file system's requests as the blk tracer sees them, one by one", "[record][ebpf]") {
  if (!require_root("record block IOs")) return;
  if (!wait_for_free_tracer()) FAIL("the blk tracer stayed busy");
  TempDir dir;
  LoopDevice loop(256u << 20);
  Ext4 fs(loop, dir.path());
  quiet_stat(loop);
  Recording ebpf("ebpf", loop.path(), dir.file("e.iot"), dir.file("e.log"));
  BlkTrace tracer(loop, /*keep_merges=*/true, /*buffer_kb=*/65536);
  const QuietStat before = quiet_stat(loop);
  fs.work("a");
  const QuietStat after = quiet_stat(loop);
  REQUIRE(ebpf.stop(SIGINT) == 0);
  INFO(read_file(dir.file("e.log")));
  const auto e = read_trace({dir.file("e.iot")}, loop.dev_major(), loop.dev_minor());
  check_against_stat(e, before, after);
  REQUIRE(tracer.overwritten() == 0);
  std::map<Request, std::vector<int64_t>> traced, recorded;
  for (const auto& r : tracer.completed_requests())
    if (r.complete_ns >= before.monotonic_at_ns && r.complete_ns <= after.monotonic_at_ns)
      traced[{r.op, r.offset, r.length}].push_back(r.complete_ns - r.issue_ns);
  for (const auto& [key, latency] : issued_requests(e, before, after)) recorded[key].push_back(latency);
  uint64_t requests = 0, other_count = 0;
  std::vector<int64_t> latency_diffs;
  for (const auto& [key, latencies] : traced) {
    requests += latencies.size();
    const auto it = recorded.find(key);
    if (it == recorded.end() || it->second.size() != latencies.size()) {
      ++other_count;
      continue;
    }
    for (size_t i = 0; i < latencies.size(); ++i) latency_diffs.push_back(std::llabs(latencies[i] - it->second[i]));
  }
  uint64_t recorded_requests = 0;
  for (const auto& [key, latencies] : recorded) recorded_requests += latencies.size();
  INFO(requests << " requests traced, " << recorded_requests << " recorded");
  CHECK(recorded_requests == requests);
  CHECK(other_count == 0);
  CHECK(recorded.size() == traced.size());
  REQUIRE(latency_diffs.size() > 1000);
  std::sort(latency_diffs.begin(), latency_diffs.end());
  // The tracer prints microseconds.
  CHECK(latency_diffs[latency_diffs.size() / 2] < 3'000);
}

namespace {

// The device byte ranges [begin, end) a file occupies, from filefrag.
std::vector<std::pair<uint64_t, uint64_t>> file_extents(const std::string& path) {
  const auto r = run("filefrag -e -b4096 " + path);
  REQUIRE(r.exit_code == 0);
  std::vector<std::pair<uint64_t, uint64_t>> out;
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);) {
    unsigned long long idx, lo, hi, plo, phi;
    if (std::sscanf(line.c_str(), " %llu: %llu.. %llu: %llu.. %llu:", &idx, &lo, &hi, &plo, &phi) == 5)
      out.emplace_back(plo * 4096, (phi + 1) * 4096);
  }
  REQUIRE_FALSE(out.empty());
  return out;
}

bool inside(const std::vector<std::pair<uint64_t, uint64_t>>& extents, uint64_t offset, uint64_t length) {
  for (const auto& [b, e] : extents)
    if (offset >= b && offset + length <= e) return true;
  return false;
}

uint64_t metadata_count(const std::string& path, const std::string& key) {
  format::TraceReader last(path);
  REQUIRE(last.index());
  const auto it = last.metadata().find(key);
  if (it == last.metadata().end()) FAIL("no " << key << " in " << path);
  return std::stoull(it->second);
}

}  // namespace

TEST_CASE("record leaves out the IOs it causes itself and counts them", "[record][ebpf]") {
  if (!require_root("record block IOs")) return;
  if (!wait_for_free_tracer()) FAIL("the blk tracer stayed busy");
  TempDir dir;
  LoopDevice loop(256u << 20), other(64u << 20);
  Ext4 fs(loop, dir.path(), "no_prefetch_block_bitmaps");
  const std::string trace = fs.path() + "/self.iot";
  quiet_stat(loop);
  BlkTrace tracer(loop, /*keep_merges=*/true);
  uint64_t before_stop = 0;
  {
    // The file system holds the trace and nothing else. Reads of another
    // device keep the recorder writing: every 200 ms a write, its fdatasync's
    // flushes and (the file grows) a journal commit.
    Recording rec("ebpf", loop.path(), trace, dir.file("r.log"),
                  {"-d", other.path(), "--flush-interval", "200ms", "--duration", "5s"});
    Process fio({"fio", "--name=keep-busy", "--filename=" + other.path(), "--direct=1", "--ioengine=psync",
                 "--rw=randread", "--bs=4k", "--rate_iops=200", "--runtime=4", "--time_based"},
                dir.file("fio.log"));
    REQUIRE(fio.wait() == 0);
    before_stop = tracer.completed_requests().size();
    REQUIRE(rec.process().wait() == 0);
  }
  INFO(read_file(dir.file("r.log")));
  const auto t = read_trace({trace}, loop.dev_major(), loop.dev_minor());
  CHECK(t.all.size() - t.other_device == 0);  // the other device's reads only
  CHECK(t.other_device > 500);
  const auto own = file_extents(trace);
  uint64_t writes_in_trace = 0, other_writes = 0, flushes = 0;
  const auto requests = tracer.completed_requests();
  for (const auto& r : requests) {
    if (r.op == 'N') ++flushes;
    else if (r.op == 'W') ++(inside(own, r.offset, r.length) ? writes_in_trace : other_writes);
  }
  INFO(requests.size() << " requests traced (" << before_stop << " before the stop): " << writes_in_trace
                       << " writes to the trace, " << other_writes << " other writes (the journal's), " << flushes
                       << " flushes");
  WARN("self: " << requests.size() << " requests traced (" << before_stop << " before the stop): "
                 << writes_in_trace << " writes to the trace, " << other_writes << " other writes, " << flushes
                 << " flushes; " << metadata_count(trace, "capture.self_ios") << " left out");
  CHECK(writes_in_trace >= 10);
  CHECK(other_writes >= 10);
  CHECK(flushes >= 10);
  const uint64_t self = metadata_count(trace, "capture.self_ios");
  CHECK(metadata_count(trace, "capture.self_ios." + loop.name()) == self);
  CHECK(metadata_count(trace, "capture.self_ios." + other.name()) == 0);
  CHECK(metadata_count(trace, "capture.self_bytes." + loop.name()) > 0);
  // Every request until the reads ended was the recording's; closing the
  // trace writes a few more after the capture ended.
  CHECK(self >= before_stop);
  CHECK(self <= requests.size());
  CHECK(read_file(dir.file("r.log")).find("left out") != std::string::npos);
}

TEST_CASE("record on an idle device holding its trace writes only at its start and end", "[record][ebpf]") {
  if (!require_root("record block IOs")) return;
  if (!wait_for_free_tracer()) FAIL("the blk tracer stayed busy");
  TempDir dir;
  LoopDevice loop(256u << 20);
  Ext4 fs(loop, dir.path(), "no_prefetch_block_bitmaps");
  const std::string trace = fs.path() + "/idle.iot";
  quiet_stat(loop);
  BlkTrace tracer(loop, /*keep_merges=*/true);
  {
    Recording rec("ebpf", loop.path(), trace, dir.file("r.log"), {"--flush-interval", "200ms", "--duration", "4s"});
    REQUIRE(rec.process().wait() == 0);
  }
  INFO(read_file(dir.file("r.log")));
  const auto t = read_trace({trace}, loop.dev_major(), loop.dev_minor());
  CHECK(t.all.size() == 0);
  const auto requests = tracer.completed_requests();
  INFO(requests.size() << " requests traced");
  // Creating the file, syncing its directory, and closing it: no flush per
  // interval, as the recorder's own IO no longer gives it anything to write.
  WARN("idle: " << requests.size() << " requests traced, " << t.all.size() << " recorded, "
                 << metadata_count(trace, "capture.self_ios") << " left out");
  CHECK(requests.size() < 40);
  CHECK(metadata_count(trace, "capture.self_ios") > 0);
}

TEST_CASE("record keeps exactly fio's IOs on the file system it writes its trace to", "[record][ebpf]") {
  if (!require_root("record block IOs")) return;
  if (!wait_for_free_tracer()) FAIL("the blk tracer stayed busy");
  TempDir dir;
  LoopDevice loop(256u << 20);
  Ext4 fs(loop, dir.path(), "no_prefetch_block_bitmaps");
  const std::string trace = fs.path() + "/fio.iot";
  const std::string job = "fio --name=mix --directory=" + fs.path() +
                          " --filename=data --size=32M --bs=4k --direct=1 --ioengine=psync --rw=randrw";
  REQUIRE(run(job + " --create_only=1").exit_code == 0);  // the file laid out before the capture
  REQUIRE(run("sync").exit_code == 0);
  const QuietStat quiet = quiet_stat(loop);
  BlkTrace tracer(loop, /*keep_merges=*/true, /*buffer_kb=*/65536);
  {
    Recording rec("ebpf", loop.path(), trace, dir.file("r.log"), {"--flush-interval", "200ms"});
    const auto r = run(job + " --number_ios=3000 --rate_iops=1500");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    REQUIRE(rec.stop(SIGINT) == 0);
  }
  INFO(read_file(dir.file("r.log")));
  REQUIRE(tracer.overwritten() == 0);
  const auto t = read_trace({trace}, loop.dev_major(), loop.dev_minor());
  const auto data = file_extents(fs.path() + "/data"), own = file_extents(trace);
  std::multiset<Request> traced, recorded;
  uint64_t traced_total = 0;
  for (const auto& r : tracer.completed_requests()) {
    if (r.complete_ns < quiet.monotonic_at_ns) continue;
    ++traced_total;
    if (r.op != 'N' && inside(data, r.offset, r.length)) traced.insert({r.op, r.offset, r.length});
  }
  uint64_t recorded_in_own = 0;
  for (const format::Io& io : t.all) {
    CHECK((io.flags & format::flag::kSelf) == 0);
    if (io.op == format::Op::kWrite && inside(own, io.offset, io.length)) ++recorded_in_own;
    if ((io.op == format::Op::kRead || io.op == format::Op::kWrite) && inside(data, io.offset, io.length))
      recorded.insert({io.op == format::Op::kRead ? 'R' : 'W', io.offset, io.length});
  }
  const uint64_t self = metadata_count(trace, "capture.self_ios");
  INFO(traced_total << " requests traced, " << t.all.size() << " recorded, " << self << " the recording's own");
  WARN("fio: " << traced_total << " requests traced, " << traced.size() << " of fio's, " << t.all.size()
                << " recorded, " << self << " the recording's own left out");
  CHECK(traced.size() == 3000);
  CHECK(recorded == traced);
  CHECK(recorded_in_own == 0);
  CHECK(self > 0);
  // What the tracer saw is fio's IOs, the file system's and the recording's:
  // the trace holds all but the last, bar the few IOs of closing the trace.
  CHECK(t.all.size() + self <= traced_total);
  CHECK(t.all.size() + self + 10 >= traced_total);
}

TEST_CASE("record --max-total removes the oldest parts and the rest read as one trace", "[record][ebpf]") {
  if (!require_root("record block IOs")) return;
  TempDir dir;
  LoopDevice loop(64u << 20);
  constexpr uint64_t kMax = 8192;
  Recording rec("ebpf", loop.path(), dir.file("ring.iot"), dir.file("record.log"),
                {"--rotate-size", "2K", "--max-total", "8K", "--flush-interval", "100ms"});
  Process fio({"fio", "--name=ring", "--filename=" + loop.path(), "--direct=1", "--ioengine=psync", "--rw=randread",
               "--bs=4k", "--rate_iops=1000", "--number_ios=6000"},
              dir.file("fio.log"));
  uint64_t worst = 0, largest_part = 0;
  while (fio.running()) {
    uint64_t total = 0;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir.path()))
      if (e.path().extension() == ".iot") {
        const uint64_t size = std::filesystem::file_size(e.path(), ec);
        total += ec ? 0 : size;
        largest_part = std::max(largest_part, ec ? 0 : size);
      }
    worst = std::max(worst, total);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  REQUIRE(fio.wait() == 0);
  REQUIRE(rec.stop(SIGINT) == 0);
  const std::string log = read_file(dir.file("record.log"));
  INFO(log);
  std::vector<std::string> parts;
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    if (e.path().extension() == ".iot") parts.push_back(e.path().string());
  std::sort(parts.begin(), parts.end());
  REQUIRE(parts.size() >= 2);
  CHECK_FALSE(std::filesystem::exists(dir.file("ring.0000.iot")));
  INFO("largest total on disk " << worst << " bytes, largest part " << largest_part);
  WARN("max-total: " << parts.size() << " parts left, largest total on disk " << worst << " bytes, largest part "
                     << largest_part);
  CHECK(worst <= kMax + largest_part);
  const uint64_t removed = metadata_count(parts.back(), "capture.removed_parts");
  CHECK(removed >= 3);
  size_t logged = 0;
  for (size_t at = 0; (at = log.find("iotape: removed ", at)) != std::string::npos; ++at) ++logged;
  CHECK(logged == removed);
  // The parts left: one trace, in order, ending where the capture did.
  format::TraceReader reader(parts);
  format::Io io;
  int64_t last = format::kNoTime;
  uint64_t n = 0, unordered = 0;
  while (reader.next(io)) {
    unordered += io.issue_ns < last;
    last = io.issue_ns;
    ++n;
  }
  CHECK_FALSE(reader.status().damaged);
  CHECK(unordered == 0);
  CHECK(n > 0);
  CHECK(n < 6000);
  std::string args;
  for (const auto& p : parts) args += p + " ";
  const auto info = run(iotape_binary() + " info " + args);
  CHECK(info.exit_code == 0);
  CHECK(info.output.find("removed    " + std::to_string(removed) + " older parts") != std::string::npos);
  // The week page of the parts says what the capture left out and removed, as info does.
  REQUIRE(run(iotape_binary() + " report " + args + "--html " + dir.file("week.html")).exit_code == 0);
  const std::string page = read_file(dir.file("week.html"));
  CHECK(page.find("<td id=\"removed\">" + std::to_string(removed) + " older parts") != std::string::npos);
  CHECK(page.find("<td id=\"self\">" + std::to_string(metadata_count(parts.back(), "capture.self_ios")) + " IOs") !=
        std::string::npos);
}

TEST_CASE("the recording's own IOs flagged self are left out of report and cut unless --include-self", "[record]") {
  TempDir dir;
  const std::string path = dir.file("flagged.iot");
  {
    format::TraceWriter w(path, v1::TraceHeader());
    v1::Device d;
    d.set_name("loop9");
    d.set_major(7);
    d.set_minor(9);
    w.add_device(d);
    for (int i = 0; i < 10; ++i) {
      format::Io io;
      io.issue_ns = 1'000'000'000 + i * 1'000'000;
      io.complete_ns = io.issue_ns + 10'000;
      io.offset = 4096u * i;
      io.length = 4096;
      io.op = format::Op::kWrite;
      io.flags = i % 3 == 0 ? format::flag::kSelf : 0;  // 4 of them
      w.append(io);
    }
    w.close();
  }
  auto report_ios = [&](const std::string& extra) {
    const auto r = run(iotape_binary() + " report --json " + extra + " " + path);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    return nlohmann::json::parse(r.output)["ios"].get<uint64_t>();
  };
  CHECK(report_ios("") == 6);
  CHECK(report_ios("--include-self") == 10);
  auto cut_ios = [&](const std::string& extra) {
    const auto r = run(iotape_binary() + " cut --window 0.. -o " + dir.file("cut.iot") + " " + extra + " " + path);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    format::TraceReader reader(dir.file("cut.iot"));
    format::Io io;
    uint64_t n = 0, flagged = 0;
    while (reader.next(io)) ++n, flagged += (io.flags & format::flag::kSelf) != 0;
    return std::make_pair(n, flagged);
  };
  CHECK(cut_ios("") == std::make_pair(uint64_t{6}, uint64_t{0}));
  CHECK(cut_ios("--include-self") == std::make_pair(uint64_t{10}, uint64_t{4}));
}

TEST_CASE("record with the blktrace back end leaves out the IOs it causes itself", "[record][blktrace]") {
  if (!require_root("record block IOs")) return;
  if (!wait_for_free_tracer()) FAIL("the blk tracer stayed busy");
  TempDir dir;
  LoopDevice loop(256u << 20), other(64u << 20);
  Ext4 fs(loop, dir.path(), "no_prefetch_block_bitmaps");
  const std::string trace = fs.path() + "/self.iot";
  quiet_stat(loop);
  const BlockStat before = block_stat(loop.name());
  {
    Recording rec("blktrace", loop.path(), trace, dir.file("r.log"),
                  {"-d", other.path(), "--flush-interval", "200ms", "--duration", "5s"});
    Process fio({"fio", "--name=keep-busy", "--filename=" + other.path(), "--direct=1", "--ioengine=psync",
                 "--rw=randread", "--bs=4k", "--rate_iops=200", "--runtime=4", "--time_based"},
                dir.file("fio.log"));
    REQUIRE(fio.wait() == 0);
    REQUIRE(rec.process().wait() == 0);
  }
  const BlockStat after = block_stat(loop.name());
  INFO(read_file(dir.file("r.log")));
  const auto t = read_trace({trace}, loop.dev_major(), loop.dev_minor());
  CHECK(t.all.size() - t.other_device == 0);
  CHECK(t.other_device > 500);
  const uint64_t self = metadata_count(trace, "capture.self_ios." + loop.name());
  const uint64_t device_ios = (after.write_ios - before.write_ios) + (after.flush_ios - before.flush_ios);
  INFO(self << " IOs left out; the device counted " << device_ios << " writes and flushes");
  CHECK(after.write_ios - before.write_ios >= 20);
  CHECK(self >= 20);
  CHECK(self <= device_ios + (after.read_ios - before.read_ios));
}

}  // namespace iotape::test

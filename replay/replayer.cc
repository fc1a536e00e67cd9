#include "replay/replayer.h"

#include <openssl/evp.h>
#include <sys/prctl.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <thread>

#include "replay/batch_queue.h"
#include "replay/cpu_load.h"
#include "replay/dependency.h"
#include "replay/device_times.h"
#include "replay/engine.h"
#include "replay/prefill.h"
#include "traces/cpu_idle.h"
#include "traces/error.h"
#include "traces/reader.h"
#include "traces/version.h"
#include "traces/writer.h"

namespace iotape::replay {
namespace {

// SHA-256 of the source files, in order: names the source in the result.
std::string sha256_files(const std::vector<std::string>& paths) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
  std::vector<char> buf(1 << 20);
  for (const auto& p : paths) {
    std::ifstream in(p, std::ios::binary);
    if (!in) throw error_errno(p, "cannot read", errno);
    while (in) {
      in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
      EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<size_t>(in.gcount()));
    }
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  EVP_DigestFinal_ex(ctx.get(), md, &len);
  std::string hex;
  for (unsigned i = 0; i < len; ++i) hex += fmt::format("{:02x}", md[i]);
  return hex;
}

std::string bytes_text(uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  return fmt::format("{:.1f} {}", v, units[u]);
}

}  // namespace

namespace {

// --prefill auto settled: a replay that may write onto block devices fills
// what it reads first, as reviews play their traces on a drive holding data.
Prefill settle_prefill(const ReplayOptions& o, const std::vector<Target>& targets) {
  if (o.prefill != Prefill::kAuto) return o.prefill;
  const bool all_block = std::all_of(targets.begin(), targets.end(), [](const Target& t) { return t.block; });
  return o.allow_write && all_block ? Prefill::kReads : Prefill::kNone;
}

}  // namespace

Prepared prepare_replay(const ReplayOptions& o) {
  if (o.targets.empty()) throw UsageError("no --target given");
  if (o.speed <= 0) throw UsageError("--speed must be positive");
  Prepared p;
  p.options = o;
  // Read-only until the plan says the replay writes and that is allowed.
  for (const auto& t : o.targets) p.targets.push_back(open_target(t, false, true));
  p.options.prefill = settle_prefill(o, p.targets);
  const Prefill prefill = p.options.prefill;
  {
    TraceReader reader(o.traces);
    p.plan = make_plan(reader, p.targets, o);
    const auto& meta = reader.header().metadata();
    const auto recorded_idle = meta.find("host.cpu_idle");
    p.cpu_idle = describe_cpu_idle();
    if (recorded_idle != meta.end() && recorded_idle->second != p.cpu_idle)
      p.warnings.push_back(fmt::format("the trace was recorded where idle CPUs were set as \"{}\", here as \"{}\": "
                                       "device latency at low queue depth is not comparable (README: Low queue "
                                       "depth on a VM)",
                                       recorded_idle->second, p.cpu_idle.empty() ? "no cpuidle" : p.cpu_idle));
    p.source_status = reader.status();
  }
  if (p.plan.ios == 0 && !p.source_status.damaged) {
    if (p.plan.source_ios == 0) throw InputError(fmt::format("{}: the trace holds no IOs: nothing to replay",
                                                             fmt::join(o.traces, " ")));
    throw UsageError(fmt::format("nothing to replay: of the trace's {} IOs, {} are inside the window and none of "
                                 "them goes to a target ({} of unmapped devices, {} flushes the kernel made for "
                                 "fsyncs)",
                                 p.plan.source_ios, p.plan.skipped + p.plan.kernel_flushes, p.plan.skipped,
                                 p.plan.kernel_flushes));
  }
  if (p.source_status.damaged)
    p.warnings.push_back("the source trace is damaged; only the IOs before the damage are replayed: " +
                         p.source_status.message);
  if (!p.plan.unfit.empty())
    throw UsageError(fmt::format("the trace does not fit the target (--fit wrap or scale to map it): {}",
                                 fmt::join(p.plan.unfit, "; ")));
  for (const auto& t : p.targets) {
    const auto problems = safety_problems(t);
    if (problems.empty()) continue;
    if (!o.force)
      throw DeviceRefused(fmt::format("refusing to replay onto {}: {} (--force to override)", t.path,
                                   fmt::join(problems, "; ")));
    for (const auto& pr : problems) p.warnings.push_back(fmt::format("{}: {} (--force)", t.path, pr));
  }
  if (prefill != Prefill::kNone && !o.allow_write && !o.dry_run)
    throw UsageError(fmt::format("--prefill writes to {}: give --allow-write", fmt::join(o.targets, ", ")));
  const bool writes = p.plan.writes() || prefill != Prefill::kNone;
  if (p.plan.writes() && !o.allow_write && !o.dry_run)
    throw UsageError(fmt::format("the trace writes ({} writes, {} discards, {} write-zeroes): give --allow-write "
                                 "to let it change the contents of {}",
                                 p.plan.by_op[static_cast<int>(Op::kWrite)],
                                 p.plan.by_op[static_cast<int>(Op::kDiscard)],
                                 p.plan.by_op[static_cast<int>(Op::kWriteZeroes)], fmt::join(o.targets, ", ")));
  if (prefill == Prefill::kNone && p.plan.by_op[static_cast<int>(Op::kRead)])
    p.warnings.push_back(fmt::format(
        "nothing is prefilled: the {} reads may read ranges never written, which a drive answers without reading "
        "its media (measuring nothing); {}",
        p.plan.by_op[static_cast<int>(Op::kRead)],
        o.allow_write ? "--prefill reads writes them first" : "--allow-write with --prefill reads writes them first"));
  if (o.qd == 0 && p.plan.with_completion < p.plan.ios)
    p.warnings.push_back(fmt::format("{} of {} IOs have no recorded completion; --qd recorded treats them as "
                                     "completing when issued (use --qd N for such traces)",
                                     p.plan.ios - p.plan.with_completion, p.plan.ios));
  if (p.plan.skipped) p.warnings.push_back(fmt::format("{} IOs of unmapped trace devices are skipped", p.plan.skipped));
  for (size_t t = 0; t < p.targets.size(); ++t)
    if (std::none_of(p.plan.routes.begin(), p.plan.routes.end(),
                     [&](const DeviceRoute& r) { return r.target == static_cast<int>(t); }))
      p.warnings.push_back(fmt::format("{} receives no IOs: no trace device with IOs goes onto it", p.targets[t].path));
  if (writes && !o.dry_run) {
    std::vector<Target> rw;
    for (const auto& t : o.targets) rw.push_back(open_target(t, true, o.force));
    p.targets = std::move(rw);
  }
  for (const auto& t : p.targets)
    if (!t.direct) p.warnings.push_back(t.path + ": the filesystem refuses O_DIRECT; replaying buffered");
  return p;
}

std::string describe_failure(const IoFailure& f, const std::vector<Target>& targets) {
  const int err = -f.status;
  const char* name = ::strerrorname_np(err);
  return fmt::format("IO #{} ({} of {} bytes at byte {} of {}): {}{}", f.source_index, op_name(f.op), f.length,
                     f.offset, f.target < targets.size() ? targets[f.target].path : fmt::format("target {}", f.target),
                     name ? fmt::format("{}, ", name) : fmt::format("error {}, ", err), std::strerror(err));
}

std::string describe_plan(const Prepared& p) {
  const Plan& pl = p.plan;
  std::string s = fmt::format("plan       {} IOs over {:.6f} s recorded ({} skipped)\n", pl.ios, pl.span_ns / 1e9,
                              pl.skipped);
  if (pl.kernel_flushes)
    s += fmt::format("           {} flush requests the kernel made for recorded fsyncs are made again by the "
                     "replayed fsyncs, not replayed themselves\n",
                     pl.kernel_flushes);
  for (int op = 0; op < kOpCount; ++op)
    if (pl.by_op[op])
      s += fmt::format("           {:<13}{:>12} IOs {:>12}\n", op_name(static_cast<Op>(op)), pl.by_op[op],
                       bytes_text(pl.bytes_by_op[op]));
  if (p.options.timing == Timing::kOriginal)
    s += fmt::format("duration   about {:.6f} s (original timing, speed {})\n", pl.last_due_ns / 1e9,
                     p.options.speed);
  else
    s += "duration   as fast as the target allows (afap)\n";
  s += fmt::format("options    {}\n", describe(p.options));
  for (const auto& t : p.targets)
    s += fmt::format("target     {} ({}) {} bytes, {} B blocks, model '{}' serial '{}'\n", t.path,
                     t.block ? "block device" : "file", t.size, t.logical_block, t.model, t.serial);
  for (const auto& r : pl.routes)
    s += fmt::format("map        trace device {} ({} IOs) -> {}\n", r.label, r.ios,
                     r.target >= 0 ? p.targets[static_cast<size_t>(r.target)].path : std::string("not replayed"));
  s += fmt::format("prefill    {}\n", prefill_name(p.options.prefill));
  return s;
}

namespace {

// An issued IO until it is written to the result, in issue order. Finished,
// it is handed as it is to the result's thread, which makes the result IO of
// it: the replay loop copies one small record per IO, not two.
struct Slot {
  ReplayIo io;
  int64_t ready_ns = 0;  // when the queue-depth rule and the schedule let it (and every IO before it) go
  int64_t issue_ns = 0;  // submitted
  int64_t complete_ns = kNoTime;
  int32_t status = 0;
  uint32_t qd = 0;  // IOs in flight when it was submitted, itself included
  bool done = false;
};

constexpr uint64_t kSlots = 1u << 14;      // IOs between the oldest unfinished one and the newest
// With IOs in flight, poll this long for a completion before sleeping: on
// this kind of VM a sleeping thread takes 10-20 us to wake, longer than a
// fast device's whole service time, and the replay would fall behind the
// recording at queue depth 1 (measured: 20 us keeps a QD1 capture's duration,
// 5-10 us does not).
constexpr int64_t kPollNs = 20'000;
// With this many IOs in flight the device has work for longer than a
// wake-up takes: the replayer sleeps for the next completion instead, and
// leaves the CPU to a device that needs it (a loop device's worker). Polling
// at any depth cost afap QD32 on a tmpfs loop device 3.2 us of CPU per IO
// (fio: 2.1) and was no faster.
constexpr uint64_t kPollMaxInFlight = 8;
// IOs per submission, unless they were recorded at one instant (a plug or an
// io_submit batch, replayed as one): io_uring plugs a submission of more than
// two, and the block layer then holds every request of it until the last is
// built while a fast device drains (afap QD32, tmpfs loop device:
// queue-to-dispatch p50 19 us and the device idle 18% of the time, against
// fio's 0.3 us and 2%; fio submits one IO per system call).
constexpr size_t kSubmitMax = 2;
// A deadline is slept for up to this long before it, then polled for: a
// timer wakes the thread 10-60 us late on this kind of VM.
constexpr int64_t kLeadNs = 30'000;
constexpr int64_t kReorderNs = 20'000'000;  // device times: how far the device may reorder submissions
constexpr int64_t kStartLeadNs = 1'000'000;  // the schedule starts this long after setup

v1::TraceHeader result_header(const Prepared& p, const v1::TraceHeader& source, const std::string& source_sha256,
                              const DeviceTimes* device, const std::string& user_times_reason) {
  v1::TraceHeader h;
  h.set_creator("iotape");
  h.set_creator_version(kVersion);
  h.set_source(v1::SOURCE_REPLAY);
  h.set_source_detail(p.options.timing == Timing::kOriginal ? "replay:original" : "replay:afap");
  utsname u{};
  if (::uname(&u) == 0) {
    h.set_host(u.nodename);
    h.set_kernel(u.release);
  }
  h.set_clock(v1::CLOCK_DOMAIN_MONOTONIC);
  timespec rt;
  ::clock_gettime(CLOCK_REALTIME, &rt);
  const int64_t now = monotonic_ns();
  h.set_anchor_trace_ns(now);
  h.set_anchor_unix_ns(rt.tv_sec * 1'000'000'000LL + rt.tv_nsec);
  for (const auto& t : p.targets) *h.add_devices() = t.to_device();
  auto& m = *h.mutable_metadata();
  m["replay.source"] = fmt::format("{}", fmt::join(p.options.traces, " "));
  m["replay.source_sha256"] = source_sha256;
  m["replay.options"] = describe(p.options);
  m["replay.targets"] = fmt::format("{}", fmt::join(p.options.targets, " "));
  m["replay.prefill"] = prefill_name(p.options.prefill);
  m["replay.version"] = kVersion;
  if (!p.cpu_idle.empty()) m["host.cpu_idle"] = p.cpu_idle;
  if (device) {
    m["replay.times"] = "device";
    m["replay.times_devices"] = device->describe();
  } else {
    m["replay.times"] = "user";
    if (!user_times_reason.empty()) m["replay.times_reason"] = user_times_reason;
  }
  // The source's phases, as they were: result IOs find theirs by source_index.
  // A replay result's phases count the positions of its own source: not kept.
  const std::string data = describe_data(p.options.data);
  if (source.source() != v1::SOURCE_REPLAY)
    for (const auto& phase : source.phases()) {
      v1::Phase* copy = h.add_phases();
      *copy = phase;
      copy->set_data(data);
    }
  return h;
}

constexpr size_t kBatch = 4096;  // IOs per hand-over between threads

// The replay loop's end of the schedule thread: IOs one at a time.
class Incoming {
 public:
  explicit Incoming(BatchQueue<ReplayIo>& q) : q_(q) {}
  bool next(ReplayIo& io) {
    if (pos_ == batch_.size()) {
      pos_ = 0;
      if (!q_.pop(batch_)) return false;
    }
    io = batch_[pos_++];
    return true;
  }

 private:
  BatchQueue<ReplayIo>& q_;
  std::vector<ReplayIo> batch_;
  size_t pos_ = 0;
};

// The result trace's record of a finished IO, on the replayer's clock: the
// submission as issue (user times) or as queue time (for DeviceTimes to add
// the device's issue and completion).
Io result_io(const Slot& s, bool device_times) {
  Io r;
  r.issue_ns = s.issue_ns;
  if (device_times) r.queue_ns = s.issue_ns;
  r.complete_ns = s.complete_ns;
  r.offset = s.io.offset;
  r.length = s.io.length;
  r.device = s.io.target;
  r.op = s.io.op;
  r.flags = s.io.flags;
  r.status = s.status;
  r.source_index = static_cast<int64_t>(s.io.source_index);
  return r;
}

// Sleeps in the replay loop end on time instead of up to the timer slack
// (50 us by default) late; restored when the replay ends.
class PreciseTimers {
 public:
  PreciseTimers() : old_(::prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0)) { ::prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0); }
  ~PreciseTimers() {
    if (old_ > 0) ::prctl(PR_SET_TIMERSLACK, old_, 0, 0, 0);
  }

 private:
  int old_;
};

}  // namespace

Outcome run_replay(Prepared& p, const std::atomic<bool>& stop, const std::function<void(const Progress&)>& progress) {
  const ReplayOptions& o = p.options;
  TraceReader reader(o.traces);
  DeviceMap map(reader.header(), p.targets.size(), o);
  std::vector<uint64_t> source_size(p.plan.device_end.size());
  for (size_t d = 0; d < source_size.size(); ++d) {
    const uint64_t header_size =
        d < static_cast<size_t>(reader.header().devices_size()) ? reader.header().devices(static_cast<int>(d)).size_bytes() : 0;
    source_size[d] = header_size ? header_size : p.plan.device_end[d];
  }
  Outcome out;
  if (o.prefill != Prefill::kNone) {
    // Before anything is timed or observed: the prefill is not part of the result.
    std::optional<ReadFootprint> footprint;
    if (o.prefill == Prefill::kReads) {
      footprint.emplace(p.targets);
      TraceReader source(o.traces);
      DeviceMap source_map(source.header(), p.targets.size(), o);
      Placement source_placement(source_map, p.targets, o.fit, source_size);
      Schedule reads(source, source_placement, o);
      ReplayIo io;
      while (reads.next(io))
        if (io.op == Op::kRead) footprint->add(io.target, io.offset, io.length);
    }
    std::function<void(const PrefillProgress&)> shown;
    if (progress)
      shown = [&](const PrefillProgress& pp) {
        Progress pr;
        pr.prefill_done = pp.done_bytes;
        pr.prefill_total = pp.total_bytes;
        progress(pr);
      };
    out.prefilled_bytes = prefill(p.targets, footprint ? &*footprint : nullptr, o.data, stop, shown);
    if (stop.load()) {
      out.interrupted = true;
      return out;
    }
  }
  Placement placement(map, p.targets, o.fit, std::move(source_size));
  Schedule schedule(reader, placement, o);

  std::vector<Slot> slots(kSlots);
  DependencyTracker deps;
  Fidelity fidelity(o.timing == Timing::kOriginal);
  const std::string sha = sha256_files(o.traces);
  std::unique_ptr<DeviceTimes> device;
  if (o.times != Times::kUser) {
    try {
      device = std::make_unique<DeviceTimes>(p.targets);
    } catch (const std::exception& e) {
      if (o.times == Times::kDevice) throw TraceError(std::string("cannot time the replay at the device: ") + e.what());
      out.user_times_reason = e.what();
    }
  }
  out.device_times = device != nullptr;
  const uint32_t limit = o.qd ? o.qd : o.max_in_flight;
  UringEngine engine(p.targets, p.plan.max_length, limit, o.data);
  WriterOptions wo;
  wo.chunk_ios = 8192;
  wo.zstd_level = 1;
  TraceWriter writer(o.result, result_header(p, reader.header(), sha, device.get(), out.user_times_reason), wo);

  // Decoding the source and encoding the result run on their own threads.
  BatchQueue<ReplayIo> incoming_q(8);
  BatchQueue<Slot> finished_q(8);
  int64_t start = 0;  // set before the first finished IO is handed over
  std::exception_ptr schedule_error, writer_error;
  std::thread schedule_thread([&] {
    try {
      std::vector<ReplayIo> batch;
      ReplayIo io;
      while (schedule.next(io)) {
        batch.push_back(io);
        if (batch.size() == kBatch && !incoming_q.push(batch)) return;
      }
      if (!batch.empty()) incoming_q.push(batch);
    } catch (...) {
      schedule_error = std::current_exception();
    }
    incoming_q.close();
  });
  std::thread writer_thread([&] {
    try {
      std::vector<Slot> batch;
      std::vector<Io> results, held;
      const auto by_issue = [](const Io& a, const Io& b) { return a.issue_ns < b.issue_ns; };
      while (finished_q.pop(batch)) {
        results.clear();
        for (const Slot& s : batch) results.push_back(result_io(s, device != nullptr));
        if (device) device->join(results);
        for (size_t i = 0; i < batch.size(); ++i)
          fidelity.add(batch[i].io, results[i], batch[i].issue_ns - start, batch[i].ready_ns - start, batch[i].qd);
        if (!device) {
          for (const Io& r : results) writer.append(r);
          continue;
        }
        // The device may issue IOs in another order than they were
        // submitted: sort them, and hold back the newest until the next
        // batch, which may hold IOs the device issued before them.
        held.insert(held.end(), results.begin(), results.end());
        std::stable_sort(held.begin(), held.end(), by_issue);
        const int64_t keep_from = held.back().issue_ns - kReorderNs;
        const auto cut = std::find_if(held.begin(), held.end(), [&](const Io& r) { return r.issue_ns >= keep_from; });
        for (auto it = held.begin(); it != cut; ++it) writer.append(*it);
        held.erase(held.begin(), cut);
      }
      for (const Io& r : held) writer.append(r);
    } catch (...) {
      writer_error = std::current_exception();
      finished_q.close();
    }
  });
  struct Joiner {
    BatchQueue<ReplayIo>& in;
    BatchQueue<Slot>& fin;
    std::thread& a;
    std::thread& b;
    ~Joiner() {
      in.close();
      fin.close();
      if (a.joinable()) a.join();
      if (b.joinable()) b.join();
    }
  } joiner{incoming_q, finished_q, schedule_thread, writer_thread};
  Incoming incoming(incoming_q);
  std::vector<Slot> finished;
  finished.reserve(kBatch);

  uint64_t next_seq = 0, head = 0, in_flight = 0;
  ReplayIo next;
  bool have_next = incoming.next(next);
  bool next_held = false;  // the queue-depth rule held `next` back
  int64_t last_ready = 0;  // when the queue-depth rule let the last submitted IO go
  PreciseTimers precise;
  const CpuLoad cpu;
  // The schedule starts once everything is set up and the first IOs are decoded.
  start = monotonic_ns() + kStartLeadNs;
  int64_t last_reap = start;  // when completions last freed the queue
  writer.set_metadata("replay.start_ns", std::to_string(start));
  int64_t drained_at = start;  // when the replay last had nothing in flight
  std::vector<Completion> done;
  Progress prog;
  prog.planned = p.plan.ios;
  int64_t next_progress = start + 1'000'000'000;
  auto is_done = [&](uint64_t seq) { return seq < head || slots[seq % kSlots].done; };
  std::vector<uint32_t> pending;  // slots prepared, not yet submitted
  int64_t pending_rec_ns = 0;     // the recorded issue time of the last of them
  auto submit_pending = [&] {
    if (pending.empty()) return;
    const int64_t t = engine.submit();
    for (uint32_t slot : pending) slots[slot].issue_ns = t;
    prog.issued += pending.size();
    pending.clear();
  };

  while (have_next || in_flight > 0) {
    if (have_next && (stop.load(std::memory_order_relaxed) || out.interrupted)) {
      out.interrupted = true;
      have_next = false;
    }
    int64_t now = monotonic_ns();
    int64_t wake = INT64_MAX;  // when the next IO becomes due
    bool more_due = false;     // IOs due now wait for the next submission
    while (have_next) {
      if (pending.size() >= kSubmitMax && next.rec_time_ns != pending_rec_ns) {
        more_due = true;
        break;
      }
      if (next_seq - head == kSlots || in_flight >= limit || (o.qd == 0 && !deps.ready(next.rec_time_ns, is_done))) {
        next_held = true;
        break;
      }
      int64_t due = start;
      if (o.timing == Timing::kOriginal) {
        due = start + next.due_ns;
      } else if (next.idle_ns > 0) {
        if (in_flight > 0) break;  // the idle gap starts when the replay drains
        due = drained_at + next.idle_ns;
      }
      if (due > now) {
        wake = due;
        break;
      }
      // IOs due by now go kSubmitMax to a system call. Nothing is reaped
      // until the submission, so the IOs counted here are exactly those in
      // flight when it is submitted.
      // IOs go in recorded order: one that waited holds back those after it.
      const int64_t ready = std::max(next_held ? std::max(due, last_reap) : due, last_ready);
      last_ready = ready;
      const auto slot = static_cast<uint32_t>(next_seq % kSlots);
      slots[slot] = Slot{.io = next, .ready_ns = ready, .qd = static_cast<uint32_t>(in_flight + 1)};
      next_held = false;
      engine.prepare(next, slot);
      pending.push_back(slot);
      pending_rec_ns = next.rec_time_ns;
      if (o.qd == 0) deps.issued(next.rec_complete_ns, next_seq);
      ++next_seq;
      ++in_flight;
      have_next = incoming.next(next);
    }
    submit_pending();

    if (progress && now >= next_progress) {
      prog.elapsed_ns = now - start;
      progress(prog);
      next_progress = now + 1'000'000'000;
    }
    engine.reap(done);
    if (!done.empty()) {
      now = done.back().complete_ns;
      last_reap = now;
      for (const auto& c : done) {
        Slot& s = slots[c.tag];
        s.done = true;
        s.complete_ns = c.complete_ns;
        s.status = c.status;
        fidelity.completed(s.io.source_index);
        ++prog.completed;
        if (s.status) {
          ++prog.errors;
          if (out.failures.size() < Outcome::kKeptFailures)
            out.failures.push_back({.source_index = s.io.source_index, .target = s.io.target, .op = s.io.op,
                                    .offset = s.io.offset, .length = s.io.length, .status = s.status});
          if (o.stop_on_error) out.interrupted = true;
        }
      }
      in_flight -= done.size();
      if (in_flight == 0) drained_at = now;
      done.clear();
      while (head < next_seq && slots[head % kSlots].done) {
        finished.push_back(slots[head % kSlots]);
        if (finished.size() == kBatch && !finished_q.push(finished)) out.interrupted = true;
        ++head;
      }
      continue;  // completions may have unblocked the next IO
    }

    if (more_due) continue;
    if (in_flight == 0 && wake == INT64_MAX) continue;  // nothing in flight: the loop ends or issues
    // With IOs in flight and nothing due, the next completion is the next
    // event: wait for it without a timer (a signal interrupts the wait).
    int64_t deadline = wake == INT64_MAX ? (in_flight > 0 ? INT64_MAX : now + 100'000'000) : wake;
    int64_t poll = in_flight > 0 && in_flight < kPollMaxInFlight ? kPollNs : 0;
    if (wake != INT64_MAX) {
      if (wake - now <= kLeadNs)
        poll = wake - now;  // close: poll to the deadline
      else
        deadline = wake - kLeadNs;  // sleep to just before it, then poll the rest
    }
    engine.wait(deadline, poll);
  }

  // The replay lasted until its last completion; encoding what is left of the
  // result is not part of it.
  out.duration_ns = monotonic_ns() - start;
  out.cpu_ns = cpu.process_cpu_ns();
  out.host_cpu_busy = cpu.host_busy();
  if (!finished.empty()) finished_q.push(finished);
  finished_q.close();
  writer_thread.join();
  if (writer_error) std::rethrow_exception(writer_error);
  if (schedule_error) std::rethrow_exception(schedule_error);
  out.fidelity = fidelity.summary();
  out.ios = out.fidelity.ios;
  out.errors = out.fidelity.errors;
  writer.set_metadata("replay.interrupted", out.interrupted ? "true" : "false");
  writer.set_metadata("replay.duration_ns", std::to_string(out.duration_ns));
  writer.set_metadata("replay.cpu_ns", std::to_string(out.cpu_ns));
  writer.set_metadata("replay.host_cpu_busy", fmt::format("{:.4f}", out.host_cpu_busy));
  if (device) {
    device->finish();
    out.device = device->stats();
    writer.set_metadata("replay.device_timed_ios", std::to_string(out.device.timed));
    writer.set_metadata("replay.device_untimed_ios", std::to_string(out.device.untimed));
    writer.set_metadata("replay.device_split_ios", std::to_string(out.device.split));
    writer.set_metadata("replay.device_merged_ios", std::to_string(out.device.merged));
    writer.set_metadata("replay.device_extra_requests", std::to_string(out.device.extra_requests));
    writer.set_metadata("replay.device_unclaimed_requests", std::to_string(out.device.unclaimed_requests));
    writer.set_metadata("replay.device_dropped_events", std::to_string(out.device.dropped));
    writer.set_metadata("replay.device_uncompleted_requests", std::to_string(out.device.uncompleted));
  }
  for (const auto& [k, v] : out.fidelity.metadata()) writer.set_metadata(k, v);
  if (o.prefill != Prefill::kNone) writer.set_metadata("replay.prefilled_bytes", std::to_string(out.prefilled_bytes));
  writer.close();
  return out;
}

}  // namespace iotape::replay

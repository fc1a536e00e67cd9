#include "workloads/closed_loop_run.h"

#include <fmt/format.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <latch>
#include <mutex>
#include <optional>
#include <thread>

#include "format/error.h"
#include "host/clocks.h"

namespace iotape::workloads {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

format::WriterOptions writer_options() {
  format::WriterOptions o;
  o.reorder_window_ns = 10 * kSecond;  // IOs arrive in completion order
  return o;
}

v1::TraceHeader header(const replay::Target& t, const std::string& test, const std::string& phase,
                       const std::string& label) {
  v1::TraceHeader h;
  h.set_source(v1::SOURCE_REPLAY);
  h.set_source_detail("bench:" + test + ":" + phase);
  h.set_clock(v1::CLOCK_DOMAIN_RELATIVE);
  *h.add_devices() = t.to_device();
  auto& m = *h.mutable_metadata();
  m["workload"] = test;
  m["target"] = label;
  m["bench.test"] = test;
  m["bench.phase"] = phase;
  return h;
}

}  // namespace

PhaseTrace::PhaseTrace(const std::string& path, const replay::Target& t, const std::string& test,
                       const std::string& phase, const std::string& label)
    : path_(path), writer_(path, header(t, test, phase, label), writer_options()), start_(host::monotonic_ns()) {}

void PhaseTrace::add(const replay::ReplayIo& io, int64_t issue, int64_t complete, int32_t status) {
  format::Io out;
  out.issue_ns = issue - start_;
  out.complete_ns = complete - start_;
  out.offset = io.offset;
  out.length = io.length;
  out.op = io.op;
  out.status = status;
  out.source_index = static_cast<int64_t>(next_index_++);
  writer_.append(out);
}

namespace {

// What one issue thread of a closed loop counted, merged into the phase's
// figures when the phase ends.
struct LoopShare {
  PhaseStats stats;  // its ios_per_second: completions in each second from the phase start
  uint64_t failed = 0;
  int32_t first_error = 0;
};

// IOs finished on one thread, waiting to go into the phase's trace together
// (one lock per batch, not per IO).
struct FinishedIo {
  replay::ReplayIo io;
  int64_t issue, complete;
  int32_t status;
};
constexpr size_t kTraceBatch = 256;
constexpr size_t kNextBatch = 64;  // IOs a thread takes from `next` at once

}  // namespace

PhaseStats run_closed_loop(const std::vector<replay::Target>& targets, uint32_t qd, uint64_t max_length,
                           const NextIo& next, int64_t max_ns, PhaseTrace* trace, replay::DataPattern data,
                           const std::atomic<bool>* stop, uint32_t threads, replay::RingSetup ring) {
  threads = std::max<uint32_t>(1, std::min(threads, qd));
  std::mutex next_mutex, trace_mutex;
  bool exhausted = false;
  std::vector<LoopShare> shares(threads);
  std::vector<std::exception_ptr> errors(threads);
  std::atomic<bool> abandoned{false};  // a thread failed: the others stop too
  // The phase starts once every thread has its ring: setting one up is not
  // part of the measurement.
  int64_t start = 0, deadline = 0;
  std::optional<replay::DeviceBusy> device_busy;
  std::latch ready(threads), go(1);
  auto begin = [&] {
    device_busy.emplace(targets);
    start = host::monotonic_ns();
    deadline = start + max_ns;
  };

  // One thread's loop: its share of the depth (the first qd % threads one
  // more), IOs taken from `next` in batches.
  auto run = [&](uint32_t t, bool& counted) {
    LoopShare& share = shares[t];
    PhaseStats& s = share.stats;
    std::vector<FinishedIo> finished;
    auto flush_trace = [&] {
      if (!trace || finished.empty()) return;
      const std::lock_guard lock(trace_mutex);
      for (const auto& f : finished) trace->add(f.io, f.issue, f.complete, f.status);
      finished.clear();
    };
    const uint32_t depth = qd / threads + (t < qd % threads ? 1 : 0);
    replay::ClosedLoop loop(
        targets, max_length, depth, data,
        [&](const replay::Finished& f) {
          const replay::Completion& c = f.completion;
          if (c.status < 0 && share.failed++ == 0) share.first_error = c.status;
          if (trace) {
            if (threads == 1) {
              trace->add(f.io, f.issue_ns, c.complete_ns, c.status);
            } else {
              finished.push_back({f.io, f.issue_ns, c.complete_ns, c.status});
              if (finished.size() >= kTraceBatch) flush_trace();
            }
          }
          ++s.ios;
          s.bytes += f.io.length;
          s.latency.add(static_cast<uint64_t>(std::max<int64_t>(0, c.complete_ns - f.issue_ns)));
          const auto second = static_cast<size_t>((c.complete_ns - start) / kSecond);
          if (s.ios_per_second.size() <= second) s.ios_per_second.resize(second + 1, 0);
          ++s.ios_per_second[second];
        },
        ring);
    if (threads == 1) {
      begin();
    } else {
      counted = true;
      ready.count_down();
      go.wait();
    }
    const replay::ThreadUseMeter meter;
    std::vector<replay::ReplayIo> batch;
    auto ended = [&] { return host::monotonic_ns() >= deadline || (stop && stop->load()) || abandoned; };
    while (!ended()) {
      batch.clear();
      if (threads == 1) {
        batch.emplace_back();
        if (!next(batch.back())) break;
      } else {
        const std::lock_guard lock(next_mutex);
        for (replay::ReplayIo io; !exhausted && batch.size() < kNextBatch;) {
          if (!next(io))
            exhausted = true;
          else
            batch.push_back(io);
        }
        if (batch.empty()) break;
      }
      for (size_t i = 0; i < batch.size() && (i == 0 || !ended()); ++i) loop.issue(batch[i]);
    }
    loop.drain();
    flush_trace();
    s.issue_thread = meter.use(host::monotonic_ns() - start);
  };

  if (threads == 1) {
    bool counted = false;
    run(0, counted);
  } else {
    std::vector<std::thread> pool;
    for (uint32_t t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        bool counted = false;  // whether this thread reached the start
        try {
          run(t, counted);
        } catch (...) {
          errors[t] = std::current_exception();
          abandoned = true;
          if (!counted) ready.count_down();
        }
      });
    ready.wait();
    begin();
    go.count_down();
    for (auto& th : pool) th.join();
    for (const auto& e : errors)
      if (e) std::rethrow_exception(e);
  }

  PhaseStats s;
  s.duration_ns = host::monotonic_ns() - start;
  s.device_busy = replay::busiest(device_busy->shares(s.duration_ns));
  std::vector<uint64_t> per_second;
  uint64_t failed = 0;
  int32_t first_error = 0;
  for (const LoopShare& share : shares) {
    s.ios += share.stats.ios;
    s.bytes += share.stats.bytes;
    s.latency.merge(share.stats.latency);
    // The phase is as limited by the host as its busiest thread.
    const replay::ThreadUse& u = share.stats.issue_thread;
    if (u.busy + u.waiting > s.issue_thread.busy + s.issue_thread.waiting) s.issue_thread = u;
    const auto& seconds = share.stats.ios_per_second;
    if (per_second.size() < seconds.size()) per_second.resize(seconds.size(), 0);
    for (size_t i = 0; i < seconds.size(); ++i) per_second[i] += seconds[i];
    if (share.failed && !failed) first_error = share.first_error;
    failed += share.failed;
  }
  s.issue_threads = threads;
  if (failed)
    throw format::error_errno(
        targets[0].path,
        fmt::format("{} of {} IOs failed (a short transfer fails with EIO, as in replay); the first", failed, s.ios),
        -first_error);
  per_second.resize(std::min<size_t>(per_second.size(), static_cast<size_t>(s.duration_ns / kSecond)));
  s.ios_per_second = std::move(per_second);
  return s;
}

uint32_t closed_loop_threads(uint32_t requested, uint32_t qd) {
  if (requested) return std::max<uint32_t>(1, std::min(requested, qd));
  cpu_set_t cpus;
  const uint32_t usable = ::sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? static_cast<uint32_t>(CPU_COUNT(&cpus)) : 1;
  return std::max<uint32_t>(1, std::min((qd + 7) / 8, usable));
}

void discard_all(const std::vector<replay::Target>& targets, uint64_t span) {
  bool issued = false;
  run_closed_loop(targets, 1, 0,
                  [&](replay::ReplayIo& io) {
                    if (issued) return false;
                    io = {};
                    io.op = format::Op::kDiscard;
                    io.length = span;
                    return issued = true;
                  },
                  INT64_MAX / 2, nullptr);
}

}  // namespace iotape::workloads

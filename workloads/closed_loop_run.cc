#include "workloads/closed_loop_run.h"

#include <fmt/format.h>

#include <algorithm>

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

PhaseStats run_closed_loop(const std::vector<replay::Target>& targets, uint32_t qd, uint64_t max_length,
                           const NextIo& next, int64_t max_ns, PhaseTrace* trace, replay::DataPattern data,
                           const std::atomic<bool>* stop) {
  PhaseStats s;
  int64_t start = 0;
  std::vector<uint64_t> per_second;
  uint64_t failed = 0;
  int32_t first_error = 0;
  replay::ClosedLoop loop(targets, max_length, qd, data, [&](const replay::Finished& f) {
    const replay::Completion& c = f.completion;
    if (c.status < 0 && failed++ == 0) first_error = c.status;
    if (trace) trace->add(f.io, f.issue_ns, c.complete_ns, c.status);
    ++s.ios;
    s.bytes += f.io.length;
    s.latency.add(static_cast<uint64_t>(std::max<int64_t>(0, c.complete_ns - f.issue_ns)));
    const auto second = static_cast<size_t>((c.complete_ns - start) / kSecond);
    if (per_second.size() <= second) per_second.resize(second + 1, 0);
    ++per_second[second];
  });
  const replay::ThreadUseMeter thread;
  start = host::monotonic_ns();
  const int64_t deadline = start + max_ns;
  replay::ReplayIo io;
  while (host::monotonic_ns() < deadline && !(stop && stop->load()) && next(io)) loop.issue(io);
  loop.drain();
  s.duration_ns = host::monotonic_ns() - start;
  s.issue_thread = thread.use(s.duration_ns);
  if (failed)
    throw format::error_errno(
        targets[0].path,
        fmt::format("{} of {} IOs failed (a short transfer fails with EIO, as in replay); the first", failed, s.ios),
        -first_error);
  per_second.resize(std::min<size_t>(per_second.size(), static_cast<size_t>(s.duration_ns / kSecond)));
  s.ios_per_second = std::move(per_second);
  return s;
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

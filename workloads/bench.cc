#include "workloads/bench.h"

#include <fmt/format.h>

#include <cerrno>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>

#include "analysis/report.h"
#include "format/error.h"
#include "host/clocks.h"
#include "replay/replayer.h"
#include "replay/target.h"
#include "workloads/closed_loop_run.h"
#include "workloads/profile.h"
#include "workloads/rng.h"
#include "workloads/synth.h"

namespace iotape::workloads {
namespace {

using nlohmann::ordered_json;
constexpr uint64_t kFillBlock = 128 * 1024;
constexpr uint64_t kRandomBlock = 4096;
constexpr int64_t kSecond = 1'000'000'000;

NextIo sequential_writes(uint64_t span, uint64_t block, uint32_t passes) {
  auto at = std::make_shared<uint64_t>(0);
  const uint64_t total = span / block * block * passes;
  return [=](replay::ReplayIo& io) {
    if (*at >= total) return false;
    io = {};
    io.op = format::Op::kWrite;
    io.offset = *at % (span / block * block);
    io.length = block;
    *at += block;
    return true;
  };
}

NextIo random_writes(uint64_t span, uint64_t seed) {
  auto rng = std::make_shared<Rng>(seed);
  return [=](replay::ReplayIo& io) {
    io = {};
    io.op = format::Op::kWrite;
    io.offset = rng->below(span / kRandomBlock) * kRandomBlock;
    io.length = kRandomBlock;
    return true;
  };
}

class Bench {
 public:
  explicit Bench(const BenchOptions& o) : o_(o) {
    if (!o.allow_write) throw format::UsageError(o.target + ": bench tests write the whole target: give --allow-write");
    std::filesystem::create_directories(o.out_dir);
  }

  ordered_json precondition() {
    ordered_json s = start("precondition");
    s["fill"] = fill();
    PhaseTrace trace(o_.out_dir + "/random.iot", target(), "precondition", "random", label("random"));
    const auto [rounds, steady] = random_writes_to_steady_state(targets_, span_, o_.qd, o_.round_ns, o_.duration_ns,
                                                                o_.seed, &trace, o_.stop, threads(), o_.ring);
    trace.close();
    s["random"] = {{"trace", trace.path()}, {"round_s", o_.round_ns / 1e9}, {"iops_per_round", rounds}};
    s["steady_state"] = {{"reached", steady.reached},
                         {"rounds", rounds.size()},
                         {"mean_iops", steady.mean},
                         {"range_iops", steady.range},
                         {"excursion_iops", steady.excursion}};
    return finish(s);
  }

  ordered_json consistency() {
    ordered_json s = start("consistency");
    s["fill"] = fill();
    const uint64_t span = static_cast<uint64_t>(span_ * o_.span_pct / 100) / kRandomBlock * kRandomBlock;
    PhaseTrace trace(o_.out_dir + "/random.iot", target(), "consistency", "random", label("random"));
    const auto r = run_closed_loop(targets_, o_.qd, kRandomBlock, random_writes(span, o_.seed), o_.duration_ns, &trace,
                                   {}, o_.stop, threads(), o_.ring);
    trace.close();
    const auto& iops = r.ios_per_second;
    const int64_t window = o_.window_ns ? o_.window_ns : std::max<int64_t>(kSecond, o_.duration_ns / 5);
    const size_t n = std::min(iops.size(), static_cast<size_t>(window / kSecond));
    double mean = 0, var = 0;
    for (size_t i = iops.size() - n; i < iops.size(); ++i) mean += static_cast<double>(iops[i]) / n;
    for (size_t i = iops.size() - n; i < iops.size(); ++i) var += std::pow(iops[i] - mean, 2) / n;
    const double stddev = std::sqrt(var);
    s["random"] = {{"trace", trace.path()},       {"span_bytes", span},      {"span_pct", o_.span_pct},
                   {"qd", o_.qd},                 {"duration_s", r.duration_ns / 1e9}, {"ios", r.ios},
                   {"iops_per_second", iops}};
    s["steady_window"] = {{"seconds", n},
                          {"mean_iops", mean},
                          {"stddev_iops", stddev},
                          {"mean_over_stddev", stddev > 0 ? mean / stddev : 0.0}};
    return finish(s);
  }

  ordered_json trim() {
    ordered_json s = start("trim");
    ordered_json phases = ordered_json::array();
    discard_all();
    phases.push_back(sequential_phase("clean"));
    PhaseTrace trace(o_.out_dir + "/dirtying.iot", target(), "trim", "dirtying", label("dirtying"));
    const auto r = run_closed_loop(targets_, o_.qd, kRandomBlock, random_writes(span_, o_.seed), o_.duration_ns, &trace,
                                   {}, o_.stop, threads(), o_.ring);
    trace.close();
    s["dirtying"] = {{"trace", trace.path()}, {"duration_s", r.duration_ns / 1e9}, {"iops", r.iops()}};
    phases.push_back(sequential_phase("dirty"));
    discard_all();
    phases.push_back(sequential_phase("trimmed"));
    s["phases"] = phases;
    return finish(s);
  }

  ordered_json fresh_vs_used() {
    ordered_json s = start("fresh-vs-used");
    const std::string workload = workload_trace();
    s["workload"] = workload;
    discard_all();
    s["fresh"] = replay_workload(workload, "fresh");
    s["fill"] = fill();
    s["used"] = replay_workload(workload, "used");
    return finish(s);
  }

 private:
  ordered_json start(const std::string& test) {
    test_ = test;
    open();
    ordered_json s;
    s["test"] = test;
    s["target"] = o_.target;
    s["target_bytes"] = target().size;
    s["block_device"] = target().block;
    return s;
  }

  ordered_json finish(ordered_json s) {
    std::ofstream f(o_.out_dir + "/summary.json");
    f << s.dump(2) << "\n";
    if (!f) throw format::error_errno(o_.out_dir + "/summary.json", "cannot write", errno);
    return s;
  }

  void open() {
    targets_.clear();
    targets_.push_back(replay::open_writable_target(o_.target, o_.force));
    if (o_.ring.iopoll) replay::require_poll_queues(targets_);
    span_ = targets_[0].size / kFillBlock * kFillBlock;
    if (span_ == 0) throw format::UsageError(o_.target + ": smaller than one 128 KiB block");
  }
  const replay::Target& target() const { return targets_.at(0); }
  uint32_t threads() const { return closed_loop_threads(o_.threads, o_.qd); }
  // The "target" metadata of a phase's trace: the random-write phase is the
  // test itself, so its bars carry the drive's name only.
  std::string label(const std::string& phase) const {
    const std::string drive = o_.label.empty() ? target().name : o_.label;
    return phase == "random" ? drive : drive + " " + phase;
  }

  ordered_json fill() {
    PhaseTrace trace(o_.out_dir + "/fill.iot", target(), test_, "fill", label("fill"));
    const auto r = run_closed_loop(targets_, o_.qd, kFillBlock, sequential_writes(span_, kFillBlock, o_.fill_passes),
                                   INT64_MAX / 2, &trace, {}, o_.stop, threads(), o_.ring);
    trace.close();
    return {{"trace", trace.path()},     {"passes", o_.fill_passes}, {"bytes_written", r.bytes},
            {"duration_s", r.duration_ns / 1e9}, {"MBps", r.MBps()}};
  }

  ordered_json sequential_phase(const std::string& name) {
    PhaseTrace trace(o_.out_dir + "/" + name + ".iot", target(), test_, name, label(name));
    const auto r = run_closed_loop(targets_, o_.qd, kFillBlock, sequential_writes(span_, kFillBlock, 1), INT64_MAX / 2,
                                   &trace, {}, o_.stop, threads(), o_.ring);
    trace.close();
    return {{"name", name}, {"trace", trace.path()}, {"bytes_written", r.bytes}, {"duration_s", r.duration_ns / 1e9},
            {"MBps", r.MBps()}};
  }

  void discard_all() { workloads::discard_all(targets_, span_); }

  std::string workload_trace() {
    if (std::filesystem::is_regular_file(o_.workload)) return o_.workload;
    const std::string path = o_.out_dir + "/workload.iot";
    SynthOptions so;
    so.seed = o_.seed;
    so.span = span_;
    so.ios = o_.workload_ios;
    synthesize(load_profile(o_.workload), so, path);
    return path;
  }

  // The replay opens the target itself (exclusively), so ours is closed meanwhile.
  ordered_json replay_workload(const std::string& workload, const std::string& state) {
    targets_.clear();
    replay::ReplayOptions ro;
    ro.traces = {workload};
    ro.targets = {o_.target};
    ro.result = o_.out_dir + "/" + state + ".iot";
    ro.timing = replay::Timing::kAfap;
    ro.fit = replay::Fit::kWrap;
    ro.allow_write = true;
    ro.force = o_.force;
    replay::Outcome outcome;
    {
      auto prepared = replay::prepare_replay(ro);
      const std::atomic<bool> never{false};
      outcome = replay::run_replay(prepared, o_.stop ? *o_.stop : never);
    }
    open();
    format::TraceReader reader(ro.result);
    const auto rep = analysis::analyse(reader);
    const auto lat = rep.data_latency();
    const uint64_t bytes = rep.op(format::Op::kRead).bytes + rep.op(format::Op::kWrite).bytes;
    return {{"trace", ro.result},
            {"ios", outcome.ios},
            {"errors", outcome.errors},
            {"busy_s", rep.busy_ns / 1e9},
            {"MBps", analysis::data_rate_MBps(bytes, rep.busy_ns)},
            {"mean_latency_us", lat.mean() / 1e3},
            {"p99_latency_us", lat.percentile(99) / 1e3}};
  }

  const BenchOptions& o_;
  std::string test_;
  std::vector<replay::Target> targets_;
  uint64_t span_ = 0;
};

}  // namespace

SteadyState steady_state(std::span<const double> w) {
  SteadyState s;
  if (w.size() < 2) return s;
  const double n = static_cast<double>(w.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    const double x = static_cast<double>(i);
    sx += x, sy += w[i], sxx += x * x, sxy += x * w[i];
  }
  s.mean = sy / n;
  const auto [lo, hi] = std::minmax_element(w.begin(), w.end());
  s.range = *hi - *lo;
  const double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
  s.excursion = std::abs(slope) * (n - 1);
  s.reached = s.mean > 0 && s.range <= 0.2 * s.mean && s.excursion <= 0.1 * s.mean;
  return s;
}

SteadyStateRun random_writes_to_steady_state(const std::vector<replay::Target>& targets, uint64_t span, uint32_t qd,
                                             int64_t round_ns, int64_t max_ns, uint64_t seed, PhaseTrace* trace,
                                             const std::atomic<bool>* stop, uint32_t threads, replay::RingSetup ring) {
  SteadyStateRun r;
  const int64_t begin = host::monotonic_ns();
  auto writes = random_writes(span, seed);
  while (!r.steady.reached && host::monotonic_ns() - begin < max_ns && !(stop && *stop)) {
    r.iops_per_round.push_back(
        run_closed_loop(targets, qd, kRandomBlock, writes, round_ns, trace, {}, stop, threads, ring).iops());
    if (r.iops_per_round.size() >= kSteadyRounds)
      r.steady = steady_state(std::span<const double>(r.iops_per_round).last(kSteadyRounds));
  }
  return r;
}

nlohmann::ordered_json run_bench(const std::string& test, const BenchOptions& o) {
  Bench b(o);
  if (test == "precondition") return b.precondition();
  if (test == "consistency") return b.consistency();
  if (test == "trim") return b.trim();
  if (test == "fresh-vs-used") return b.fresh_vs_used();
  throw format::UsageError("unknown bench test '" + test + "' (precondition, consistency, trim, fresh-vs-used)");
}

}  // namespace iotape::workloads

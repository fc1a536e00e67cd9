#include "replay/issue_lanes.h"

#include <algorithm>
#include <exception>
#include <latch>
#include <thread>

#include "host/clocks.h"
#include "replay/engine.h"
#include "replay/saturation.h"

namespace iotape::replay {
namespace {

constexpr int64_t kStartLeadNs = 1'000'000;  // the schedule starts this long after setup

// The lanes of one replay, between their threads and the calling one.
struct Lanes {
  const Prepared& p;
  ScheduleFeed& feed;
  ResultWriter& result;
  Fidelity& fidelity;
  const std::atomic<bool>& stop;
  const std::function<void(const Progress&)>& progress;
  const uint32_t n;
  std::vector<Outcome> outs;
  std::vector<LaneCounts> counts;
  std::vector<std::exception_ptr> errors;
  std::vector<int64_t> cpu_ns, wait_ns, end_ns;
  std::latch ready;  // every lane is set up (or failed)
  std::latch go{1};  // start_ns is set, or aborted
  std::atomic<bool> halt{false};
  bool aborted = false;
  int64_t start_ns = 0;

  Lanes(const Prepared& prepared, ScheduleFeed& f, ResultWriter& r, Fidelity& fi, const std::atomic<bool>& s,
        const std::function<void(const Progress&)>& pr)
      : p(prepared),
        feed(f),
        result(r),
        fidelity(fi),
        stop(s),
        progress(pr),
        n(std::max<uint32_t>(prepared.options.threads, 1)),
        outs(n),
        counts(n),
        errors(n),
        cpu_ns(n),
        wait_ns(n),
        end_ns(n),
        ready(n) {}

  // Lane i's thread: sets up its engine and loop, waits for the start, runs.
  void body(uint32_t i) {
    bool counted = false;
    try {
      const ReplayOptions& o = p.options;
      const uint32_t limit = o.qd ? lane_share(o.qd, n, i) : o.max_in_flight;
      UringEngine engine(p.targets, p.plan.max_length, limit, o.data, o.ring);
      static const std::function<void(const Progress&)> kNone;
      IssueLoop loop(o, engine, feed.lane(i), result.queue(i), fidelity, outs[i], limit, p.plan.ios,
                     i == 0 ? progress : kNone, counts, i);
      ready.count_down();
      counted = true;
      go.wait();
      if (!aborted) {
        const ThreadUseMeter thread;
        loop.run(start_ns, stop, halt);
        end_ns[i] = host::monotonic_ns();
        cpu_ns[i] = thread.cpu_ns();
        wait_ns[i] = thread.wait_ns() + loop.blocked_ns();
        outs[i].completion_polls_hit = loop.completion_poll().hits();
        outs[i].completion_polls_missed = loop.completion_poll().misses();
      }
      loop.hand_over_rest();
    } catch (...) {
      errors[i] = std::current_exception();
      halt.store(true);
      result.queue(i).close();
      if (!counted) ready.count_down();
    }
  }
};

}  // namespace

uint32_t lane_share(uint32_t qd, uint32_t lanes, uint32_t lane) { return qd / lanes + (lane < qd % lanes ? 1 : 0); }

LanesRun run_lanes(const Prepared& p, ScheduleFeed& feed, ResultWriter& result, Fidelity& fidelity, Outcome& out,
                   const std::atomic<bool>& stop, const std::function<void(const Progress&)>& progress) {
  Lanes lanes(p, feed, result, fidelity, stop, progress);
  std::vector<std::thread> threads;
  for (uint32_t i = 0; i < lanes.n; ++i) threads.emplace_back([&lanes, i] { lanes.body(i); });
  lanes.ready.wait();
  lanes.aborted = std::any_of(lanes.errors.begin(), lanes.errors.end(), [](const auto& e) { return e != nullptr; });
  // The schedule starts once every lane is set up and has its first IOs.
  lanes.start_ns = host::monotonic_ns() + kStartLeadNs;
  result.set_start(lanes.start_ns);
  lanes.go.count_down();
  for (auto& t : threads) t.join();
  for (const auto& e : lanes.errors)
    if (e) std::rethrow_exception(e);
  LanesRun run{
      .start_ns = lanes.start_ns, .end_ns = lanes.start_ns, .lane_cpu_ns = lanes.cpu_ns, .lane_wait_ns = lanes.wait_ns};
  for (uint32_t i = 0; i < lanes.n; ++i) {
    run.end_ns = std::max(run.end_ns, lanes.end_ns[i]);
    out.interrupted |= lanes.outs[i].interrupted;
    out.completion_polls_hit += lanes.outs[i].completion_polls_hit;
    out.completion_polls_missed += lanes.outs[i].completion_polls_missed;
    for (const IoFailure& f : lanes.outs[i].failures)
      if (out.failures.size() < Outcome::kKeptFailures) out.failures.push_back(f);
  }
  return run;
}

}  // namespace iotape::replay

#include "replay/fidelity.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "replay/sorted_runs.h"

namespace iotape::replay {

void Fidelity::Depths::add(uint64_t qd) {
  ++buckets[stats::QueueDepth::bucket_of(qd)];
  sum += qd;
}

void Fidelity::Order::completed(uint64_t index) {
  if (any && index < max_index) ++reorders;
  max_index = std::max(max_index, index);
  any = true;
}

void Fidelity::add(const ReplayIo& io, const format::Io& replayed, int64_t issue_rel_ns, int64_t ready_rel_ns,
                   uint64_t replayed_qd) {
  ++ios_;
  if (replayed.status != 0) ++errors_;
  // The recording's figures as `report` computes them (see Io::never_issued).
  if (!io.rec_never_issued) recorded_busy_.add(io.rec_time_ns, io.rec_complete_ns);
  if (replayed.has_complete() && !replayed.never_issued()) {
    replayed_intervals_.emplace_back(replayed.issue_ns, replayed.complete_ns);
    if (replayed_intervals_.size() == 2 * kBusyWindow) {
      // On one ring they come in issue order, on several a run per batch.
      sort_runs(replayed_intervals_.begin(), replayed_intervals_.end());
      const auto half = replayed_intervals_.begin() + kBusyWindow;
      for (auto it = replayed_intervals_.begin(); it != half; ++it) replayed_busy_.add(it->first, it->second);
      replayed_intervals_.erase(replayed_intervals_.begin(), half);
    }
  }
  if (timed_) {
    issue_error_.add(static_cast<uint64_t>(std::max<int64_t>(0, issue_rel_ns - io.due_ns)));
    const int64_t ready = std::max(ready_rel_ns, io.due_ns);
    if (ready > io.due_ns) {
      ++held_ios_;
      held_.add(static_cast<uint64_t>(ready - io.due_ns));
    }
    late_.add(static_cast<uint64_t>(std::max<int64_t>(0, issue_rel_ns - ready)));
    if (have_prev_)
      interarrival_error_.add(
          static_cast<uint64_t>(std::llabs((issue_rel_ns - prev_issue_) - (io.due_ns - prev_due_))));
  }
  have_prev_ = true;
  prev_due_ = io.due_ns;
  prev_issue_ = issue_rel_ns;
  last_due_ = std::max(last_due_, io.due_ns);
  last_issue_ = std::max(last_issue_, issue_rel_ns);

  // Recorded completions before this IO's issue happened in time order; the
  // rest are outstanding at its issue.
  while (!recorded_pending_.empty() && recorded_pending_.top().complete <= io.rec_time_ns) {
    const Pending& p = recorded_pending_.top();
    recorded_order_.completed(p.index);
    recorded_counted_ -= p.counted;
    recorded_pending_.pop();
  }
  recorded_qd_.add(recorded_counted_ + 1);
  replayed_qd_.add(replayed_qd);
  const bool counted = !io.rec_never_issued && io.rec_complete_ns > io.rec_time_ns;
  recorded_pending_.push({io.rec_complete_ns, io.source_index, counted});
  recorded_counted_ += counted;
}

FidelitySummary Fidelity::summary() const {
  FidelitySummary s;
  s.timed = timed_;
  s.ios = ios_;
  s.errors = errors_;
  s.issue_error_p50_ns = issue_error_.percentile(50);
  s.issue_error_p99_ns = issue_error_.percentile(99);
  s.issue_error_max_ns = issue_error_.max();
  s.held_ios = held_ios_;
  s.held_p99_ns = held_.percentile(99);
  s.held_max_ns = held_.max();
  s.late_p50_ns = late_.percentile(50);
  s.late_p99_ns = late_.percentile(99);
  s.late_max_ns = late_.max();
  s.recorded_busy_ns = recorded_busy_.total_ns();
  stats::BusyTime replayed_busy = replayed_busy_;
  auto waiting = replayed_intervals_;
  sort_runs(waiting.begin(), waiting.end());
  for (const auto& [start, end] : waiting) replayed_busy.add(start, end);
  s.replayed_busy_ns = replayed_busy.total_ns();
  s.interarrival_error_p50_ns = interarrival_error_.percentile(50);
  s.interarrival_error_p99_ns = interarrival_error_.percentile(99);
  s.interarrival_error_max_ns = interarrival_error_.max();
  s.intended_span_ns = last_due_;
  s.replayed_span_ns = last_issue_;
  s.recorded_qd = recorded_qd_.buckets;
  s.replayed_qd = replayed_qd_.buckets;
  s.recorded_qd_mean = ios_ ? static_cast<double>(recorded_qd_.sum) / static_cast<double>(ios_) : 0.0;
  s.replayed_qd_mean = ios_ ? static_cast<double>(replayed_qd_.sum) / static_cast<double>(ios_) : 0.0;
  // Completions still pending at the end come after every issue, in time order.
  auto pending = recorded_pending_;
  Order order = recorded_order_;
  for (; !pending.empty(); pending.pop()) order.completed(pending.top().index);
  s.recorded_reorders = order.reorders;
  for (const Order& o : replayed_orders_) s.replayed_reorders += o.reorders;
  return s;
}

namespace {

std::string percents(const std::array<uint64_t, 8>& b, uint64_t total) {
  std::string s;
  for (size_t i = 0; i < b.size(); ++i)
    s += fmt::format("{}{}:{:.1f}%", i ? " " : "", stats::QueueDepth::kBucketNames[i],
                     total ? 100.0 * static_cast<double>(b[i]) / static_cast<double>(total) : 0.0);
  return s;
}

std::string us(uint64_t ns) { return fmt::format("{:.1f}us", static_cast<double>(ns) / 1e3); }

}  // namespace

std::string count_of(uint64_t n, const std::string& noun) {
  return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s");
}

std::string FidelitySummary::text() const {
  std::string s = fmt::format("replayed   {}, {}\n", count_of(ios, "IO"), count_of(errors, "error"));
  if (timed) {
    s += fmt::format("issue err  p50 {}  p99 {}  max {}\n", us(issue_error_p50_ns), us(issue_error_p99_ns),
                     us(issue_error_max_ns));
    // What was measured: IOs that were due but waited for earlier ones. A
    // slower target makes them, but so do a busy host and --qd N: the busy
    // line below says how fast the target was.
    s += fmt::format("held back  {} ({:.1f}%): due, but waited for earlier IOs to complete or go first  p99 {}  "
                     "max {}\n",
                     count_of(held_ios, "IO"), ios ? 100.0 * static_cast<double>(held_ios) / static_cast<double>(ios) : 0.0,
                     us(held_p99_ns), us(held_max_ns));
    s += fmt::format("late       p50 {}  p99 {}  max {} (the replayer's own delay once an IO could go)\n",
                     us(late_p50_ns), us(late_p99_ns), us(late_max_ns));
    s += fmt::format("gap err    p50 {}  p99 {}  max {}\n", us(interarrival_error_p50_ns),
                     us(interarrival_error_p99_ns), us(interarrival_error_max_ns));
    s += fmt::format("span       intended {:.6f} s  replayed {:.6f} s\n", intended_span_ns / 1e9,
                     replayed_span_ns / 1e9);
  } else {
    s += fmt::format("span       replayed {:.6f} s\n", replayed_span_ns / 1e9);
  }
  if (recorded_busy_ns > 0 && replayed_busy_ns > 0) {
    const double ratio = static_cast<double>(replayed_busy_ns) / static_cast<double>(recorded_busy_ns);
    const std::string versus = ratio > 1.005   ? fmt::format("busy {:.2f}x longer than the recording", ratio)
                               : ratio < 0.995 ? fmt::format("busy {:.2f}x shorter than the recording", 1 / ratio)
                                               : std::string("busy as long as the recording");
    s += fmt::format("busy       recorded {:.6f} s  replayed {:.6f} s  (target/recording {:.3f}: {})\n",
                     recorded_busy_ns / 1e9, replayed_busy_ns / 1e9, ratio, versus);
  }
  s += fmt::format("QD rec     mean {:.2f}  {}\n", recorded_qd_mean, percents(recorded_qd, ios));
  s += fmt::format("QD replay  mean {:.2f}  {}\n", replayed_qd_mean, percents(replayed_qd, ios));
  s += fmt::format("reorders   recorded {}  replayed {}\n", recorded_reorders, replayed_reorders);
  return s;
}

std::vector<std::pair<std::string, std::string>> FidelitySummary::metadata() const {
  std::vector<std::pair<std::string, std::string>> m = {
      {"fidelity.ios", std::to_string(ios)},
      {"fidelity.errors", std::to_string(errors)},
      {"fidelity.replayed_span_ns", std::to_string(replayed_span_ns)},
      {"fidelity.recorded_qd_mean", fmt::format("{:.3f}", recorded_qd_mean)},
      {"fidelity.replayed_qd_mean", fmt::format("{:.3f}", replayed_qd_mean)},
      {"fidelity.recorded_qd_buckets", fmt::format("{}", fmt::join(recorded_qd, ","))},
      {"fidelity.replayed_qd_buckets", fmt::format("{}", fmt::join(replayed_qd, ","))},
      {"fidelity.recorded_reorders", std::to_string(recorded_reorders)},
      {"fidelity.recorded_busy_ns", std::to_string(recorded_busy_ns)},
      {"fidelity.replayed_busy_ns", std::to_string(replayed_busy_ns)},
      {"fidelity.replayed_reorders", std::to_string(replayed_reorders)},
  };
  if (timed) {
    m.emplace_back("fidelity.issue_error_p50_ns", std::to_string(issue_error_p50_ns));
    m.emplace_back("fidelity.issue_error_p99_ns", std::to_string(issue_error_p99_ns));
    m.emplace_back("fidelity.issue_error_max_ns", std::to_string(issue_error_max_ns));
    m.emplace_back("fidelity.interarrival_error_p50_ns", std::to_string(interarrival_error_p50_ns));
    m.emplace_back("fidelity.interarrival_error_p99_ns", std::to_string(interarrival_error_p99_ns));
    m.emplace_back("fidelity.interarrival_error_max_ns", std::to_string(interarrival_error_max_ns));
    m.emplace_back("fidelity.intended_span_ns", std::to_string(intended_span_ns));
    m.emplace_back("fidelity.held_ios", std::to_string(held_ios));
    m.emplace_back("fidelity.held_p99_ns", std::to_string(held_p99_ns));
    m.emplace_back("fidelity.held_max_ns", std::to_string(held_max_ns));
    m.emplace_back("fidelity.late_p50_ns", std::to_string(late_p50_ns));
    m.emplace_back("fidelity.late_p99_ns", std::to_string(late_p99_ns));
    m.emplace_back("fidelity.late_max_ns", std::to_string(late_max_ns));
  }
  return m;
}

}  // namespace iotape::replay

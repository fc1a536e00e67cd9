#include "replay/fidelity.h"

#include <fmt/format.h>

#include <cstdlib>

namespace iotape::replay {

void Fidelity::add(const ReplayIo& io, const Io& replayed, int64_t issue_rel_ns) {
  ++ios_;
  if (replayed.status != 0) ++errors_;
  if (timed_) {
    issue_error_.add(static_cast<uint64_t>(std::max<int64_t>(0, issue_rel_ns - io.due_ns)));
    if (have_prev_)
      interarrival_error_.add(
          static_cast<uint64_t>(std::llabs((issue_rel_ns - prev_issue_) - (io.due_ns - prev_due_))));
  }
  have_prev_ = true;
  prev_due_ = io.due_ns;
  prev_issue_ = issue_rel_ns;
  last_due_ = std::max(last_due_, io.due_ns);
  last_issue_ = std::max(last_issue_, issue_rel_ns);

  Io rec;
  rec.issue_ns = io.rec_time_ns;
  rec.complete_ns = io.rec_complete_ns;
  recorded_qd_.add(rec);
  replayed_qd_.add(replayed);

  // Recorded completions before this IO's issue happened in time order.
  while (!recorded_pending_.empty() && recorded_pending_.top().first <= io.rec_time_ns) {
    const uint64_t index = recorded_pending_.top().second;
    recorded_pending_.pop();
    if (recorded_any_ && index < recorded_max_index_) ++recorded_reorders_;
    recorded_max_index_ = std::max(recorded_max_index_, index);
    recorded_any_ = true;
  }
  recorded_pending_.emplace(io.rec_complete_ns, io.source_index);
}

void Fidelity::completed(uint64_t source_index) {
  if (replayed_any_ && source_index < replayed_max_index_) ++replayed_reorders_;
  replayed_max_index_ = std::max(replayed_max_index_, source_index);
  replayed_any_ = true;
}

FidelitySummary Fidelity::summary() const {
  FidelitySummary s;
  s.timed = timed_;
  s.ios = ios_;
  s.errors = errors_;
  s.issue_error_p50_ns = issue_error_.percentile(50);
  s.issue_error_p99_ns = issue_error_.percentile(99);
  s.issue_error_max_ns = issue_error_.max();
  s.interarrival_error_p50_ns = interarrival_error_.percentile(50);
  s.interarrival_error_p99_ns = interarrival_error_.percentile(99);
  s.interarrival_error_max_ns = interarrival_error_.max();
  s.intended_span_ns = last_due_;
  s.replayed_span_ns = last_issue_;
  s.recorded_qd = recorded_qd_.buckets();
  s.replayed_qd = replayed_qd_.buckets();
  s.recorded_qd_mean = recorded_qd_.mean();
  s.replayed_qd_mean = replayed_qd_.mean();
  // Completions still pending at the end come after every issue, in time order.
  auto pending = recorded_pending_;
  uint64_t max_index = recorded_max_index_;
  bool any = recorded_any_;
  s.recorded_reorders = recorded_reorders_;
  while (!pending.empty()) {
    const uint64_t index = pending.top().second;
    pending.pop();
    if (any && index < max_index) ++s.recorded_reorders;
    max_index = std::max(max_index, index);
    any = true;
  }
  s.replayed_reorders = replayed_reorders_;
  return s;
}

namespace {

std::string percents(const std::array<uint64_t, 8>& b, uint64_t total) {
  std::string s;
  for (size_t i = 0; i < b.size(); ++i)
    s += fmt::format("{}{}:{:.1f}%", i ? " " : "", analysis::QueueDepth::kBucketNames[i],
                     total ? 100.0 * static_cast<double>(b[i]) / static_cast<double>(total) : 0.0);
  return s;
}

std::string us(uint64_t ns) { return fmt::format("{:.1f}us", static_cast<double>(ns) / 1e3); }

}  // namespace

std::string FidelitySummary::text() const {
  std::string s = fmt::format("replayed   {} IOs, {} errors\n", ios, errors);
  if (timed) {
    s += fmt::format("issue err  p50 {}  p99 {}  max {}\n", us(issue_error_p50_ns), us(issue_error_p99_ns),
                     us(issue_error_max_ns));
    s += fmt::format("gap err    p50 {}  p99 {}  max {}\n", us(interarrival_error_p50_ns),
                     us(interarrival_error_p99_ns), us(interarrival_error_max_ns));
    s += fmt::format("span       intended {:.6f} s  replayed {:.6f} s\n", intended_span_ns / 1e9,
                     replayed_span_ns / 1e9);
  } else {
    s += fmt::format("span       replayed {:.6f} s\n", replayed_span_ns / 1e9);
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
  }
  return m;
}

}  // namespace iotape::replay

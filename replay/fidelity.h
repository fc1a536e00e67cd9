// Replay fidelity: how closely the replay followed the recording (the
// measures of REFERENCE-style replay studies). Fed one IO at a time, in issue
// order, with bounded state.
//
// - issue-time error (original timing): replayed issue minus due time;
// - inter-arrival error: |replayed gap - intended gap| between consecutive IOs;
// - queue depth at issue, recorded and replayed, in the review buckets;
// - reorder count (RFC 4737 Type-P-Reordered) of completions against issue
//   order: an IO completing after a later-issued one already did, recorded
//   and replayed;
// - errors.
#pragma once

#include <array>
#include <cstdint>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "analysis/accumulators.h"
#include "analysis/histogram.h"
#include "replay/schedule.h"
#include "traces/io.h"

namespace iotape::replay {

struct FidelitySummary {
  bool timed = false;  // original timing: issue-time errors are meaningful
  uint64_t ios = 0, errors = 0;
  uint64_t issue_error_p50_ns = 0, issue_error_p99_ns = 0, issue_error_max_ns = 0;
  uint64_t interarrival_error_p50_ns = 0, interarrival_error_p99_ns = 0, interarrival_error_max_ns = 0;
  int64_t intended_span_ns = 0;  // due time of the last IO (original timing)
  int64_t replayed_span_ns = 0;  // replayed issue time of the last IO
  std::array<uint64_t, 8> recorded_qd{}, replayed_qd{};  // analysis::QueueDepth buckets
  double recorded_qd_mean = 0, replayed_qd_mean = 0;
  uint64_t recorded_reorders = 0, replayed_reorders = 0;

  std::string text() const;  // several lines for people
  std::vector<std::pair<std::string, std::string>> metadata() const;  // "fidelity.*" keys
};

class Fidelity {
 public:
  explicit Fidelity(bool timed) : timed_(timed) {}
  // `replayed`: the result IO (issue/complete on the replay clock);
  // `issue_rel_ns`: its issue time relative to the replay start.
  void add(const ReplayIo& io, const Io& replayed, int64_t issue_rel_ns);
  // Completion order of the replay, as IOs complete.
  void completed(uint64_t source_index);
  FidelitySummary summary() const;

 private:
  bool timed_;
  uint64_t ios_ = 0, errors_ = 0;
  analysis::LogLinearHistogram issue_error_, interarrival_error_;
  analysis::QueueDepth recorded_qd_, replayed_qd_;
  bool have_prev_ = false;
  int64_t prev_due_ = 0, prev_issue_ = 0, last_due_ = 0, last_issue_ = 0;
  // Recorded completions not yet passed, to count recorded reorders in order.
  using Pending = std::pair<int64_t, uint64_t>;  // (recorded completion, source index)
  std::priority_queue<Pending, std::vector<Pending>, std::greater<>> recorded_pending_;
  uint64_t recorded_max_index_ = 0, replayed_max_index_ = 0;
  bool recorded_any_ = false, replayed_any_ = false;
  uint64_t recorded_reorders_ = 0, replayed_reorders_ = 0;
};

}  // namespace iotape::replay

// Replay fidelity: how closely the replay followed the recording (the
// measures of REFERENCE-style replay studies). Fed one IO at a time, in issue
// order, with bounded state.
//
// - issue-time error (original timing): replayed issue minus due time, split
//   into the time the queue-depth rule held the IO back (it was due, but the
//   IOs it waits for had not completed, or an IO before it was held so: IOs
//   go in recorded order; the target was slower than the recording) and the
//   replayer's own lateness (ready, not yet submitted);
// - busy time (union of issue-to-completion intervals), recorded and
//   replayed: how much slower or faster the target was; both over the
//   replayed IOs (not the kernel's flush requests, which replayed fsyncs make
//   anew), an fsync's empty write the device never saw an instant in the
//   recording as in the replay (Io::never_issued), for busy time and queue
//   depth alike;
// - inter-arrival error: |replayed gap - intended gap| between consecutive IOs;
// - queue depth at issue, recorded and replayed, in the review buckets (with
//   several issue threads, the replayed depth is the IO's own thread's: the
//   threads count nothing together);
// - reorder count (RFC 4737 Type-P-Reordered) of completions against issue
//   order: an IO completing after a later-issued one already did, recorded
//   and replayed (with several issue threads, the sum of each one's count
//   over the IOs it issued: two threads' reaps have no order between them);
// - errors.
//
// Threads: one Fidelity per replay, fed by one thread (the result writer),
// and told of completions by each issue thread, in a lane of its own.
#pragma once

#include <array>
#include <cstdint>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "format/io.h"
#include "replay/schedule.h"
#include "stats/busy_time.h"
#include "stats/histogram.h"
#include "stats/queue_depth.h"

namespace iotape::replay {

// "1 error", "7 errors": `n` and the noun, singular or plural.
std::string count_of(uint64_t n, const std::string& noun);

struct FidelitySummary {
  bool timed = false;  // original timing: issue-time errors are meaningful
  uint64_t ios = 0, errors = 0;
  uint64_t issue_error_p50_ns = 0, issue_error_p99_ns = 0, issue_error_max_ns = 0;
  uint64_t held_ios = 0;  // IOs the queue-depth rule held back past their due time
  uint64_t held_p99_ns = 0, held_max_ns = 0;
  uint64_t late_p50_ns = 0, late_p99_ns = 0, late_max_ns = 0;  // the replayer's own delay
  int64_t recorded_busy_ns = 0, replayed_busy_ns = 0;
  uint64_t interarrival_error_p50_ns = 0, interarrival_error_p99_ns = 0, interarrival_error_max_ns = 0;
  int64_t intended_span_ns = 0;  // due time of the last IO (original timing)
  int64_t replayed_span_ns = 0;  // replayed issue time of the last IO
  std::array<uint64_t, 8> recorded_qd{}, replayed_qd{};  // stats::QueueDepth buckets
  double recorded_qd_mean = 0, replayed_qd_mean = 0;
  uint64_t recorded_reorders = 0, replayed_reorders = 0;

  std::string text() const;  // several lines for people
  std::vector<std::pair<std::string, std::string>> metadata() const;  // "fidelity.*" keys
};

class Fidelity {
 public:
  explicit Fidelity(bool timed, uint32_t lanes = 1) : timed_(timed), replayed_orders_(lanes) {}
  // `replayed`: the result IO (issue/complete on the replay clock);
  // `issue_rel_ns`: its issue time relative to the replay start;
  // `ready_rel_ns`: when the queue-depth rule let it go (its due time if
  // nothing held it back), relative to the replay start;
  // `replayed_qd`: the IOs in flight when it was submitted, itself included.
  void add(const ReplayIo& io, const format::Io& replayed, int64_t issue_rel_ns, int64_t ready_rel_ns,
           uint64_t replayed_qd);
  // Completion order of the replay, as the IOs of issue thread `lane` (from
  // 0, below `lanes`) complete; it shares no state with add() nor with
  // another lane, so each may run on a thread of its own.
  void completed(uint64_t source_index, uint32_t lane = 0) { replayed_orders_[lane].completed(source_index); }
  FidelitySummary summary() const;

 private:
  // Queue depths counted in stats::QueueDepth's buckets.
  struct Depths {
    std::array<uint64_t, 8> buckets{};
    uint64_t sum = 0;
    void add(uint64_t qd);
  };
  // A recorded completion not yet passed. One min-heap of them, ordered by
  // (completion, source index), gives both the recorded queue depth and the
  // recorded reorders in order; an IO that completed at its issue (or has no
  // recorded completion) is never outstanding, so it is not `counted` in the
  // queue depth.
  struct Pending {
    int64_t complete;
    uint64_t index;
    bool counted;
    bool operator>(const Pending& o) const { return complete != o.complete ? complete > o.complete : index > o.index; }
  };
  struct alignas(64) Order {  // a cache line each: lanes update theirs on every completion
    uint64_t max_index = 0;
    bool any = false;
    uint64_t reorders = 0;
    void completed(uint64_t index);
  };

  bool timed_;
  uint64_t ios_ = 0, errors_ = 0;
  stats::LogLinearHistogram issue_error_, interarrival_error_, held_, late_;
  uint64_t held_ios_ = 0;
  stats::BusyTime recorded_busy_, replayed_busy_;
  // The replayed intervals come in source order, their device times a little
  // out of it (requests overtake each other, issue threads run side by
  // side): once 2 x kBusyWindow are waiting they are sorted (sort_runs) and the earliest
  // half goes to replayed_busy_, the rest at the summary. So the latest
  // kBusyWindow always wait, as in a heap, at a sort's cost (a heap's pops
  // took a fifth of the result thread's time).
  static constexpr size_t kBusyWindow = 1u << 16;
  std::vector<std::pair<int64_t, int64_t>> replayed_intervals_;
  Depths recorded_qd_, replayed_qd_;
  bool have_prev_ = false;
  int64_t prev_due_ = 0, prev_issue_ = 0, last_due_ = 0, last_issue_ = 0;
  std::priority_queue<Pending, std::vector<Pending>, std::greater<>> recorded_pending_;
  uint64_t recorded_counted_ = 0;  // entries of recorded_pending_ that are `counted`
  Order recorded_order_;
  std::vector<Order> replayed_orders_;  // completed()'s only state, by lane
};

}  // namespace iotape::replay

// The timed part of a replay: the loop that issues the scheduled IOs on the
// engine and reaps them, and the thread that decodes the schedule for it.
//
// Threads: a ScheduleFeed runs Schedule::next() on a thread of its own and
// hands IOs to the issue loop in batches; the issue loop runs on the thread
// that calls IssueLoop::run() (the engine's thread) and hands each finished
// IO, in issue order, to the result writer's queue (result_writer.h). Neither
// class is shared beyond that: one thread drives each object.
//
// The loop, step by step (IssueLoop::run): admit the IOs that are due and
// that the queue-depth rule lets go (prepared on the engine, kSubmitMax at a
// time), submit them, reap what completed (handing finished IOs over in
// order), else wait for the next completion or the next due time. This is
// the replay's hot path: no virtual calls, no allocation per IO.
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <thread>
#include <vector>

#include "replay/batch_queue.h"
#include "replay/dependency.h"
#include "replay/engine.h"
#include "replay/fidelity.h"
#include "replay/replayer.h"
#include "replay/schedule.h"

namespace iotape::replay {

constexpr size_t kBatch = 4096;  // IOs per hand-over between threads

// An issued IO until it is written to the result, in issue order. Finished,
// it is handed as it is to the result's thread, which makes the result IO of
// it: the replay loop copies one small record per IO, not two.
struct Slot {
  ReplayIo io;
  int64_t ready_ns = 0;  // when the queue-depth rule and the schedule let it (and every IO before it) go
  int64_t issue_ns = 0;  // submitted (0 until then)
  int64_t complete_ns = format::kNoTime;
  int32_t status = 0;
  uint32_t qd = 0;  // IOs in flight when it was submitted, itself included
  bool done = false;
};

// Decodes `schedule` on a thread of its own, started by the constructor.
// next() is for one other thread (the issue loop's) only. The destructor
// stops the thread (closing the queue) and joins it.
// REQUIRES: `schedule` outlives this object.
class ScheduleFeed {
 public:
  explicit ScheduleFeed(Schedule& schedule);
  ~ScheduleFeed();
  ScheduleFeed(const ScheduleFeed&) = delete;
  ScheduleFeed& operator=(const ScheduleFeed&) = delete;

  // The next scheduled IO; false once the schedule has ended (or failed:
  // see rethrow_error()). Blocks while the decoder is behind.
  bool next(ReplayIo& io) {
    if (pos_ == batch_.size()) {
      pos_ = 0;
      if (!q_.pop(batch_)) return false;
    }
    io = batch_[pos_++];
    return true;
  }
  // Throws what the schedule threw, if it did.
  // REQUIRES: next() returned false.
  void rethrow_error() const;

 private:
  void decode(Schedule& schedule);  // the thread's body

  BatchQueue<ReplayIo> q_{8};
  std::exception_ptr error_;
  std::vector<ReplayIo> batch_;  // next()'s current batch
  size_t pos_ = 0;
  std::thread thread_;
};

// The issue loop of one replay. Constructing it waits for the first
// scheduled IO. run() once, then hand_over_rest().
// REQUIRES: every reference given outlives the loop; the engine is used by
// this loop's thread only; `finished` is consumed by another thread.
class IssueLoop {
 public:
  IssueLoop(const ReplayOptions& o, UringEngine& engine, ScheduleFeed& feed, BatchQueue<Slot>& finished,
            Fidelity& fidelity, Outcome& out, uint32_t limit, uint64_t planned,
            const std::function<void(const Progress&)>& progress);

  // Issues every IO of the schedule from `start_ns` (monotonic) on and
  // returns once the last has completed; when `stop` is set (or
  // --stop-on-error meets an error) it issues nothing more and drains.
  // Sets out.interrupted and out.failures.
  void run(int64_t start_ns, const std::atomic<bool>& stop);
  // Hands the finished IOs not yet handed over to the result's queue.
  void hand_over_rest();

 private:
  struct Admitted {
    int64_t wake = INT64_MAX;  // when the next IO becomes due
    bool more_due = false;     // IOs due now wait for the next submission
  };
  Admitted admit(int64_t now);
  int64_t due_time(const ReplayIo& io) const;
  void submit();
  bool reap();
  void complete(const Completion& c);
  void hand_over_finished();
  void wait(int64_t now, int64_t wake);
  void report_progress(int64_t now);
  bool is_done(uint64_t seq) const;

  const ReplayOptions& o_;
  UringEngine& engine_;
  ScheduleFeed& feed_;
  BatchQueue<Slot>& finished_q_;
  Fidelity& fidelity_;
  Outcome& out_;
  const uint32_t limit_;  // the most IOs in flight
  const std::function<void(const Progress&)>& progress_;

  std::vector<Slot> slots_;  // ring of the IOs from head_ to next_seq_
  DependencyTracker deps_;
  std::vector<Slot> finished_;  // finished IOs not yet handed over
  std::vector<Completion> done_;
  std::vector<uint32_t> pending_;  // slots prepared, not yet submitted
  int64_t pending_rec_ns_ = 0;     // the recorded issue time of the last of them
  Progress prog_;

  uint64_t next_seq_ = 0, head_ = 0, in_flight_ = 0;
  ReplayIo next_;
  bool have_next_ = false;
  bool next_held_ = false;  // the queue-depth rule held `next_` back
  int64_t start_ = 0;
  int64_t last_ready_ = 0;  // when the queue-depth rule let the last submitted IO go
  int64_t last_reap_ = 0;   // when completions last freed the queue
  int64_t drained_at_ = 0;  // when the replay last had nothing in flight
  int64_t next_progress_ = 0;
};

}  // namespace iotape::replay

// The timed part of a replay: the loop that issues the scheduled IOs on the
// engine and reaps them, and the thread that decodes the schedule for it.
//
// Threads: a ScheduleFeed runs Schedule::next() on a thread of its own and
// hands IOs to the issue loops (its lanes, one per issue thread) in batches
// of kBatch, batch b to lane b % lanes; an issue loop runs on the thread that
// calls IssueLoop::run() (its engine's thread) and hands each finished IO, in
// issue order and in one batch per batch it was fed, to its result queue
// (result_writer.h), which the result's thread reads lane by lane in the same
// rotation. Beyond that no object is shared: one thread drives each.
//
// An issue loop never waits for the feed while it has IOs in flight (it
// reaps them meanwhile): a lane that waited holding IOs of the batch the
// result's thread needs next would stop every lane.
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
#include "replay/completion_poll.h"
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
  uint32_t qd = 0;  // IOs in flight on its lane when it was submitted, itself included
  bool done = false;
  bool ends_batch = false;  // the last IO of a batch from the feed: the loop hands the batch on
};

// What a lane of the feed has for its issue loop.
enum class Fed {
  kIo,           // the next IO
  kLastOfBatch,  // the next IO, the last of its batch
  kNotYet,       // try_next(): the decoder is behind
  kEnd,          // the schedule has ended (or failed: see ScheduleFeed::rethrow_error())
};

// The IOs of one lane, for one issue loop's thread.
class FeedLane {
 public:
  // The next IO of the lane, blocking while the decoder is behind.
  Fed next(ReplayIo& io) {
    if (pos_ == batch_.size()) {
      if (!q_.pop(batch_)) return Fed::kEnd;
      pos_ = 0;
    }
    return take(io);
  }
  // The same without blocking: kNotYet when no IO is decoded yet.
  Fed try_next(ReplayIo& io) {
    if (pos_ < batch_.size()) return take(io);
    switch (q_.try_pop(batch_)) {
      case BatchQueue<ReplayIo>::Popped::kBatch:
        pos_ = 0;
        return take(io);
      case BatchQueue<ReplayIo>::Popped::kEmpty:
        return Fed::kNotYet;
      default:
        return Fed::kEnd;
    }
  }
  // No more IOs wanted: the decoder stops (and ends every lane) when it next
  // has a batch for this one, so no lane waits for IOs it cannot have.
  void stop() { q_.close(); }

 private:
  friend class ScheduleFeed;
  Fed take(ReplayIo& io) {
    io = batch_[pos_++];
    return pos_ == batch_.size() ? Fed::kLastOfBatch : Fed::kIo;
  }

  BatchQueue<ReplayIo> q_;
  std::vector<ReplayIo> batch_;  // the current batch
  size_t pos_ = 0;
};

// Decodes `schedule` on a thread of its own, started by the constructor,
// into `lanes` lanes. Each lane is for one other thread only. The destructor
// stops the thread (closing the queues) and joins it.
// REQUIRES: `schedule` outlives this object; lanes >= 1.
class ScheduleFeed {
 public:
  explicit ScheduleFeed(Schedule& schedule, uint32_t lanes = 1);
  ~ScheduleFeed();
  ScheduleFeed(const ScheduleFeed&) = delete;
  ScheduleFeed& operator=(const ScheduleFeed&) = delete;

  FeedLane& lane(uint32_t i) { return lanes_[i]; }
  // Throws what the schedule threw, if it did.
  // REQUIRES: every lane returned kEnd.
  void rethrow_error() const;

 private:
  void decode(Schedule& schedule);  // the thread's body
  void close();

  std::vector<FeedLane> lanes_;
  std::exception_ptr error_;
  std::thread thread_;
};

// A lane's counts for the progress line: the lane's loop stores them, the
// reporting loop reads every lane's (its own cache line: no lane slows
// another).
struct alignas(64) LaneCounts {
  std::atomic<uint64_t> issued{0}, completed{0}, errors{0};
};

// The issue loop of one lane of a replay. Constructing it waits for the
// lane's first scheduled IO. run() once, then hand_over_rest().
// REQUIRES: every reference given outlives the loop; the engine is used by
// this loop's thread only; `finished` is consumed by another thread.
class IssueLoop {
 public:
  // `out`: the lane's own (interrupted, failures); `lane`: its index, for
  // the fidelity's completion order and counts[lane]; `progress`, when set,
  // is called with the sum of every lane's counts.
  IssueLoop(const ReplayOptions& o, UringEngine& engine, FeedLane& feed, BatchQueue<Slot>& finished, Fidelity& fidelity,
            Outcome& out, uint32_t limit, uint64_t planned, const std::function<void(const Progress&)>& progress,
            std::vector<LaneCounts>& counts, uint32_t lane = 0);

  // Issues every IO of the lane from `start_ns` (monotonic) on and returns
  // once the last has completed; when `stop` or `halt` is set (or
  // --stop-on-error meets an error, which then sets `halt` for the other
  // lanes) it issues nothing more and drains. Sets out.interrupted and
  // out.failures.
  void run(int64_t start_ns, const std::atomic<bool>& stop, std::atomic<bool>& halt);
  // Hands the finished IOs not yet handed over to the result's queue, and
  // closes it.
  void hand_over_rest();
  // The time run() waited for the decoder or the result's thread (blocked on
  // the feed with nothing in flight, or on a full result queue).
  int64_t blocked_ns() const { return blocked_ns_; }
  // Its polls for a completion before sleeping (completion_poll.h).
  const CompletionPoll& completion_poll() const { return poll_; }

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
  void fetch();
  void publish();

  const ReplayOptions& o_;
  UringEngine& engine_;
  FeedLane& feed_;
  BatchQueue<Slot>& finished_q_;
  Fidelity& fidelity_;
  Outcome& out_;
  const uint32_t limit_;  // the most IOs in flight
  const std::function<void(const Progress&)>& progress_;
  std::vector<LaneCounts>& counts_;
  const uint32_t lane_;

  std::vector<Slot> slots_;  // ring of the IOs from head_ to next_seq_
  DependencyTracker deps_;
  CompletionPoll poll_;
  std::vector<Slot> finished_;  // finished IOs not yet handed over
  std::vector<Completion> done_;
  std::vector<uint32_t> pending_;  // slots prepared, not yet submitted
  int64_t pending_rec_ns_ = 0;     // the recorded issue time of the last of them
  Progress prog_;

  uint64_t next_seq_ = 0, head_ = 0, in_flight_ = 0;
  ReplayIo next_;
  bool have_next_ = false;
  bool next_ends_batch_ = false;
  bool fed_all_ = false;    // the lane has no IO left to give (or the replay stops)
  bool next_held_ = false;  // the queue-depth rule held `next_` back
  int64_t start_ = 0;
  int64_t last_ready_ = 0;  // when the queue-depth rule let the last submitted IO go
  int64_t last_reap_ = 0;   // when completions last freed the queue
  int64_t drained_at_ = 0;  // when the replay last had nothing in flight
  int64_t next_progress_ = 0;
  int64_t blocked_ns_ = 0;
};

}  // namespace iotape::replay

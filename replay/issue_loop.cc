#include "replay/issue_loop.h"

#include <algorithm>

#include "host/clocks.h"

namespace iotape::replay {
namespace {

constexpr uint64_t kSlots = 1u << 14;      // IOs between the oldest unfinished one and the newest
// With fewer IOs in flight than this, a completion is polled for before
// sleeping (completion_poll.h says for how long and when not): on this kind
// of VM a sleeping thread takes 10-20 us to wake, longer than a fast device's
// whole service time, and the replay would fall behind the recording at
// queue depth 1 (measured: a 20 us poll keeps a QD1 capture's duration, 5-10
// us does not). With this many IOs in flight the device has work for longer than a
// wake-up takes: the replayer sleeps for the next completion instead, and
// leaves the CPU to a device that needs it (a loop device's worker). Polling
// at any depth cost afap QD32 on a tmpfs loop device 3.2 us of CPU per IO
// (fio: 2.1) and was no faster.
constexpr uint64_t kPollMaxInFlight = 8;
// IOs per submission, unless they were recorded at one instant (a plug or an
// io_submit batch, replayed as one): io_uring plugs a submission of more than
// two, and the block layer then holds every request of it until the last is
// built while a fast device drains (afap QD32, tmpfs loop device:
// queue-to-dispatch p50 19 us and the device idle 18% of the time, against
// fio's 0.3 us and 2%; fio submits one IO per system call).
constexpr size_t kSubmitMax = 2;
// A deadline is slept for up to this long before it, then polled for: a
// timer wakes the thread 10-60 us late on this kind of VM.
constexpr int64_t kLeadNs = 30'000;

}  // namespace

ScheduleFeed::ScheduleFeed(Schedule& schedule, uint32_t lanes)
    : lanes_(lanes), thread_([this, &schedule] { decode(schedule); }) {}

ScheduleFeed::~ScheduleFeed() {
  close();
  if (thread_.joinable()) thread_.join();
}

void ScheduleFeed::close() {
  for (FeedLane& l : lanes_) l.q_.close();
}

void ScheduleFeed::decode(Schedule& schedule) {
  try {
    std::vector<ReplayIo> batch;
    ReplayIo io;
    size_t lane = 0;
    while (schedule.next(io)) {
      batch.push_back(io);
      if (batch.size() < kBatch) continue;
      if (!lanes_[lane].q_.push(batch)) break;  // a lane stopped: the replay is stopping
      lane = (lane + 1) % lanes_.size();
    }
    if (!batch.empty()) lanes_[lane].q_.push(batch);
  } catch (...) {
    error_ = std::current_exception();
  }
  close();
}

void ScheduleFeed::rethrow_error() const {
  if (error_) std::rethrow_exception(error_);
}

IssueLoop::IssueLoop(const ReplayOptions& o, UringEngine& engine, FeedLane& feed, BatchQueue<Slot>& finished,
                     Fidelity& fidelity, Outcome& out, uint32_t limit, uint64_t planned,
                     const std::function<void(const Progress&)>& progress, std::vector<LaneCounts>& counts,
                     uint32_t lane)
    : o_(o),
      engine_(engine),
      feed_(feed),
      finished_q_(finished),
      fidelity_(fidelity),
      out_(out),
      limit_(limit),
      progress_(progress),
      counts_(counts),
      lane_(lane),
      slots_(kSlots) {
  finished_.reserve(kBatch);
  fetch();
  prog_.planned = planned;
}

// Takes the lane's next IO into `next_` when there is none: waits for the
// decoder only with nothing in flight (see the header).
void IssueLoop::fetch() {
  if (have_next_ || fed_all_) return;
  Fed f;
  if (in_flight_) {
    f = feed_.try_next(next_);
  } else {
    const int64_t t = host::monotonic_ns();
    f = feed_.next(next_);
    blocked_ns_ += host::monotonic_ns() - t;
  }
  have_next_ = f == Fed::kIo || f == Fed::kLastOfBatch;
  next_ends_batch_ = f == Fed::kLastOfBatch;
  fed_all_ = f == Fed::kEnd;
}

bool IssueLoop::is_done(uint64_t seq) const { return seq < head_ || slots_[seq % kSlots].done; }

void IssueLoop::run(int64_t start_ns, const std::atomic<bool>& stop, std::atomic<bool>& halt) {
  start_ = last_reap_ = drained_at_ = start_ns;
  blocked_ns_ = 0;
  next_progress_ = start_ns + 1'000'000'000;
  while (!fed_all_ || have_next_ || in_flight_ > 0) {
    if (!fed_all_ &&
        (stop.load(std::memory_order_relaxed) || halt.load(std::memory_order_relaxed) || out_.interrupted)) {
      if (out_.interrupted) halt.store(true, std::memory_order_relaxed);
      out_.interrupted = true;
      have_next_ = false;
      fed_all_ = true;
      feed_.stop();
    }
    const int64_t now = host::monotonic_ns();
    const Admitted a = admit(now);
    submit();
    report_progress(now);
    if (reap()) continue;  // completions may have unblocked the next IO
    if (a.more_due) continue;
    if (in_flight_ == 0 && a.wake == INT64_MAX) continue;  // nothing in flight: the loop ends, issues or waits for IOs
    wait(now, a.wake);
  }
}

// Prepares the IOs that are due by `now` and that the queue-depth rule lets
// go, up to the next submission's worth.
IssueLoop::Admitted IssueLoop::admit(int64_t now) {
  Admitted a;
  const auto done = [this](uint64_t seq) { return is_done(seq); };
  for (fetch(); have_next_; fetch()) {
    if (pending_.size() >= kSubmitMax && next_.rec_time_ns != pending_rec_ns_) {
      a.more_due = true;
      break;
    }
    if (next_seq_ - head_ == kSlots || in_flight_ >= limit_ || (o_.qd == 0 && !deps_.ready(next_.rec_time_ns, done))) {
      next_held_ = true;
      break;
    }
    int64_t due = start_;
    if (o_.timing == Timing::kOriginal) {
      due = start_ + next_.due_ns;
    } else if (next_.idle_ns > 0) {
      if (in_flight_ > 0) break;  // the idle gap starts when the replay drains
      due = drained_at_ + next_.idle_ns;
    }
    if (due > now) {
      a.wake = due;
      break;
    }
    // IOs due by now go kSubmitMax to a system call. Nothing is reaped
    // until the submission, so the IOs counted here are exactly those in
    // flight when it is submitted.
    // IOs go in recorded order: one that waited holds back those after it.
    const int64_t ready = std::max(next_held_ ? std::max(due, last_reap_) : due, last_ready_);
    last_ready_ = ready;
    const auto slot = static_cast<uint32_t>(next_seq_ % kSlots);
    slots_[slot] = Slot{
        .io = next_, .ready_ns = ready, .qd = static_cast<uint32_t>(in_flight_ + 1), .ends_batch = next_ends_batch_};
    next_held_ = false;
    // An IO the engine carries out at once (a discard by ioctl) was issued
    // then, not at the submission that follows. The IOs prepared before it
    // go first, as recorded: submitted after it, they would be issued after
    // it, and their submission times would no longer follow the IOs' order,
    // which device times rely on.
    const bool at_once = engine_.runs_at_once(next_);
    if (at_once) submit();
    const int64_t before = at_once ? host::monotonic_ns() : 0;
    if (engine_.prepare(next_, slot)) slots_[slot].issue_ns = before;
    pending_.push_back(slot);
    pending_rec_ns_ = next_.rec_time_ns;
    if (o_.qd == 0) deps_.issued(next_.rec_complete_ns, next_seq_);
    ++next_seq_;
    ++in_flight_;
    have_next_ = false;
  }
  return a;
}

void IssueLoop::submit() {
  if (pending_.empty()) return;
  const int64_t t = engine_.submit();
  for (uint32_t slot : pending_)
    if (slots_[slot].issue_ns == 0) slots_[slot].issue_ns = t;
  prog_.issued += pending_.size();
  pending_.clear();
}

void IssueLoop::publish() {
  LaneCounts& c = counts_[lane_];
  c.issued.store(prog_.issued, std::memory_order_relaxed);
  c.completed.store(prog_.completed, std::memory_order_relaxed);
  c.errors.store(prog_.errors, std::memory_order_relaxed);
}

void IssueLoop::report_progress(int64_t now) {
  if (progress_ && now >= next_progress_) {
    publish();
    Progress all = prog_;
    all.issued = all.completed = all.errors = 0;
    for (const LaneCounts& c : counts_) {
      all.issued += c.issued.load(std::memory_order_relaxed);
      all.completed += c.completed.load(std::memory_order_relaxed);
      all.errors += c.errors.load(std::memory_order_relaxed);
    }
    all.elapsed_ns = now - start_;
    progress_(all);
    next_progress_ = now + 1'000'000'000;
  }
}

// Takes the completions that are ready; false when there were none.
bool IssueLoop::reap() {
  engine_.reap(done_);
  if (done_.empty()) return false;
  const int64_t now = done_.back().complete_ns;
  last_reap_ = now;
  for (const auto& c : done_) complete(c);
  in_flight_ -= done_.size();
  if (in_flight_ == 0) drained_at_ = now;
  done_.clear();
  hand_over_finished();
  if (counts_.size() > 1) publish();
  return true;
}

void IssueLoop::complete(const Completion& c) {
  Slot& s = slots_[c.tag];
  s.done = true;
  s.complete_ns = c.complete_ns;
  s.status = c.status;
  fidelity_.completed(s.io.source_index, lane_);
  ++prog_.completed;
  if (s.status) {
    ++prog_.errors;
    if (out_.failures.size() < Outcome::kKeptFailures)
      out_.failures.push_back({.source_index = s.io.source_index, .target = s.io.target, .op = s.io.op,
                               .offset = s.io.offset, .length = s.io.length, .status = s.status});
    if (o_.stop_on_error) out_.interrupted = true;
  }
}

// The finished IOs at the head, in issue order, go to the result's thread a
// batch at a time, as the feed handed them over.
void IssueLoop::hand_over_finished() {
  while (head_ < next_seq_ && slots_[head_ % kSlots].done) {
    const Slot& s = slots_[head_ % kSlots];
    finished_.push_back(s);
    if (s.ends_batch) {
      const int64_t t = host::monotonic_ns();
      if (!finished_q_.push(finished_)) out_.interrupted = true;
      blocked_ns_ += host::monotonic_ns() - t;
    }
    ++head_;
  }
}

// Nothing to submit and nothing reaped: waits for the next completion or for
// `wake`, when the next IO becomes due (INT64_MAX: none is waiting for a time).
void IssueLoop::wait(int64_t now, int64_t wake) {
  // With IOs in flight and nothing due, the next completion is the next
  // event: wait for it without a timer (a signal interrupts the wait).
  int64_t deadline = wake == INT64_MAX ? (in_flight_ > 0 ? INT64_MAX : now + 100'000'000) : wake;
  const bool for_completion = in_flight_ > 0 && in_flight_ < kPollMaxInFlight;
  int64_t poll = for_completion ? poll_.budget() : 0;
  if (wake != INT64_MAX) {
    if (wake - now <= kLeadNs)
      poll = wake - now;  // close: poll to the deadline
    else
      deadline = wake - kLeadNs;  // sleep to just before it, then poll the rest
  }
  const bool hit = engine_.wait(deadline, poll);
  // A poll cut short by the deadline says nothing of the device, unless it found a completion.
  if (for_completion && poll == CompletionPoll::kPollNs && (hit || deadline - now >= poll)) poll_.found(hit);
}

void IssueLoop::hand_over_rest() {
  if (!finished_.empty()) finished_q_.push(finished_);
  finished_q_.close();
}

}  // namespace iotape::replay

// A bounded queue of batches between two threads. The replay loop must never
// wait for trace decoding or result encoding, so both run on their own
// threads and hand IOs over a batch at a time (one lock per batch, not per
// IO). The bound keeps memory constant: a producer that gets ahead waits.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <vector>

namespace iotape::replay {

template <class T>
class BatchQueue {
 public:
  explicit BatchQueue(size_t max_batches = 8) : max_(max_batches) {}

  // Hands `batch` over, blocking while the queue is full, and leaves in it an
  // emptied vector the consumer gave back, so that steady-state hand-overs
  // allocate nothing. False when the consumer has closed the queue.
  bool push(std::vector<T>& batch) {
    std::unique_lock lock(mu_);
    not_full_.wait(lock, [&] { return q_.size() < max_ || closed_; });
    if (closed_) return false;
    q_.push_back(std::move(batch));
    batch = take_spare();
    not_empty_.notify_one();
    return true;
  }
  // Blocks until a batch arrives and swaps it into `batch` (whose old
  // contents are dropped); false once the queue is closed and empty.
  bool pop(std::vector<T>& batch) {
    std::unique_lock lock(mu_);
    not_empty_.wait(lock, [&] { return !q_.empty() || closed_; });
    if (q_.empty()) return false;
    batch.clear();
    if (batch.capacity() && spares_.size() <= max_) spares_.push_back(std::move(batch));
    batch = std::move(q_.front());
    q_.pop_front();
    not_full_.notify_one();
    return true;
  }
  enum class Popped { kBatch, kEmpty, kClosed };
  // pop() without blocking: kEmpty when no batch is queued yet.
  Popped try_pop(std::vector<T>& batch) {
    std::unique_lock lock(mu_);
    if (q_.empty()) return closed_ ? Popped::kClosed : Popped::kEmpty;
    lock.unlock();
    pop(batch);
    return Popped::kBatch;
  }
  // No more batches: wakes both sides. Batches already queued are still popped.
  void close() {
    std::lock_guard lock(mu_);
    closed_ = true;
    not_empty_.notify_all();
    not_full_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable not_empty_, not_full_;
  std::vector<T> take_spare() {
    if (spares_.empty()) return {};
    std::vector<T> v = std::move(spares_.back());
    spares_.pop_back();
    return v;
  }

  std::deque<std::vector<T>> q_;
  std::vector<std::vector<T>> spares_;  // emptied batches, capacity kept
  size_t max_;
  bool closed_ = false;
};

}  // namespace iotape::replay

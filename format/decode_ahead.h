// DecodeAhead: the bounded, ordered hand-over between a thread that reads and
// decodes chunks and the one that uses them (TraceReader with
// ReaderOptions::decode_ahead). `Item` is what one chunk becomes: default
// constructible, filled again and again (its buffers are recycled).
//
// Threads: DecodeAhead runs `produce` (and `idle`, when every item is out) on
// a thread of its own, between start() and stop(), one call at a time and in
// order. Every other member is called by one consumer thread. The items are
// depth + 1, produced ahead of the one the consumer holds and of those it
// keeps (keep_held), so memory is bounded by depth + 1 items whatever the
// trace's length. The item next() returns is the consumer's until its next
// call to next() or stop(), or until it gives it back after keep_held().
// The destructor stops the thread.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace iotape::format {

template <class Item>
class DecodeAhead {
 public:
  // Fills the next item, recycling what `out` held; returns false when it was
  // the last (the end of the stream), after which it is not called again
  // until the next start().
  using Produce = std::function<bool(Item& out)>;
  // Optional: work the thread does while every item is produced ahead, one
  // piece per call; returns false when it has none, and the thread waits.
  using Idle = std::function<bool()>;

  DecodeAhead(unsigned depth, Produce produce, Idle idle = nullptr)
      : produce_(std::move(produce)), idle_(std::move(idle)) {
    for (unsigned i = 0; i < std::max(depth, 1u) + 1; ++i) free_.push_back(std::make_unique<Item>());
  }
  ~DecodeAhead() { stop(); }
  DecodeAhead(const DecodeAhead&) = delete;
  DecodeAhead& operator=(const DecodeAhead&) = delete;

  void start() {
    stopping_ = false;
    error_ = nullptr;
    thread_ = std::thread(&DecodeAhead::run, this);
  }

  // Waits for the thread to end and discards the items not handed over.
  void stop() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    thread_.join();
    for (; !ready_.empty(); ready_.pop_front()) free_.push_back(std::move(ready_.front()));
    if (held_) free_.push_back(std::move(held_));
  }

  // For produce: whether the consumer waits for the item being produced, so
  // that work left in it is better done by the consumer than waited for.
  bool consumer_waiting() const { return waiting_.load(std::memory_order_relaxed); }

  // The item next() returned last stays the consumer's past the next call to
  // next(), until it gives it back (stop() does not take it back).
  std::unique_ptr<Item> keep_held() {
    std::lock_guard lock(mutex_);
    return std::move(held_);
  }
  void give_back(std::unique_ptr<Item> item) {
    {
      std::lock_guard lock(mutex_);
      free_.push_back(std::move(item));
    }
    changed_.notify_all();
  }

  // The next item in order, waiting for it. An exception thrown by produce is
  // rethrown here, and by every later call, once the items produced before it
  // were handed over.
  // REQUIRES: started, and the last item not handed over yet.
  Item& next() {
    std::unique_lock lock(mutex_);
    if (held_) {
      free_.push_back(std::move(held_));
      changed_.notify_all();
    }
    waiting_ = ready_.empty() && !error_;
    changed_.wait(lock, [&] { return !ready_.empty() || error_; });
    waiting_ = false;
    if (ready_.empty()) std::rethrow_exception(error_);
    held_ = std::move(ready_.front());
    ready_.pop_front();
    return *held_;
  }

 private:
  void run() {
    for (bool more = true; more;) {
      std::unique_ptr<Item> item;
      for (bool idle_work = true; !item;) {
        std::unique_lock lock(mutex_);
        if (!idle_work || !idle_) changed_.wait(lock, [&] { return stopping_ || !free_.empty(); });
        if (stopping_) return;
        if (free_.empty()) {
          lock.unlock();
          idle_work = idle_();
          continue;
        }
        item = std::move(free_.front());
        free_.pop_front();
      }
      std::exception_ptr error;
      try {
        more = produce_(*item);
      } catch (...) {
        error = std::current_exception();
        more = false;
      }
      {
        std::lock_guard lock(mutex_);
        if (error) error_ = error;
        (error ? free_ : ready_).push_back(std::move(item));
      }
      changed_.notify_all();
    }
  }

  const Produce produce_;
  const Idle idle_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::unique_ptr<Item>> free_;   // for the producer to fill
  std::deque<std::unique_ptr<Item>> ready_;  // filled, in order
  std::unique_ptr<Item> held_;               // the consumer's
  bool stopping_ = false;
  std::atomic<bool> waiting_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace iotape::format

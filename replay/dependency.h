// The dependency rule of --qd recorded: an IO may be issued only once every IO
// that had completed before its recorded issue time has completed in the
// replay. IOs are issued in trace order, so those IOs were all issued
// earlier; the rule then says no IO still outstanding in the replay may have
// a recorded completion before that time.
//
// A min-heap of recorded completion times of issued IOs answers that. IOs
// that completed in the replay are dropped lazily when they reach the top, so
// the heap holds about the recorded queue depth plus the replay's in-flight
// IOs: bounded however long the trace.
// Used by the one thread that issues the IOs.
#pragma once

#include <cstdint>
#include <functional>
#include <queue>
#include <utility>
#include <vector>

namespace iotape::replay {

class DependencyTracker {
 public:
  void issued(int64_t recorded_complete_ns, uint64_t seq) { heap_.emplace(recorded_complete_ns, seq); }

  // True when an IO recorded at `t` may be issued. `done(seq)` says whether
  // issued IO `seq` has completed in the replay.
  template <class Done>
  bool ready(int64_t t, Done&& done) {
    while (!heap_.empty()) {
      const auto& [complete, seq] = heap_.top();
      if (!done(seq)) return complete >= t;
      heap_.pop();
    }
    return true;
  }

  size_t size() const { return heap_.size(); }

 private:
  using Entry = std::pair<int64_t, uint64_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap_;
};

}  // namespace iotape::replay

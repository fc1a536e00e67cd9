// IssueOrder: turns completed IOs, which arrive in completion order, back
// into issue order before they reach the TraceWriter.
//
// Each poll's IOs form one run, sorted once; release() merges the fronts of
// the runs and hands out every IO issued more than `window_ns` before now.
// An IO in flight longer than the window arrives after its place was written
// and is stored late (the writer counts it). Cheaper than a heap over all held
// IOs: each IO is sorted within its run, then merged once, in cache-friendly order.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_set>
#include <vector>

#include "capture/backend.h"

namespace iotape::capture {

class IssueOrder {
 public:
  // At most `max_ios` are held; beyond it the oldest go out early.
  IssueOrder(int64_t window_ns, size_t max_ios);

  void add(const Io& io);  // copies the IO; its comm is interned here
  void seal();             // ends the current run: call after each poll
  // Emits, in issue order, the IOs issued before now_ns - window (all of them
  // with drain).
  void release(int64_t now_ns, const IoSink& emit, bool drain = false);
  size_t held() const { return held_; }

 private:
  struct Run {
    std::vector<Io> ios;
    size_t next = 0;
  };
  int64_t window_ns_;
  size_t max_ios_;
  size_t held_ = 0;
  std::vector<Io> open_;
  std::deque<Run> runs_;
  std::unordered_set<std::string> comms_;  // interned names; views into it stay valid
};

}  // namespace iotape::capture

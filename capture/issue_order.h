// IssueOrder: turns completed IOs, which arrive in completion order, back
// into issue order before they reach the TraceWriter.
//
// Each poll's IOs form one run, sorted once; release(before) merges the
// fronts of the runs and hands out every IO issued before `before`. The
// caller passes a time no IO still to come was issued before (the back end's
// oldest outstanding issue time), so what goes out is final; an IO that comes
// after its place was written (one in flight longer than the caller waits)
// is stored late, and the writer counts it. IOs with equal issue times go out
// in arrival order. Cheaper than a heap over all held IOs: each IO is sorted
// within its run, then merged once, in cache-friendly order.
#pragma once

#include <cstdint>
#include <vector>

#include "format/name_interner.h"
#include "observer/backend.h"

namespace iotape::capture {

class IssueOrder {
 public:
  // At most `max_ios` are held; beyond it the oldest go out early.
  explicit IssueOrder(size_t max_ios);

  void add(const format::Io& io);  // copies the IO; its comm is interned here
  void seal();             // ends the current run: call after each poll
  // Emits, in issue order, the IOs issued before `before_ns` (all of them
  // with drain).
  void release(int64_t before_ns, const observer::IoSink& emit, bool drain = false);
  size_t held() const { return held_; }
  // The earliest completion time among the held IOs; kNoTime when none has
  // one. Reads every held IO.
  int64_t earliest_completion() const;

 private:
  struct Run {
    std::vector<format::Io> ios;
    size_t next;   // first IO not yet emitted
    uint64_t seq;  // sealing order: of two equal fronts, the earlier run's goes first
    int64_t front() const { return ios[next].issue_ns; }
  };
  // Heap order: true when `a`'s front goes out after `b`'s.
  static bool after(const Run& a, const Run& b) {
    return a.front() != b.front() ? a.front() > b.front() : a.seq > b.seq;
  }

  size_t max_ios_;
  size_t held_ = 0;
  uint64_t sealed_ = 0;
  std::vector<format::Io> open_;
  std::vector<Run> runs_;                // a heap: the run whose front goes out next on top
  // Emptied runs' vectors, all kept: their pages are already mapped (a fresh
  // vector's page faults cost the recorder 8% of its CPU), and there are never
  // more of them than runs held at once.
  std::vector<std::vector<format::Io>> spare_;
  format::NameInterner names_;
};

}  // namespace iotape::capture

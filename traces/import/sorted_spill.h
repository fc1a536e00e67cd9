// Sorting IOs by issue time in bounded memory, for inputs in no time order
// (SYSTOR, Tencent, several files of one trace): an external merge sort.
// Runs of up to `run_ios` IOs are sorted in memory; a full run is written to
// an unlinked temporary file; drain() merges the runs (k-way) into the
// writer. IOs with equal issue times keep their input order.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "traces/io.h"
#include "traces/writer.h"

namespace iotape {

class SortedSpill {
 public:
  // `dir` holds the spilled runs; empty means $TMPDIR or /tmp.
  explicit SortedSpill(size_t run_ios = 1 << 20, std::string dir = "");
  ~SortedSpill();  // closes (and so removes) the spilled runs
  SortedSpill(const SortedSpill&) = delete;
  SortedSpill& operator=(const SortedSpill&) = delete;

  // Holds a copy of `io` (its comm included).
  void add(const Io& io);
  // Appends every IO held, in issue-time order, and empties the sorter.
  void drain(TraceWriter& out);

  uint64_t spilled_runs() const { return spilled_; }  // runs written to disk so far

 private:
  struct Held {
    Io io;            // io.comm is empty; the name lives in arena_
    size_t comm_at;
    uint32_t comm_len;
  };
  void spill();

  size_t run_ios_;
  std::string dir_;
  std::vector<Held> held_;
  std::string arena_;               // process names of held_
  std::vector<std::FILE*> runs_;    // spilled runs, each sorted
  uint64_t spilled_ = 0;
};

}  // namespace iotape

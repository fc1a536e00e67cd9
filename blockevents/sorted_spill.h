// Sorting in bounded memory, for inputs in no time order (SYSTOR, Tencent,
// several files of one trace, blkparse text printed CPU by CPU): an external
// merge sort. Runs of up to `run` records are sorted in memory; a full run is
// written to an unlinked temporary file; drain() merges the runs (k-way).
// Records with equal keys keep their input order.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "format/io.h"

namespace iotape::blockevents {

// Records of any kind, sorted by a 64-bit key: each is `fixed_bytes` bytes
// copied as they are (a trivially copyable struct) and a string of any length
// (a process name).
class RecordSpill {
 public:
  // `dir` holds the spilled runs; empty means $TMPDIR or /tmp.
  RecordSpill(size_t fixed_bytes, size_t run, std::string dir = "");
  ~RecordSpill();  // closes (and so removes) the spilled runs
  RecordSpill(const RecordSpill&) = delete;
  RecordSpill& operator=(const RecordSpill&) = delete;

  // Holds a copy of the record.
  void add(int64_t key, const void* fixed, std::string_view text);
  // Calls visit(fixed, text) for every record held, in key order, and
  // empties the sorter. Both point into the sorter until visit returns.
  void drain(const std::function<void(const void* fixed, std::string_view text)>& visit);

  uint64_t spilled_runs() const { return spilled_; }  // runs written to disk so far

 private:
  struct Held {
    int64_t key;
    size_t at;          // the fixed part and then the text, in arena_
    uint32_t text_len;
  };
  void spill();

  size_t fixed_bytes_;
  size_t run_;
  std::string dir_;
  std::vector<Held> held_;
  std::string arena_;
  std::vector<std::FILE*> runs_;  // spilled runs, each sorted
  uint64_t spilled_ = 0;
};

// IOs sorted by issue time.
class SortedSpill {
 public:
  explicit SortedSpill(size_t run_ios = 1 << 20, std::string dir = "");

  // Holds a copy of `io` (its comm included).
  void add(const format::Io& io);
  // Passes every IO held to `append`, in issue-time order, and empties the
  // sorter. The IO's comm points into the sorter until `append` returns.
  void drain(const std::function<void(const format::Io&)>& append);

  uint64_t spilled_runs() const { return records_.spilled_runs(); }

 private:
  RecordSpill records_;
};

}  // namespace iotape::blockevents

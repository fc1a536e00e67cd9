// The kernel's ftrace blk tracer on one loop device, read as text: an
// independent witness of the requests a device saw, for tests of what
// iotape records and replays. Construction selects the tracer (mounting
// tracefs if needed) with the CLOCK_MONOTONIC trace clock; destruction puts
// back every setting it changed and unmounts what it mounted. One at a time:
// the tracer is global.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tests/test_support.h"

namespace iotape::test {

class BlkTrace {
 public:
  // Merged requests would hide the IOs that were issued: by default merges
  // are switched off for the tracer's life; `keep_merges` leaves them be.
  // The ring buffer holds `buffer_kb` per CPU.
  explicit BlkTrace(const LoopDevice& dev, bool keep_merges = false, int buffer_kb = 8192);
  ~BlkTrace();
  BlkTrace(const BlkTrace&) = delete;
  BlkTrace& operator=(const BlkTrace&) = delete;

  // Issue (D) events so far as (op letter, byte offset, bytes), flush
  // requests aside. Op letters: 'R' read, 'W' write, 'D' discard, 'N' none
  // of them.
  std::multiset<std::tuple<char, uint64_t, uint64_t>> issued() const;

  // Each request's issue (D) to completion (C), in nanoseconds of the
  // tracer's clock (printed to the microsecond), matched by op and range;
  // flush requests aside.
  std::vector<std::pair<int64_t, int64_t>> requests() const { return spans('D', 'C'); }

  // Every request, flush requests too (as op 'N', offset and length 0), with
  // what each was.
  struct Request {
    char op;
    uint64_t offset, length;
    int64_t issue_ns, complete_ns;
  };
  std::vector<Request> completed_requests() const;

  // Events the ring buffer overwrote (it keeps the newest when full).
  uint64_t overwritten() const;

  // Each request's wait from its queueing (Q) to its issue (D), in nanoseconds.
  std::vector<int64_t> queue_waits() const;

 private:
  struct Event {
    char action, op;
    uint64_t offset, length;
    int64_t time_ns;
    bool ranged;  // false: a flush request's event, printed without sectors
  };
  std::vector<std::pair<int64_t, int64_t>> spans(char from, char to) const;
  std::vector<Request> matched(char from, char to, bool with_flushes) const;
  std::vector<Event> events() const;
  std::string sys(const std::string& f) const { return "/sys/block/" + dev_.name() + "/" + f; }

  const LoopDevice& dev_;
  bool mounted_ = false;
  bool keep_merges_;
  std::string nomerges_, clock_, buffer_kb_;
};

}  // namespace iotape::test

// The result of a replay: its header, the thread that encodes the finished
// IOs into it, and the metadata the replay ends with.
//
// Threads: the constructor writes the header and starts the writer thread,
// which pops batches of finished IOs (issue_loop.h's Slot, in issue order)
// from the queue of each issue thread in turn, as the schedule's feed dealt
// them out, makes result IOs of them (with the device's times when a
// DeviceTimes is given, joined in the order the IOs were submitted across
// the lanes), adds them to the Fidelity in the schedule's order
// and appends them to the trace in issue order, holding back those that IOs
// of other lanes (or, with device times, the device) may yet precede. Every
// other member is for the thread that constructed the object: set_start()
// before the first batch is pushed, finish() after the last, then
// write_outcome(). The destructor closes the queues and joins the
// thread; it never throws (a result not closed by write_outcome() is closed
// as TraceWriter closes it).
#pragma once

#include <cstdint>
#include <deque>
#include <exception>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "format/writer.h"
#include "iotape/v1/trace.pb.h"
#include "replay/batch_queue.h"
#include "replay/device_times.h"
#include "replay/fidelity.h"
#include "replay/issue_loop.h"
#include "replay/replayer.h"

namespace iotape::replay {

// SHA-256 of the source files, in order: names the source in the result.
// Throws TraceError when one cannot be read.
std::string sha256_files(const std::vector<std::string>& paths);

class ResultWriter {
 public:
  // Creates the result trace o.result with the header of a replay of `p`
  // (`source`: the source trace's header; `device`: null when the result
  // carries the replayer's times, `user_times_reason` then says why).
  // REQUIRES: `device` (when given) and `fidelity` outlive this object.
  ResultWriter(const Prepared& p, const v1::TraceHeader& source, const std::string& source_sha256,
               DeviceTimes* device, const std::string& user_times_reason, Fidelity& fidelity);
  ~ResultWriter();
  ResultWriter(const ResultWriter&) = delete;
  ResultWriter& operator=(const ResultWriter&) = delete;

  // Where the issue loop of lane `lane` (from 0, below the options' threads)
  // pushes finished IOs, one batch per batch its feed lane gave it; the loop
  // closes it when done. Closed by the writer thread when it fails: a push
  // then returns false.
  BatchQueue<Slot>& queue(uint32_t lane) { return queues_[lane]; }
  // The replay's start (monotonic): fidelity counts from it; recorded as
  // replay.start_ns. REQUIRES: no batch pushed yet.
  void set_start(int64_t start_ns);
  // Closes the queues and waits for the writer thread to encode what it
  // holds; throws what the thread threw, if it did.
  void finish();
  // Records how the replay went (out: interrupted, duration, CPU, the
  // device's counts when device times were taken, fidelity, prefilled bytes
  // when `prefilled`) and closes the result. REQUIRES: finish() returned.
  void write_outcome(const Outcome& out, bool prefilled);

 private:
  // A batch of finished IOs as a lane handed it over, with their results;
  // the first `joined` have their device times.
  struct Pending {
    std::vector<Slot> batch;
    std::vector<format::Io> results;
    size_t joined = 0;
  };
  void encode();  // the writer thread's body
  void join_through(std::deque<Pending>& pending, int64_t through, std::vector<format::Io>& ready);
  bool next_batch(size_t& lane, std::vector<Slot>& batch, std::vector<int64_t>& submitted);
  // Finished IOs not yet written, in issue order: [first, ios.size()).
  struct Held {
    std::vector<format::Io> ios;
    size_t first = 0;
  };
  void append(Held& held, std::vector<format::Io>& results, int64_t through);

  DeviceTimes* device_;
  Fidelity& fidelity_;
  format::TraceWriter writer_;
  std::vector<BatchQueue<Slot>> queues_;  // by lane
  void close_queues();
  int64_t start_ = 0;  // set before the first finished IO is handed over
  std::vector<std::pair<format::Io*, int64_t>> joining_;  // join_through's: results and their submission
  std::vector<format::Io> ios_;                           // join_through's: the IOs joined
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace iotape::replay

// A closed loop on the engine: a fixed number of IOs in flight, the next one
// issued as soon as one finishes, as fio's iodepth keeps them. Prefill and
// iotape bench's phases run on it; a timed replay paces its own (replayer.cc).
// It runs on the calling thread, which owns the engine.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "host/clocks.h"
#include "replay/engine.h"

namespace iotape::replay {

// A finished IO: what was issued, when, and how it ended.
struct Finished {
  const ReplayIo& io;
  int64_t issue_ns;  // host::monotonic_ns()
  const Completion& completion;
};

class ClosedLoop {
 public:
  using OnFinished = std::function<void(const Finished&)>;
  // On an engine of its own for IOs of up to `max_length` bytes, `depth` in
  // flight. `on_finished` is called for every IO, in the order they finish,
  // from issue() and drain(); what it throws propagates and abandons the IOs
  // still in flight. REQUIRES: `targets` outlive the loop; depth >= 1.
  // `ring`: the engine's (UringEngine).
  ClosedLoop(const std::vector<Target>& targets, uint64_t max_length, uint32_t depth, DataPattern data,
             OnFinished on_finished, RingSetup ring = {});

  // Issues `io` once fewer than `depth` IOs are in flight, waiting for
  // completions until then. REQUIRES: io.length <= max_length.
  void issue(const ReplayIo& io);
  // Waits until every IO issued has finished.
  void drain();

 private:
  void settle(uint32_t at_most);  // waits until at most `at_most` are in flight

  struct Slot {
    ReplayIo io;
    int64_t issue_ns = 0;
  };
  UringEngine engine_;
  OnFinished on_finished_;
  std::vector<Slot> slots_;     // indexed by the engine tag
  std::vector<uint32_t> free_;  // tags not in flight
  std::vector<Completion> done_;
};

}  // namespace iotape::replay

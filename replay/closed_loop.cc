#include "replay/closed_loop.h"

#include <utility>

namespace iotape::replay {

ClosedLoop::ClosedLoop(const std::vector<Target>& targets, uint64_t max_length, uint32_t depth, DataPattern data,
                       OnFinished on_finished, RingSetup ring)
    : engine_(targets, max_length, depth, data, ring), on_finished_(std::move(on_finished)), slots_(depth) {
  for (uint32_t tag = depth; tag-- > 0;) free_.push_back(tag);
}

void ClosedLoop::issue(const ReplayIo& io) {
  settle(static_cast<uint32_t>(slots_.size()) - 1);
  const uint32_t tag = free_.back();
  free_.pop_back();
  slots_[tag].io = io;
  engine_.prepare(io, tag);
  slots_[tag].issue_ns = engine_.submit();
}

void ClosedLoop::drain() { settle(0); }

void ClosedLoop::settle(uint32_t at_most) {
  while (slots_.size() - free_.size() > at_most) {
    engine_.wait(INT64_MAX);
    done_.clear();
    engine_.reap(done_);
    for (const Completion& c : done_) {
      on_finished_({slots_[c.tag].io, slots_[c.tag].issue_ns, c});
      free_.push_back(c.tag);
    }
  }
}

}  // namespace iotape::replay

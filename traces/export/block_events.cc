#include "traces/export/block_events.h"

#include <algorithm>

namespace iotape {

void BlockEventStream::add(const Io& in) {
  Io io = in;
  if (!io.comm.empty()) {
    auto it = comms_.find(io.comm);
    if (it == comms_.end()) it = comms_.emplace(io.comm).first;
    io.comm = *it;
  }
  // Later IOs can still have queue events as early as their issue time minus
  // the longest queue-to-issue time seen so far.
  if (io.has_queue()) max_queue_lead_ = std::max(max_queue_lead_, io.issue_ns - io.queue_ns);
  release_before(io.issue_ns - max_queue_lead_);
  if (io.has_queue()) push(io.queue_ns, BlockAction::kQueue, io);
  push(io.issue_ns, BlockAction::kIssue, io);
  if (io.has_complete()) push(std::max(io.complete_ns, io.issue_ns), BlockAction::kComplete, io);
}

void BlockEventStream::finish() { release_before(std::numeric_limits<int64_t>::max()); }

void BlockEventStream::push(int64_t t, BlockAction a, const Io& io) { pending_.push({t, a, seq_++, io}); }

void BlockEventStream::release_before(int64_t t) {
  while (!pending_.empty() && pending_.top().time_ns < t) {
    const BlockEvent& e = pending_.top();
    if (last_delivered_ != kNoTime && e.time_ns < last_delivered_) ++out_of_order_;
    last_delivered_ = std::max(last_delivered_, e.time_ns);
    sink_(e);
    pending_.pop();
  }
}

}  // namespace iotape

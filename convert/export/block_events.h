// The IOs of a trace as the block layer's event stream: a Q (queue) event at
// the queue time, a D (issue) event at the issue time and a C (completion)
// event at the completion time of each IO, delivered in time order. This is
// what blktrace-family formats store.
#pragma once

#include <cstdint>
#include <functional>
#include <queue>
#include <string>
#include <vector>

#include "format/io.h"
#include "format/name_interner.h"

namespace iotape::convert {

// blktrace's category bits (blktrace::category) for an IO's events.
uint32_t blktrace_categories(const format::Io& io);
// The RWBS letters blkparse prints for events of those categories and size:
// [F]{D|W|R|N}[F][A][S][M], N for a zero-size request that is not a write.
std::string blkparse_rwbs(uint32_t categories, uint64_t bytes);

enum class BlockAction : uint8_t { kQueue, kIssue, kComplete };

struct BlockEvent {
  int64_t time_ns;
  BlockAction action;
  uint64_t seq;       // arrival order; breaks ties so Q precedes D precedes C
  format::Io io;      // comm points into the stream's own storage
};

// Feed IOs in issue order with add(); events come out of the callback in time
// order. Pending events are held in a heap no larger than the IOs in flight
// plus the queue-to-issue window; an event that would leave out of order is
// still delivered and counted.
class BlockEventStream {
 public:
  using Sink = std::function<void(const BlockEvent&)>;
  explicit BlockEventStream(Sink sink) : sink_(std::move(sink)) {}

  void add(const format::Io& io);
  void finish();  // delivers everything still pending
  uint64_t out_of_order() const { return out_of_order_; }

 private:
  struct Later {
    bool operator()(const BlockEvent& a, const BlockEvent& b) const {
      return a.time_ns != b.time_ns ? a.time_ns > b.time_ns : a.seq > b.seq;
    }
  };
  void push(int64_t t, BlockAction a, const format::Io& io);
  void release_before(int64_t t);

  Sink sink_;
  std::priority_queue<BlockEvent, std::vector<BlockEvent>, Later> pending_;
  format::NameInterner names_;  // pending events point into it
  uint64_t seq_ = 0;
  int64_t max_queue_lead_ = 0;
  int64_t last_delivered_ = format::kNoTime;
  uint64_t out_of_order_ = 0;
};

}  // namespace iotape::convert

#include "convert/export/block_events.h"

#include <algorithm>

#include "format/blktrace_layout.h"

namespace iotape::convert {

namespace category = format::blktrace::category;

uint32_t blktrace_categories(const format::Io& io) {
  uint32_t c = category::kFs;
  switch (io.op) {
    case format::Op::kRead:
      c |= category::kRead;
      break;
    case format::Op::kWrite:
    case format::Op::kWriteZeroes:
      c |= category::kWrite;
      break;
    case format::Op::kDiscard:
      c |= category::kWrite | category::kDiscard;
      break;
    case format::Op::kFlush:
      c |= category::kWrite | category::kFlush;
      break;
    case format::Op::kOther:
      break;
  }
  if (io.flags & format::flag::kSync) c |= category::kSync;
  if (io.flags & format::flag::kFua) c |= category::kFua;
  if (io.flags & format::flag::kPreflush) c |= category::kFlush;
  if (io.flags & format::flag::kMeta) c |= category::kMeta;
  if (io.flags & format::flag::kReadahead) c |= category::kAhead;
  return c;
}

std::string blkparse_rwbs(uint32_t c, uint64_t bytes) {
  std::string s;
  if (c & category::kFlush) s += 'F';
  s += c & category::kDiscard ? 'D' : c & category::kWrite ? 'W' : bytes ? 'R' : 'N';
  if (c & category::kFua) s += 'F';
  if (c & category::kAhead) s += 'A';
  if (c & category::kSync) s += 'S';
  if (c & category::kMeta) s += 'M';
  return s;
}

void BlockEventStream::add(const format::Io& in) {
  format::Io io = in;
  io.comm = names_.intern(io.comm);
  // Later IOs can still have queue events as early as their issue time minus
  // the longest queue-to-issue time seen so far.
  if (io.has_queue()) max_queue_lead_ = std::max(max_queue_lead_, io.issue_ns - io.queue_ns);
  release_before(io.issue_ns - max_queue_lead_);
  if (io.has_queue()) push(io.queue_ns, BlockAction::kQueue, io);
  push(io.issue_ns, BlockAction::kIssue, io);
  if (io.has_complete()) push(std::max(io.complete_ns, io.issue_ns), BlockAction::kComplete, io);
}

void BlockEventStream::finish() { release_before(std::numeric_limits<int64_t>::max()); }

void BlockEventStream::push(int64_t t, BlockAction a, const format::Io& io) { pending_.push({t, a, seq_++, io}); }

void BlockEventStream::release_before(int64_t t) {
  while (!pending_.empty() && pending_.top().time_ns < t) {
    const BlockEvent& e = pending_.top();
    if (last_delivered_ != format::kNoTime && e.time_ns < last_delivered_) ++out_of_order_;
    last_delivered_ = std::max(last_delivered_, e.time_ns);
    sink_(e);
    pending_.pop();
  }
}

}  // namespace iotape::convert

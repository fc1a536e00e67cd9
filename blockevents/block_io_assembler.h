// Block-layer events (blktrace's model: Q, G, I, M, F, X, A, D, R, C, ...)
// folded into one IO per completed request. The raw blktrace importer, the
// blkparse text importer and the blktrace capture back end decode their
// inputs into TraceEvents and feed them here, in time order, so all three
// reconstruct the same IOs.
//
//   Q (bio queued)    queue time, pid, process name, cgroup, cpu
//   I (inserted)      queue time when no Q was seen
//   M / F (merges)    a bio extends a queued request at its back / front
//   X (split)         a queued bio is cut in two
//   A (remap)         a queued bio moves to (device, sector) of a lower layer
//   D (issued)        issue time; op and flags of the request as dispatched
//   R (requeued)      back to the queue, to be issued again
//   C (completed)     completion time and status; the IO is written
// An empty preflush write (an fsync's) that the flush machinery completes
// without issuing is an IO of its own, its queue time standing as issue time;
// the flush request it causes (a flush without a write, D and C) is another.
// A write the flush machinery sequences (preflush or FUA data) is completed
// twice, the second time with no bytes after its flush: the IO is written at
// the first, and the second is no IO (the kernel's counters count it once).
// Requests are matched by (device, sector). Events that match nothing are
// counted in the report's notes ("3 C events matched no D"). Passthrough (PC)
// requests are not IOs of the block layer's address space and are skipped.
// Each major:minor with an IO becomes a device named "MAJOR,MINOR".
//
// Traces recorded with a filter mask (blktrace -a) lack some kinds of events;
// a note names the kinds there were, and the IOs carry the times there are:
//   no C              every issued request is an IO without completion time
//   no D              every C (and with no C either, every queued request) is
//                     an IO; as an IO must have an issue time, its first time
//                     (its Q, else its C) stands as one, a later C as its
//                     completion; no time is written twice, so no latency is
//                     made up. The trace's metadata "import.issue_times" says so.
// A note also tells when one CPU's events all lie far from the others' (its
// clock disagrees with theirs, so events of one request may not match).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "blockevents/events.h"
#include "blockevents/import_report.h"
#include "format/io.h"
#include "format/writer.h"
#include "iotape/v1/trace.pb.h"

namespace iotape::blockevents {

// Where the assembled IOs go: a trace being written, or a capture's sink.
class IoOutput {
 public:
  virtual ~IoOutput() = default;
  // The index IOs on `device` carry.
  virtual uint32_t add_device(const v1::Device& device) = 0;
  // `io`'s comm points into the caller until append returns.
  virtual void append(const format::Io& io) = 0;
  virtual void set_metadata(const std::string& key, const std::string& value) = 0;
};

// The output of an import: the trace being written.
class WriterOutput final : public IoOutput {
 public:
  explicit WriterOutput(format::TraceWriter& out) : out_(out) {}
  uint32_t add_device(const v1::Device& device) override { return out_.add_device(device); }
  void append(const format::Io& io) override { out_.append(io); }
  void set_metadata(const std::string& key, const std::string& value) override { out_.set_metadata(key, value); }

 private:
  format::TraceWriter& out_;
};

class BlockIoAssembler {
 public:
  // IOs whose fate the end of the trace decides are held in a SortedSpill of
  // `options`' run size and directory.
  BlockIoAssembler(IoOutput& out, ImportReport& report, const ImportOptions& options = {});
  ~BlockIoAssembler();

  // Events must come in time order (ties in file order).
  void on_event(const TraceEvent& ev, const EventPlace& place);
  // Writes the IOs the end of the trace decides, and adds the notes.
  void finish();

  // For a live capture, which has no end to wait for:
  // The earliest queue or issue time at or after `floor_ns` of a request not
  // yet completed (queued or in flight); kNoTime when there is none.
  int64_t oldest_outstanding_ns(int64_t floor_ns) const;
  // Writes every request issued before `before_ns` and not completed as an
  // IO without completion time, and forgets the bios queued before it and
  // never issued (their events were lost, or a bio-based device completes
  // them). Returns how many IOs it wrote.
  uint64_t write_outstanding(int64_t before_ns);
  // Completions that matched no issued request (it was issued before the
  // trace began), and their bytes: counted, not written as IOs.
  uint64_t unmatched_completions() const;
  uint64_t unmatched_completion_bytes() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace iotape::blockevents

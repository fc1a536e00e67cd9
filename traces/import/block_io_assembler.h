// Block-layer events (blktrace's model: Q, G, I, M, F, X, A, D, R, C, ...)
// folded into one IO per completed request. The raw blktrace importer and the
// blkparse text importer decode their inputs into BlockTraceEvents and feed
// them here, in time order, so both reconstruct the same IOs.
//
//   Q (bio queued)    queue time, pid, process name, cgroup, cpu
//   I (inserted)      queue time when no Q was seen
//   M / F (merges)    a bio extends a queued request at its back / front
//   X (split)         a queued bio is cut in two
//   A (remap)         a queued bio moves to (device, sector) of a lower layer
//   D (issued)        issue time; op and flags of the request as dispatched
//   R (requeued)      back to the queue, to be issued again
//   C (completed)     completion time and status; the IO is written
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
#include <string_view>

#include "traces/blktrace_layout.h"
#include "traces/error.h"
#include "traces/import/importer.h"
#include "traces/writer.h"

namespace iotape::blk {

// One event, whichever form it was read from.
struct TraceEvent {
  uint64_t time = 0;    // ns
  uint64_t sector = 0;  // 512 B units
  uint32_t bytes = 0;
  uint32_t action = 0;  // as blktrace::Record::action
  uint32_t pid = 0;
  uint32_t dev = 0;     // as blktrace::Record::device
  uint32_t cpu = 0;
  uint16_t error = 0;
  uint64_t cgroup = 0;
  // From the payload, where the action has one:
  uint32_t remap_from_dev = 0;  // A: the bio came from (remap_from_dev, remap_from_sector)
  uint64_t remap_from_sector = 0;
  uint32_t remap_to_dev = 0;    // A: to (remap_to_dev, sector)
  uint64_t split_sector = 0;    // X: where the second part starts
  std::string_view comm;        // notify process name, or the process name printed with the event
  // blkparse text of a request of no whole sector: its Q, D and other events
  // print no sector, its C and R only the sector. Such events match at sector
  // 0; a C gives the IO its sector.
  bool sectorless = false;
  // blkparse text of a zone reset, open, close or finish: an IO of op other.
  bool zone_command = false;

  uint32_t what() const { return action & 0xff; }
  uint32_t categories() const { return action >> 16; }
};

// Where an event came from, for error messages: a byte offset or a line.
struct EventPlace {
  const std::string* file = nullptr;
  uint64_t at = 0;
  bool is_line = false;
  InputError error(const std::string& why) const;
};

class BlockIoAssembler {
 public:
  // IOs whose fate the end of the trace decides are held in a SortedSpill of
  // `options`' run size and directory.
  BlockIoAssembler(TraceWriter& out, ImportReport& report, const ImportOptions& options = {});
  ~BlockIoAssembler();

  // Events must come in time order (ties in file order).
  void on_event(const TraceEvent& ev, const EventPlace& place);
  // Writes the IOs the end of the trace decides, and adds the notes.
  void finish();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace iotape::blk

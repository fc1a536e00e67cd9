// A block-layer event in blktrace's model, whichever form it was read from
// (a blktrace record, a line of blkparse text, the ftrace blk tracer's binary
// stream), and where it was read, for errors.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "format/blktrace_layout.h"
#include "format/error.h"

namespace iotape::blockevents {

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
  format::InputError error(const std::string& why) const;
};

}  // namespace iotape::blockevents

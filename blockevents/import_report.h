// What an import (or the assembly of a live capture's block events) read,
// made and could not use, and the options that bound its memory. The
// importers and the block-event assembler share them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace iotape::blockevents {

struct ImportReport {
  uint64_t records = 0;             // input records (lines, binary records, events) read
  uint64_t ios = 0;                 // IOs appended to the writer
  uint64_t skipped = 0;             // records that made no IO (see notes for why)
  std::map<std::string, uint64_t> skipped_by_reason;  // e.g. "blank-iotype" -> 3; may cover part of skipped
  std::vector<std::string> notes;   // one line each, e.g. "3 C events matched no D"
};

struct ImportOptions {
  std::vector<std::string> volumes;  // keep only these volume ids (as the input writes them); empty = all
  size_t sort_run_ios = 1 << 20;     // unsorted inputs: IOs sorted in memory before a run is spilled
  std::string spill_dir;             // where spilled runs go; empty = $TMPDIR or /tmp
};

}  // namespace iotape::blockevents

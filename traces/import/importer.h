// Importers turn other trace formats into iotape traces. Each one streams its
// inputs into a TraceWriter and reports what it could not use; malformed
// input throws TraceError naming the file and line or byte offset.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "iotape/v1/trace.pb.h"
#include "traces/writer.h"

namespace iotape {

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

struct Importer {
  std::string_view name;     // the FORMAT of `iotape import FORMAT`
  std::string_view summary;  // one line for --help
  v1::ClockDomain clock;           // the clock of the timestamps it writes
  ImportReport (*import)(const std::vector<std::string>& inputs, const ImportOptions& options, TraceWriter& out);
  // The IOs come out in issue-time order, equal times in input order, so the
  // writer needs no reorder window (whose heap would not keep that tie order).
  bool sorted_output = false;

  ImportReport run(const std::vector<std::string>& inputs, TraceWriter& out,
                   const ImportOptions& options = {}) const {
    return import(inputs, options, out);
  }
};

std::span<const Importer> importers();
const Importer* find_importer(std::string_view name);

}  // namespace iotape

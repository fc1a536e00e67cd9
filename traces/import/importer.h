// Importers turn other trace formats into iotape traces. Each one streams its
// inputs into a TraceWriter and reports what it could not use; malformed
// input throws TraceError naming the file and line or byte offset.
#pragma once

#include <cstdint>
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
  std::vector<std::string> notes;   // one line each, e.g. "3 C events matched no D"
};

struct Importer {
  std::string_view name;     // the FORMAT of `iotape import FORMAT`
  std::string_view summary;  // one line for --help
  v1::ClockDomain clock;           // the clock of the timestamps it writes
  ImportReport (*run)(const std::vector<std::string>& inputs, TraceWriter& out);
};

std::span<const Importer> importers();
const Importer* find_importer(std::string_view name);

}  // namespace iotape

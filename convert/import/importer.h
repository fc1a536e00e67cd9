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
#include "blockevents/import_report.h"
#include "format/writer.h"

namespace iotape {

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

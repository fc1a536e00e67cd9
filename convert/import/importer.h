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

#include "blockevents/import_report.h"
#include "format/writer.h"
#include "iotape/v1/trace.pb.h"

namespace iotape::convert {

struct Importer {
  std::string_view name;     // the FORMAT of `iotape import FORMAT`
  std::string_view summary;  // one line for --help
  v1::ClockDomain clock;           // the clock of the timestamps it writes
  blockevents::ImportReport (*import)(const std::vector<std::string>& inputs, const blockevents::ImportOptions& options,
                                      format::TraceWriter& out);
  // The IOs come out in issue-time order, equal times in input order, so the
  // writer needs no reorder window (whose heap would not keep that tie order).
  bool sorted_output = false;

  blockevents::ImportReport run(const std::vector<std::string>& inputs, format::TraceWriter& out,
                                const blockevents::ImportOptions& options = {}) const {
    return import(inputs, options, out);
  }
};

std::span<const Importer> importers();
const Importer* find_importer(std::string_view name);

}  // namespace iotape::convert

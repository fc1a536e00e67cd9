// Exporters write an iotape trace in the format of another tool, streaming:
// memory does not grow with the trace. Each says which fields its format
// cannot carry.
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "format/reader.h"

namespace iotape::convert {

struct ExportReport {
  uint64_t ios = 0;       // IOs written
  uint64_t skipped = 0;   // IOs the format cannot express (see notes)
  std::vector<std::string> notes;
};

struct Exporter {
  std::string_view name;     // the FORMAT of `iotape export FORMAT`
  std::string_view summary;  // one line for --help
  std::string_view drops;    // the iotape fields the format cannot carry
  ExportReport (*run)(format::TraceReader& in, std::FILE* out);
};

std::span<const Exporter> exporters();
const Exporter* find_exporter(std::string_view name);

}  // namespace iotape::convert

// The body of every importer fuzz target: the input bytes go to a stream
// importer, and whatever it accepts must come back intact from the trace it
// wrote. TraceError is the importer's way of refusing bytes; anything else
// (a crash, a sanitizer report, an unreadable trace) is a finding.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "convert/import/input.h"
#include "format/error.h"
#include "format/reader.h"
#include "format/writer.h"
#include "fuzz/memory_file.h"

namespace iotape::fuzz {

// With `split`, the rest of the bytes become two inputs (as two per-CPU
// files), the first byte times 8 being the length of the first, so merging
// inputs is fuzzed too.
template <typename Import>  // a StreamImporter, or a lambda like one
int import_bytes(const Import& import, std::span<const uint8_t> data, bool split = false) {
  std::vector<std::string> parts;
  if (split && !data.empty()) {
    const auto rest = data.subspan(1);
    const size_t cut = std::min<size_t>(rest.size(), data[0] * 8u);
    parts.emplace_back(reinterpret_cast<const char*>(rest.data()), cut);
    parts.emplace_back(reinterpret_cast<const char*>(rest.data()) + cut, rest.size() - cut);
  } else {
    parts.emplace_back(reinterpret_cast<const char*>(data.data()), data.size());
  }
  std::vector<std::istringstream> streams;
  streams.reserve(parts.size());
  std::vector<convert::Input> inputs;
  for (size_t i = 0; i < parts.size(); ++i) {
    streams.emplace_back(parts[i]);
    inputs.push_back({"input" + std::to_string(i), &streams.back()});
  }

  static MemoryFile trace("iotape-fuzz-trace");
  format::WriterOptions options;
  options.chunk_ios = 64;  // several chunks from small inputs
  options.zstd_level = 1;
  options.reorder_window_ns = 1'000'000'000;
  blockevents::ImportReport report;
  try {
    format::TraceWriter out(trace.path(), {}, options);
    report = import(inputs, out);
    out.close();
  } catch (const format::TraceError&) {
    return 0;
  }
  format::TraceReader reader(trace.path());
  uint64_t ios = 0;
  for (auto batch = reader.next_batch(); !batch.empty(); batch = reader.next_batch()) ios += batch.size();
  if (reader.status().damaged || ios != report.ios) {
    std::fprintf(stderr, "imported %llu IOs, read back %llu: %s\n", static_cast<unsigned long long>(report.ios),
                 static_cast<unsigned long long>(ios), reader.status().message.c_str());
    std::abort();
  }
  return 0;
}

// The same for an importer that takes options (and sorts), with small sort
// runs so that spilling and merging are fuzzed too.
inline int import_bytes_spilling(convert::OptionsStreamImporter import, std::span<const uint8_t> data) {
  const auto with_options = [import](std::span<const convert::Input> inputs, format::TraceWriter& out) {
    blockevents::ImportOptions options;
    options.sort_run_ios = 16;
    options.spill_dir = "/dev/shm";
    return import(inputs, options, out);
  };
  return import_bytes(with_options, data);
}

}  // namespace iotape::fuzz

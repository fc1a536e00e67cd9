// How a Report is shown: JSON (the stable interface, also what `iotape
// compare` reads back), a flat CSV table, and an aligned text table.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/report.h"

namespace iotape::analysis {

struct OutputOptions {
  std::vector<std::string> traces;  // shown as the report's subject
  bool by_process = false;          // include the per-process table
  size_t top = 10;                  // processes shown
  bool by_phase = false;            // include the per-phase table (Report::phases)
};

// Keys: ios, reads, writes, ..., bytes_read, bytes_written, busy_time_ns,
// read_busy_time_ns, write_busy_time_ns, idle_ns, avg_data_rate_MBps {read,
// write, combined}, latency_ns {read, write, ..., all}, io_size_pct,
// sequential_pct, qd_pct, avg_qd, series, metadata (Report::metadata: the
// header's keys and those written at the end).
nlohmann::ordered_json report_json(const Report& r, const v1::TraceHeader& header, const OutputOptions& o);

// One object per phase of the header (Report::phases): its parameters (name,
// pattern, block_size, queue_depth, read_pct, ...) and figures (ios, iops,
// MBps, latency, busy time); see `iotape report --help`.
nlohmann::ordered_json phases_json(const Report& r, const v1::TraceHeader& header);

// phases_json as a table: a header row of its keys, one row per phase.
std::string phases_csv(const nlohmann::ordered_json& phases);

// "metric,value" rows: the JSON flattened, keys joined with '.', without the
// series and the size histogram (see series_csv for the former).
std::string report_csv(const nlohmann::ordered_json& j);

// "t_s,ios,iops,read_MBps,write_MBps,MBps" rows, one per series point.
std::string series_csv(const Report& r);

std::string report_text(const Report& r, const v1::TraceHeader& header, const OutputOptions& o);

}  // namespace iotape::analysis

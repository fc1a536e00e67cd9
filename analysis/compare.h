// `iotape compare`: several results (drives x workloads) side by side, as
// one self-contained HTML page of SVG charts, standalone SVGs, or JSON.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace iotape::analysis {

// The figures of one result that the charts show.
struct CompareEntry {
  std::string path;
  std::string workload;  // chart group; empty when unknown
  std::string drive;     // bar label
  std::string times;     // a replay result's clock: "device" or "user" (replay.times); empty otherwise
  uint64_t ios = 0;
  // Time-based figures are NaN when the result has no completion times
  // (e.g. an import of a trace that recorded issues only): charted as "n/a".
  double busy_s = 0;
  double read_MBps = 0;
  double write_MBps = 0;
  double combined_MBps = 0;
  double mean_latency_us = 0;  // reads and writes
  double p99_latency_us = 0;
  double series_interval_s = 1;
  std::vector<double> iops;
  // Per phase, when the result has phases (`iotape report --by phase`).
  struct Phase {
    std::string name;
    uint64_t block_size = 0;  // 0: a mix
    uint32_t queue_depth = 0; // 0: a mix
    double read_pct = 0;
    std::string other;        // the other parameters: only phases equal in them share a chart
    double iops = 0;
    double MBps = 0;
  };
  std::vector<Phase> phases;
};

// From the JSON of `iotape report --json`. Workload and drive come from its
// metadata keys "workload" and "target", the drive else from the file name.
CompareEntry entry_from_report(const nlohmann::json& report, const std::string& path);

// FILE is either a saved `iotape report --json` output or a trace (analysed
// here). `label`, when not empty, is "WORKLOAD/DRIVE" or "DRIVE" and wins over
// the metadata.
CompareEntry load_entry(const std::string& path, const std::string& label = "");

nlohmann::ordered_json compare_json(const std::vector<CompareEntry>& entries);

// The charts as (file name, SVG) pairs, in page order.
std::vector<std::pair<std::string, std::string>> compare_svgs(const std::vector<CompareEntry>& entries);

// One HTML page: a table of all figures and the charts inline.
std::string compare_html(const std::vector<CompareEntry>& entries);

}  // namespace iotape::analysis

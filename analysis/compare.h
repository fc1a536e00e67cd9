// `iotape compare`: several results (drives x workloads) side by side, as
// one self-contained HTML page of SVG charts, standalone SVGs, or JSON.
//
// Only results of one workload are compared with each other: each workload
// gets its own table and charts (its own axes), and each drive's figures are
// given as ratios to a baseline drive. The page states how every result was
// made (source trace, timing, clock, prefill, options, host) and warns where
// results under one workload were made differently.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace iotape::v1 {
class TraceHeader;
}

namespace iotape::analysis {

// The figures of one result that the charts show.
struct CompareEntry {
  std::string path;
  std::string workload;  // chart group; empty when unknown
  std::string drive;     // bar label
  // How the result was made, from its header; empty: not recorded (or not a replay).
  std::string source;         // replay.source: the trace that was replayed
  std::string source_sha256;  // replay.source_sha256
  std::string timing;         // "original" or "afap" (source_detail "replay:...")
  std::string times;          // a replay result's clock: "device" or "user" (replay.times)
  std::string prefill;        // replay.prefill: "none", "reads" or "full" (else the prefill= of replay.options)
  std::string speed;          // the speed= of replay.options
  std::string options;        // replay.options
  std::string host, kernel;   // the header's; a saved report JSON has neither
  uint64_t ios = 0;
  double duration_s = 0;  // first issue to last completion
  // Time-based figures are NaN when the result has no completion times
  // (e.g. an import of a trace that recorded issues only): charted as "n/a".
  double busy_s = 0;
  double read_MBps = 0;
  double write_MBps = 0;
  double combined_MBps = 0;
  double mean_latency_us = 0;  // reads and writes
  double p99_latency_us = 0;
  // IOPS over time: IOs issued per interval from the first IO / the interval.
  double series_interval_s = 1;
  std::vector<double> iops;
  // IOs issued per kFineBinNs from the first IO, for runs shorter than
  // kFineRunNs read from a trace: short runs are charted in bins < 1 s.
  static constexpr int64_t kFineBinNs = 100'000;
  static constexpr int64_t kFineRunNs = 60'000'000'000;
  std::vector<uint64_t> fine_ios;
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
// metadata keys "workload" and "target"; a replay result without them is
// named by the file name of the trace it replayed (replay.source) and its
// target (replay.targets); else the drive is the file name. `header`, when
// given, adds what the JSON does not carry (source_detail, host, kernel).
CompareEntry entry_from_report(const nlohmann::json& report, const std::string& path,
                               const v1::TraceHeader* header = nullptr);

// FILE is either a saved `iotape report --json` output or a trace (analysed
// here). `label`, when not empty, is "WORKLOAD/DRIVE" or "DRIVE" and wins over
// the metadata.
CompareEntry load_entry(const std::string& path, const std::string& label = "");

// Results made ready to chart together.
struct Comparison {
  std::vector<CompareEntry> entries;
  std::vector<std::string> workloads;  // in order of first appearance
  std::vector<std::string> drives;     // in order of first appearance: drive i is series_colour(i) everywhere
  std::vector<std::string> baselines;  // per workload: the drive its ratios are to
  std::vector<std::string> warnings;   // one line each, for stderr and the page
  size_t colour(const std::string& drive) const;
  const std::string& baseline(const std::string& workload) const;
};

// Groups `entries` by workload. Replay results of different source traces
// (replay.source_sha256) under one workload are not compared: each source
// becomes its own workload, "LABEL [source FILE]", with a warning. Results
// under one workload that differ in timing, clock, prefill or speed stay
// together with a warning. Ratios are to `baseline` (default: the first
// drive) in every workload that has it, else to the workload's first drive
// (a warning names those workloads when `baseline` was given); a `baseline`
// that no result has is a UsageError. The IOPS series of
// a workload share one interval, chosen from its longest run (100 us .. 1 s).
Comparison make_comparison(std::vector<CompareEntry> entries, const std::string& baseline = "");

// value / baseline's value; NaN when either is not a positive number.
double ratio(double value, double baseline);
// "0.43x", "1.00x", "12.5x"; "n/a" for NaN.
std::string ratio_text(double r);

nlohmann::ordered_json compare_json(const Comparison& c);

// The charts as (file name, SVG) pairs, in page order: per workload, its bar
// charts, IOPS over time and phase charts.
std::vector<std::pair<std::string, std::string>> compare_svgs(const Comparison& c);

// One HTML page: the warnings, each result's settings, then per workload a
// table of its figures with ratios and its charts inline.
std::string compare_html(const Comparison& c);

}  // namespace iotape::analysis

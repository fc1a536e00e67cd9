// iotape compare: results of several drives and workloads, charted side by side.
#include <fmt/format.h>

#include <cerrno>
#include <filesystem>
#include <fstream>

#include "analysis/compare.h"
#include "cli/commands.h"
#include "traces/error.h"

namespace iotape::cli {
namespace {

struct CompareOptions {
  std::vector<std::string> results;
  std::vector<std::string> labels;
  std::string html;
  std::string svg_dir;
  bool json = false;
};

void write_file(const std::string& path, const std::string& content) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << content;
  if (!f) throw error_errno(path, "cannot write", errno);
}

void run_compare(const CompareOptions& o) {
  if (o.html.empty() && o.svg_dir.empty() && !o.json) throw UsageError("nothing to write: give --html, --svg-dir or --json");
  if (!o.labels.empty() && o.labels.size() != o.results.size())
    throw UsageError(fmt::format("{} --label for {} results: give one per result, in order", o.labels.size(),
                                 o.results.size()));
  std::vector<analysis::CompareEntry> entries;
  for (size_t i = 0; i < o.results.size(); ++i)
    entries.push_back(analysis::load_entry(o.results[i], o.labels.empty() ? "" : o.labels[i]));
  if (!o.html.empty()) write_file(o.html, analysis::compare_html(entries));
  if (!o.svg_dir.empty()) {
    std::filesystem::create_directories(o.svg_dir);
    for (const auto& [name, svg] : analysis::compare_svgs(entries)) write_file(o.svg_dir + "/" + name, svg);
  }
  // Names from traces need not be UTF-8: replace what JSON cannot hold.
  if (o.json)
    fmt::print("{}\n", analysis::compare_json(entries).dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace

void add_compare_command(CLI::App& app) {
  auto o = std::make_shared<CompareOptions>();
  auto* sub = app.add_subcommand("compare", "Chart several results side by side (busy time, data rate, latency, IOPS)");
  sub->add_option("RESULT", o->results, "Traces (replay results) or saved `iotape report --json` outputs")
      ->required()
      ->check(CLI::ExistingFile);
  sub->add_option("--label", o->labels,
                  "Name of each result, in order: \"DRIVE\" or \"WORKLOAD/DRIVE\" (default: the trace metadata "
                  "keys \"target\" and \"workload\", else the file name)");
  sub->add_option("--html", o->html, "Write one self-contained HTML page (inline SVG, no scripts) to this file");
  sub->add_option("--svg-dir", o->svg_dir, "Also write every chart as a standalone SVG file into this directory");
  sub->add_flag("--json", o->json, "Print the compared figures as JSON");
  sub->footer(
      "Charts: disk busy time (s, lower is better), average data rate combined/read/write (MB/s = 10^6 bytes/s, "
      "higher is better),\nmean and 99th percentile latency of reads and writes (us, lower is better), IOPS over "
      "time per workload.\nResults with phases (iotape synth workloads and their replays) also get a chart per phase "
      "parameter:\nIOPS against queue depth (log2) and read share, MB/s against block size (log2), a line per "
      "drive,\none chart per combination of the other parameters, its values in a table below it on the page.\n"
      "Bars are grouped by workload and sorted best first; the output is deterministic.");
  sub->callback([o] { run_compare(*o); });
}

}  // namespace iotape::cli

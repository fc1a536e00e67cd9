// iotape compare: results of several drives and workloads, charted side by side.
#include <fmt/format.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "analysis/compare.h"
#include "analysis/review_page.h"
#include "cli/commands.h"
#include "format/error.h"
#include "workloads/review.h"

namespace iotape::cli {
namespace {

struct CompareOptions {
  std::vector<std::string> results;
  std::vector<std::string> labels;
  std::string html;
  std::string svg_dir;
  std::string baseline;
  bool json = false;
};

void write_file(const std::string& path, const std::string& content) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << content;
  if (!f) throw format::error_errno(path, "cannot write", errno);
}

// Review directories (`iotape review -o DIR`): the multi-drive review page.
void run_review_compare(const CompareOptions& o) {
  if (o.html.empty() && !o.json)
    throw format::UsageError("nothing to write for review directories: give --html or --json");
  if (!o.svg_dir.empty()) throw format::UsageError("--svg-dir: review directories give one page; use --html");
  if (!o.baseline.empty())
    throw format::UsageError("--baseline: not for review directories (their page has no ratios)");
  std::vector<nlohmann::ordered_json> docs;
  for (const auto& dir : o.results) {
    const std::string path = dir + "/review.json";
    std::ifstream f(path, std::ios::binary);
    if (!f) throw format::error_errno(path, "cannot open (not a review directory?)", errno);
    try {
      docs.push_back(nlohmann::ordered_json::parse(std::string(std::istreambuf_iterator<char>(f), {})));
    } catch (const nlohmann::json::exception& x) {
      throw format::InputError(path + ": not JSON: " + x.what());
    }
    if (!docs.back().contains("options") || !docs.back().contains("drive"))
      throw format::InputError(path + ": not a review.json (no \"options\" or \"drive\")");
  }
  std::vector<analysis::ReviewDocument> reviews;
  for (const auto& doc : docs) reviews.push_back(analysis::review_document_from_json(doc));
  for (size_t i = 0; i < o.labels.size(); ++i) reviews[i].drive.label = o.labels[i];
  analysis::check_same_suite(reviews, o.results);
  if (!o.html.empty()) write_file(o.html, analysis::review_html(reviews, workloads::review_page_tests()));
  if (o.json) {
    nlohmann::ordered_json all = nlohmann::ordered_json::array();
    for (const auto& r : reviews) all.push_back(analysis::to_json(r));
    fmt::print("{}", analysis::review_json_text(all));
  }
}

void run_compare(const CompareOptions& o) {
  if (o.html.empty() && o.svg_dir.empty() && !o.json)
    throw format::UsageError("nothing to write: give --html, --svg-dir or --json");
  if (!o.labels.empty() && o.labels.size() != o.results.size())
    throw format::UsageError(
        fmt::format("{} --label for {} results: give one per result, in order", o.labels.size(), o.results.size()));
  size_t dirs = 0;
  for (const auto& r : o.results) dirs += std::filesystem::is_directory(r);
  if (dirs == o.results.size()) return run_review_compare(o);
  if (dirs) throw format::UsageError("give either review directories or result files, not both");
  std::vector<analysis::CompareEntry> entries;
  for (size_t i = 0; i < o.results.size(); ++i)
    entries.push_back(analysis::load_entry(o.results[i], o.labels.empty() ? "" : o.labels[i]));
  const analysis::Comparison c = analysis::make_comparison(std::move(entries), o.baseline);
  for (const auto& w : c.warnings) fmt::print(stderr, "iotape compare: warning: {}\n", w);
  if (!o.html.empty()) write_file(o.html, analysis::compare_html(c));
  if (!o.svg_dir.empty()) {
    std::filesystem::create_directories(o.svg_dir);
    for (const auto& [name, svg] : analysis::compare_svgs(c)) write_file(o.svg_dir + "/" + name, svg);
  }
  // Names from traces need not be UTF-8: replace what JSON cannot hold.
  if (o.json)
    fmt::print("{}\n", analysis::compare_json(c).dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace

void add_compare_command(CLI::App& app) {
  auto o = std::make_shared<CompareOptions>();
  auto* sub = app.add_subcommand("compare", "Chart several results side by side (busy time, data rate, latency, IOPS)");
  sub->add_option("RESULT", o->results,
                  "Traces (replay results) or saved `iotape report --json` outputs; or `iotape review` directories")
      ->required()
      ->check(CLI::ExistingPath);
  sub->add_option("--label", o->labels,
                  "Name of each result, in order: \"DRIVE\" or \"WORKLOAD/DRIVE\" (default: the trace metadata "
                  "keys \"target\" and \"workload\"; for a replay result its target and the file name of the "
                  "trace it replayed; else the file name)");
  sub->add_option("--baseline", o->baseline,
                  "The drive every other drive's figures are given as ratios to (default: the first drive given; "
                  "a workload without it: its own first drive)");
  sub->add_option("--html", o->html, "Write one self-contained HTML page (inline SVG, no scripts) to this file");
  sub->add_option("--svg-dir", o->svg_dir, "Also write every chart as a standalone SVG file into this directory");
  sub->add_flag("--json", o->json, "Print the compared figures as JSON");
  sub->footer(
      "Each workload gets its own table and charts (its own axes): disk busy time (s, lower is better), average\n"
      "data rate combined/read/write (MB/s = 10^6 bytes/s, higher is better), mean and 99th percentile latency\n"
      "of reads and writes (us, lower is better), each drive's figure also as a ratio to the baseline drive\n"
      "(\"0.43x\") in the table and on the bars; IOPS over time in bins chosen from the run's length (100 us to\n"
      "1 s; the x axis in ms for runs under 2 s). Each drive keeps one colour on every chart.\n"
      "The page states how each result was made: source trace (and its sha256), timing, clock, prefill, speed,\n"
      "replay options, host and kernel. Replays of different source traces under one workload name are charted\n"
      "as separate workloads, and results of one workload that differ in timing, clock, prefill or speed are\n"
      "flagged: both with a warning on stderr and on the page.\n"
      "Results with phases (iotape synth workloads and their replays) also get a chart per phase "
      "parameter:\nIOPS against queue depth (log2) and read share, MB/s against block size (log2), a line per "
      "drive,\none chart per combination of the other parameters, its values in a table below it on the page.\n"
      "Bars are sorted best first; the output is deterministic.\n"
      "Review directories (iotape review -o DIR): --html writes the multi-drive review page (a summary table of\n"
      "every test's headline figures, a column per drive, then every test's charts with all drives); runs of\n"
      "different suites (--quick, --seed) are refused.");
  sub->callback([o] { run_compare(*o); });
}

}  // namespace iotape::cli

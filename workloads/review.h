// `iotape review`: a drive review in one run. The suite plays the tests that
// storage reviews print (X-bit labs' patterns, AnandTech's 4 KiB/128 KiB set,
// Storage Bench replays, consistency, TRIM, fresh vs used, alignment) on one
// target, in a fixed order, under bench's safety rules (nothing is written
// without allow_write; a mounted or in-use device is refused unless force).
//
// Output directory layout:
//   DIR/review.json            options, drive identity, iotape version, every test's figures
//                              (analysis::ReviewDocument, analysis/review_document.h)
//   DIR/review.html            the page (analysis/review_page.h), rewritten after every test
//   DIR/tests/NAME/result.json one finished test's figures (its presence marks it done)
//   DIR/tests/NAME/*.iot       its result traces
// A rerun with the same options skips the tests whose result.json exists;
// different options are refused (UsageError naming the difference), so one
// directory never mixes two suites.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/review_page.h"
#include "replay/options.h"
#include "workloads/file_level.h"

namespace iotape::workloads {

struct ReviewOptions {
  std::string target;
  std::string out_dir;
  bool allow_write = false;
  bool force = false;
  bool quick = false;               // the scaled-down suite: minutes on a 1 GiB loop device
  std::vector<std::string> tests;   // names to run, in suite order; empty = all
  std::string label;                // the drive's name on the page; empty = the device's name
  uint64_t seed = 1;
  uint32_t threads = 0;  // issue threads of the closed loops; 0 = closed_loop_threads' choice
  replay::RingSetup ring;  // of each issue thread (replay/options.h)
  // Records each file-level step's block IO (`iotape record`); unset: the
  // steps are measured without traces.
  StartRecording record;
};

struct ReviewTest {
  std::string name;
  std::string title;
  double estimated_s = 0;  // at a nominal 500 MB/s for the size-bound parts (fills, replays)
};

// Every test's name, in suite order.
const std::vector<std::string>& review_test_names();

// The tests the options select, in suite order, with estimated durations for
// a target of `target_bytes`. Throws UsageError for an unknown test name.
std::vector<ReviewTest> review_plan(const ReviewOptions& o, uint64_t target_bytes);

// The text of --dry-run: one line per test with its estimate, and the total.
std::string describe_review_plan(const std::vector<ReviewTest>& plan, const ReviewOptions& o);

// Every test's name and its section of the review page, in suite order: what
// analysis::review_html() takes to show the suite's documents.
std::vector<analysis::ReviewPageTest> review_page_tests();

// The options as review.json records them (the ones that change results).
nlohmann::ordered_json review_options_json(const ReviewOptions& o);

struct ReviewProgress {
  size_t index = 0, count = 0;   // test index (0-based) of count
  std::string test;
  bool skipped = false;          // done in an earlier run
  bool finished = false;         // false: starting
  double elapsed_s = 0;          // since the run started
  double remaining_s = 0;        // the estimates of the tests not yet finished
};

struct ReviewOutcome {
  size_t run = 0, skipped = 0;
  bool interrupted = false;   // `stop` was set: the test in progress was discarded
  double duration_s = 0;
};

// Runs the plan. `stop` ends the run after the IO in flight; the interrupted
// test leaves nothing behind and runs again next time. `progress`, when set,
// is called as each test starts and ends. Throws TraceError.
ReviewOutcome run_review(const ReviewOptions& o, const std::atomic<bool>& stop,
                         const std::function<void(const ReviewProgress&)>& progress = {});

}  // namespace iotape::workloads

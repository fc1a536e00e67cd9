// The review page: one or more drives' `iotape review` results (their
// review documents, review_document.h) as one self-contained HTML page in the
// look of `iotape compare` (inline SVG, no scripts). The summary table comes
// first (a row per test's headline figure, a column per drive), then a
// section per test with every drive on each chart, CPU load per test, write
// amplification and the file-level tests' state. The output depends only on
// the documents and the sections named for their tests.
//
// Thread safety: free functions of their arguments.
#pragma once

#include <string>
#include <vector>

#include "analysis/review_document.h"

namespace iotape::analysis {

// How the page shows one test's figures. Every section ends with the test's
// CPU load; kPhases is the table of its phases (IOPS, MB/s, mean latency per
// drive), which the sweep sections below print after their charts.
enum class ReviewSection {
  kPhases,
  kSequentialBlockSizes,  // read and write MB/s vs block size
  kRandomBlockSizes,      // the same, random
  kResponseTime,          // mean latency bars
  kDatabase,              // IOPS vs queue depth per read share, and vs read share per queue depth
  kServer,                // IOPS vs queue depth, titled after the test's name
  kAnandTech,             // MB/s bars per phase
  kAlignment,             // IOPS bars per alignment, and the 512 B-aligned share
  kStorageBench,          // data rate, busy time, IO breakdown of a replay
  kSecureState,           // discard time and fill rate
  kConsistency,           // IOPS every second and the steady window
  kTrim,                  // clean, dirty and after-TRIM MB/s
  kFreshVsUsed,           // fresh vs used pairs per measurement
  kFileLevel,             // fresh vs used pairs per file-level step
};

// A test of the suite and its section (workloads/review.h lists the suite's).
struct ReviewPageTest {
  std::string name;
  ReviewSection section = ReviewSection::kPhases;
};

// Throws UsageError naming the first option in which the documents' suites
// differ (--quick, --seed): their figures are not comparable. `origins`
// names each document (its directory) in the message.
void check_same_suite(const std::vector<ReviewDocument>& reviews, const std::vector<std::string>& origins);

// The page; tests appear in the order of the documents' tests (the suite's),
// each in the section `suite` names for it (kPhases for a test it does not
// name). REQUIRES: at least one document.
std::string review_html(const std::vector<ReviewDocument>& reviews, const std::vector<ReviewPageTest>& suite);

}  // namespace iotape::analysis

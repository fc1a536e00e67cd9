// The review page: one or more drives' `iotape review` results (their
// review.json documents, workloads/review.h) as one self-contained HTML page
// in the look of `iotape compare` (inline SVG, no scripts). The summary table
// comes first (a row per test's headline figure, a column per drive), then a
// section per test with every drive on each chart, CPU load per test, write
// amplification and the file-level tests' state. The output depends only on
// the documents.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace iotape::analysis {

// Throws UsageError naming the first option in which the documents' suites
// differ (--quick, --seed): their figures are not comparable. `origins`
// names each document (its directory) in the message.
void check_same_suite(const std::vector<nlohmann::ordered_json>& reviews, const std::vector<std::string>& origins);

// The page; tests appear in the order of the documents' "tests" objects
// (the suite's). REQUIRES: at least one document.
std::string review_html(const std::vector<nlohmann::ordered_json>& reviews);

}  // namespace iotape::analysis

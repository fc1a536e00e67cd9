// The review document: what `iotape review` (workloads/review.h) writes as
// DIR/review.json and the review page (review_page.h) renders, as one type
// both sides share instead of JSON keys written in one file and read in
// another.
//
// review.json is to_json(document).dump(2) and review_document_from_json()
// reads it back: for every document iotape writes, the round trip gives the
// same bytes (the same keys in the same order, the same numbers). Each test's
// result is typed in the parts every test has (test, title, duration, CPU
// load, write amplification, headline figures); the figures of its own
// (phases, passes, windows ...) stay JSON in `figures`, in the order the test
// wrote them.
//
// Thread safety: plain values; no shared state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace iotape::analysis {

// "options": the review's options that change results. A rerun into the same
// directory must give the same ones, and only documents with the same
// `quick` and `seed` share a page.
struct ReviewSuiteOptions {
  std::string target;
  bool quick = false;
  std::string label;
  uint64_t seed = 1;
};

// "drive": the target as sysfs describes it (workloads/drive_identity.h).
struct ReviewDrive {
  struct Loop {
    std::string backing_file;
    bool direct_io = false;
  };
  struct Block {  // a block device's identity
    std::string model, vendor, serial, scheduler;
    std::optional<Loop> loop;  // a loop device's backing
  };
  std::string label;  // the drive's name on the page
  std::string path, name;
  bool block_device = false;
  uint64_t size_bytes = 0;
  uint32_t logical_block_size = 512, physical_block_size = 512;
  bool rotational = false;
  std::optional<Block> block;  // set exactly when block_device
};

// "write_amplification" of the document: whether the drive reports it.
struct ReviewWriteAmplificationSource {
  bool available = false;
  std::string reason;  // why not, when !available
};

// One row of the page's summary table.
struct ReviewHeadline {
  std::string figure;
  double value = 0;
  std::string unit;
  bool higher_is_better = true;
  // Measured by a closed loop that was limited by the host (iotape), not the
  // drive; written to JSON only when set.
  bool host_limited = false;
};

// A test's CPU load: the host's busy share over the test, iotape's own CPU
// time, and per IO where the block device counts its IOs.
struct ReviewCpuLoad {
  double host_busy_pct = 0;
  double iotape_cpu_s = 0;
  std::optional<uint64_t> device_ios;
  std::optional<double> iotape_cpu_us_per_io;  // set with device_ios
};

// Media and host bytes written during a write-heavy test (NVMe drives only).
struct ReviewWriteAmplification {
  double host_bytes = 0, media_bytes = 0;
  double estimate = 0;  // media / host, 0 when the host wrote nothing
};

// One finished test: DIR/tests/NAME/result.json, and the document's
// "tests"."NAME".
struct ReviewTestResult {
  std::string test;   // its name
  std::string title;
  double duration_s = 0;
  ReviewCpuLoad cpu;
  std::optional<ReviewWriteAmplification> write_amplification;
  // The test's own figures, an object, after the parts above in the JSON; a
  // key that repeats one of them replaces it in place. Holds "headline"
  // (headline() reads it).
  nlohmann::ordered_json figures = nlohmann::ordered_json::object();

  // The "headline" array of `figures`, typed; empty when there is none.
  std::vector<ReviewHeadline> headline() const;
};

struct ReviewDocument {
  std::string iotape_version;
  ReviewSuiteOptions options;
  ReviewDrive drive;
  ReviewWriteAmplificationSource write_amplification;
  std::vector<ReviewTestResult> tests;  // in suite order, each under its `test` name
  std::optional<std::string> file_level;  // why the file-level tests are missing, when they are

  // The finished test of that name, nullptr when it is not in the document.
  const ReviewTestResult* test(const std::string& name) const;
};

nlohmann::ordered_json to_json(const ReviewSuiteOptions& o);
nlohmann::ordered_json to_json(const ReviewHeadline& h);
nlohmann::ordered_json to_json(const ReviewTestResult& r);
nlohmann::ordered_json to_json(const ReviewDocument& d);

// The document or result of review.json / result.json, parsed JSON. Missing
// parts take the defaults above. Throws InputError when `j` is not an object.
ReviewTestResult review_test_result_from_json(const nlohmann::ordered_json& j);
ReviewDocument review_document_from_json(const nlohmann::ordered_json& j);

// The text iotape writes review.json and result.json as: two-space
// indentation, invalid UTF-8 replaced, a final newline.
std::string review_json_text(const nlohmann::ordered_json& j);

}  // namespace iotape::analysis

#include "analysis/review_document.h"

#include <cmath>

#include "format/error.h"

namespace iotape::analysis {
namespace {

using json = nlohmann::ordered_json;

// A figure as written: a number, or NaN for null (JSON's NaN) or a missing key.
double number(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_number() ? j[key].get<double>() : NAN;
}

std::string text(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
}

bool flag(const json& j, const char* key, bool otherwise) {
  return j.is_object() && j.contains(key) && j[key].is_boolean() ? j[key].get<bool>() : otherwise;
}

template <typename T>
T whole(const json& j, const char* key, T otherwise) {
  return j.is_object() && j.contains(key) && j[key].is_number_integer() ? j[key].get<T>() : otherwise;
}

json to_json(const ReviewDrive& d) {
  json j;
  j["label"] = d.label;
  j["path"] = d.path;
  j["name"] = d.name;
  j["block_device"] = d.block_device;
  j["size_bytes"] = d.size_bytes;
  j["logical_block_size"] = d.logical_block_size;
  j["physical_block_size"] = d.physical_block_size;
  j["rotational"] = d.rotational;
  if (!d.block) return j;
  j["model"] = d.block->model;
  j["vendor"] = d.block->vendor;
  j["serial"] = d.block->serial;
  j["scheduler"] = d.block->scheduler;
  if (d.block->loop) {
    j["loop_backing_file"] = d.block->loop->backing_file;
    j["loop_direct_io"] = d.block->loop->direct_io;
  }
  return j;
}

ReviewDrive drive_from_json(const json& j) {
  ReviewDrive d;
  d.label = text(j, "label");
  d.path = text(j, "path");
  d.name = text(j, "name");
  d.block_device = flag(j, "block_device", false);
  d.size_bytes = whole<uint64_t>(j, "size_bytes", 0);
  d.logical_block_size = whole<uint32_t>(j, "logical_block_size", 512);
  d.physical_block_size = whole<uint32_t>(j, "physical_block_size", 512);
  d.rotational = flag(j, "rotational", false);
  if (!d.block_device) return d;
  ReviewDrive::Block b{text(j, "model"), text(j, "vendor"), text(j, "serial"), text(j, "scheduler"), {}};
  if (j.contains("loop_backing_file"))
    b.loop = ReviewDrive::Loop{text(j, "loop_backing_file"), flag(j, "loop_direct_io", false)};
  d.block = std::move(b);
  return d;
}

}  // namespace

std::vector<ReviewHeadline> ReviewTestResult::headline() const {
  std::vector<ReviewHeadline> out;
  if (!figures.contains("headline") || !figures["headline"].is_array()) return out;
  for (const auto& f : figures["headline"])
    out.push_back({text(f, "figure"), number(f, "value"), text(f, "unit"), flag(f, "higher_is_better", true),
                   flag(f, "host_limited", false)});
  return out;
}

const ReviewTestResult* ReviewDocument::test(const std::string& name) const {
  for (const auto& t : tests)
    if (t.test == name) return &t;
  return nullptr;
}

json to_json(const ReviewSuiteOptions& o) {
  return {{"target", o.target}, {"quick", o.quick}, {"label", o.label}, {"seed", o.seed}};
}

json to_json(const ReviewHeadline& h) {
  json j = {{"figure", h.figure}, {"value", h.value}, {"unit", h.unit}, {"higher_is_better", h.higher_is_better}};
  if (h.host_limited) j["host_limited"] = true;
  return j;
}

json to_json(const ReviewTestResult& r) {
  json j;
  j["test"] = r.test;
  j["title"] = r.title;
  j["duration_s"] = r.duration_s;
  json cpu = {{"host_busy_pct", r.cpu.host_busy_pct}, {"iotape_cpu_s", r.cpu.iotape_cpu_s}};
  if (r.cpu.device_ios) cpu["device_ios"] = *r.cpu.device_ios;
  if (r.cpu.iotape_cpu_us_per_io) cpu["iotape_cpu_us_per_io"] = *r.cpu.iotape_cpu_us_per_io;
  j["cpu"] = cpu;
  if (const auto& w = r.write_amplification)
    j["write_amplification"] = {{"host_bytes", w->host_bytes}, {"media_bytes", w->media_bytes},
                                {"estimate", w->estimate}};
  j.update(r.figures);
  return j;
}

json to_json(const ReviewDocument& d) {
  json j;
  j["iotape_version"] = d.iotape_version;
  j["options"] = to_json(d.options);
  j["drive"] = to_json(d.drive);
  j["write_amplification"] = d.write_amplification.available
                                 ? json{{"available", true}}
                                 : json{{"available", false}, {"reason", d.write_amplification.reason}};
  json tests = json::object();
  for (const auto& t : d.tests) tests[t.test] = to_json(t);
  j["tests"] = tests;
  if (d.file_level) j["file_level"] = *d.file_level;
  return j;
}

ReviewTestResult review_test_result_from_json(const json& j) {
  if (!j.is_object()) throw format::InputError("a review test's result is not a JSON object");
  ReviewTestResult r;
  for (const auto& [key, value] : j.items()) {
    if (key == "test" && value.is_string()) {
      r.test = value;
    } else if (key == "title" && value.is_string()) {
      r.title = value;
    } else if (key == "duration_s") {
      r.duration_s = number(j, "duration_s");
    } else if (key == "cpu" && value.is_object()) {
      r.cpu.host_busy_pct = number(value, "host_busy_pct");
      r.cpu.iotape_cpu_s = number(value, "iotape_cpu_s");
      if (value.contains("device_ios")) r.cpu.device_ios = whole<uint64_t>(value, "device_ios", 0);
      if (value.contains("iotape_cpu_us_per_io")) r.cpu.iotape_cpu_us_per_io = number(value, "iotape_cpu_us_per_io");
    } else if (key == "write_amplification" && value.is_object()) {
      r.write_amplification = ReviewWriteAmplification{number(value, "host_bytes"), number(value, "media_bytes"),
                                                       number(value, "estimate")};
    } else {
      r.figures[key] = value;
    }
  }
  return r;
}

ReviewDocument review_document_from_json(const json& j) {
  if (!j.is_object()) throw format::InputError("a review document is not a JSON object");
  ReviewDocument d;
  d.iotape_version = text(j, "iotape_version");
  if (j.contains("options")) {
    const json& o = j["options"];
    d.options = {text(o, "target"), flag(o, "quick", false), text(o, "label"), whole<uint64_t>(o, "seed", 1)};
  }
  if (j.contains("drive")) d.drive = drive_from_json(j["drive"]);
  if (j.contains("write_amplification")) {
    const json& w = j["write_amplification"];
    d.write_amplification = {flag(w, "available", false), text(w, "reason")};
  }
  if (j.contains("tests") && j["tests"].is_object())
    for (const auto& [name, t] : j["tests"].items()) {
      d.tests.push_back(review_test_result_from_json(t));
      if (d.tests.back().test.empty()) d.tests.back().test = name;
    }
  if (j.contains("file_level") && j["file_level"].is_string()) d.file_level = j["file_level"].get<std::string>();
  return d;
}

std::string review_json_text(const json& j) {
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace iotape::analysis

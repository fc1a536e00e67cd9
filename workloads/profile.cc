#include "workloads/profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "format/error.h"
#include "units/units.h"

namespace iotape::workloads {
namespace {

using nlohmann::json;

const std::set<std::string> kPhaseKeys = {"name", "weight",  "read",   "sizes",   "sequential",
                                          "qd",   "qd_run",  "idle",   "threads", "sweep"};
const std::set<std::string> kProfileKeys = {"description", "span", "ios", "duration", "device", "phases"};

[[noreturn]] void fail(const std::string& origin, const std::string& what) {
  throw format::InputError(origin + ": " + what);
}

double percent(const json& v, const std::string& origin, const std::string& key) {
  if (!v.is_number()) fail(origin, "\"" + key + "\" must be a number (percent)");
  const double p = v.get<double>();
  if (p < 0 || p > 100) fail(origin, fmt::format("\"{}\" is {}: a percentage must be within 0..100", key, p));
  return p / 100;
}

std::string text_of(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// A size or duration (units/units.h); its error names the profile and the key.
template <class Parse>
auto unit_of(Parse parse, const std::string& text, const std::string& origin, const std::string& key) {
  try {
    return parse(text, "\"" + key + "\"");
  } catch (const format::UsageError& e) {
    fail(origin, e.what());
  }
}

int64_t duration_of(const json& v, const std::string& origin, const std::string& key) {
  return unit_of(units::parse_duration, text_of(v), origin, key);
}

// "4K", or a range "512-3.5K"; values are sizes (`bytes`) or plain numbers.
Share range_of(const std::string& key, double weight, bool bytes, const std::string& origin) {
  const auto dash = key.find('-', 1);
  auto value = [&](const std::string& t) -> uint64_t {
    if (bytes) return units::parse_size(t, "\"sizes\"");
    size_t used = 0;
    const uint64_t v = std::stoull(t, &used);
    if (used != t.size()) throw format::InputError("bad number '" + t + "'");
    return v;
  };
  Share s;
  try {
    s.low = value(key.substr(0, dash));
    s.high = dash == std::string::npos ? s.low : value(key.substr(dash + 1));
  } catch (const std::exception& e) {
    fail(origin, "bad range '" + key + "': " + e.what());
  }
  if (s.low == 0 || s.high < s.low) fail(origin, "bad range '" + key + "': expected LOW or LOW-HIGH, LOW >= 1");
  if (bytes && (s.low % 512 || s.high % 512)) fail(origin, "IO size '" + key + "' is not a multiple of 512 bytes");
  s.weight = weight;
  return s;
}

std::vector<Share> shares_of(const json& v, bool bytes, const std::string& origin, const std::string& key) {
  if (!v.is_object() || v.empty()) fail(origin, "\"" + key + "\" must be an object of VALUE: PERCENT");
  std::vector<Share> out;
  double total = 0;
  for (const auto& [k, w] : v.items()) {
    out.push_back(range_of(k, percent(w, origin, key + "." + k), bytes, origin));
    total += out.back().weight;
  }
  if (total <= 0) fail(origin, "\"" + key + "\": all shares are zero");
  for (auto& s : out) s.weight /= total;  // shares need not add up to 100: the rest is spread proportionally
  return out;
}

void apply(Phase& p, const std::string& key, const json& v, const std::string& origin) {
  if (key == "name") p.name = v.get<std::string>();
  else if (key == "weight") {
    if (!v.is_number() || v.get<double>() <= 0) fail(origin, "\"weight\" must be a positive number");
    p.weight = v.get<double>();
  } else if (key == "read") p.read_share = percent(v, origin, key);
  else if (key == "sizes") p.sizes = shares_of(v, true, origin, key);
  else if (key == "sequential") p.sequential = percent(v, origin, key);
  else if (key == "qd") {
    p.qd = v.is_number() ? std::vector<Share>{range_of(text_of(v), 1, false, origin)} : shares_of(v, false, origin, key);
  } else if (key == "qd_run") {
    if (!v.is_number_unsigned()) fail(origin, "\"qd_run\" must be a count (0 = the whole phase)");
    p.qd_run = v.get<uint64_t>();
  } else if (key == "idle") {
    if (!v.is_object()) fail(origin, "\"idle\" must be {\"probability\": PCT, \"mean\": DUR, \"max\": DUR}");
    for (const auto& [k, x] : v.items()) {
      if (k == "probability") p.idle_probability = percent(x, origin, "idle.probability");
      else if (k == "mean") p.idle_mean_ns = duration_of(x, origin, "idle.mean");
      else if (k == "max") p.idle_max_ns = duration_of(x, origin, "idle.max");
      else fail(origin, "unknown key \"idle." + k + "\"");
    }
    if (p.idle_max_ns == 0) p.idle_max_ns = p.idle_mean_ns * 10;
  } else if (key == "threads") {
    if (!v.is_number_unsigned() || v.get<uint64_t>() < 1 || v.get<uint64_t>() > 1024)
      fail(origin, "\"threads\" must be 1..1024");
    p.threads = v.get<uint32_t>();
  }
}

// A phase with "sweep" becomes one phase per combination of the swept values,
// the first key varying slowest.
void expand(const Phase& base, const json& sweep, const std::string& origin, std::vector<Phase>& out) {
  if (!sweep.is_object()) fail(origin, "\"sweep\" must be an object of KEY: [VALUES]");
  std::vector<std::pair<std::string, std::vector<json>>> axes;
  for (const auto& [k, vs] : sweep.items()) {
    if (!vs.is_array() || vs.empty()) fail(origin, "\"sweep." + k + "\" must be a non-empty list");
    if (k != "read" && k != "qd" && k != "sizes" && k != "threads" && k != "sequential")
      fail(origin, "\"sweep." + k + "\": only read, qd, sizes, sequential and threads can be swept");
    axes.emplace_back(k, std::vector<json>(vs.begin(), vs.end()));
  }
  std::vector<size_t> at(axes.size(), 0);
  while (true) {
    Phase p = base;
    std::string label;
    for (size_t a = 0; a < axes.size(); ++a) {
      const auto& [k, vs] = axes[a];
      json v = vs[at[a]];
      if (k == "sizes" && v.is_string()) v = json{{v.get<std::string>(), 100}};
      apply(p, k, v, origin);
      label += fmt::format("{}{}={}", label.empty() ? "" : " ", k, text_of(vs[at[a]]));
    }
    p.name = base.name.empty() ? label : base.name + " " + label;
    out.push_back(std::move(p));
    size_t a = axes.size();
    while (a > 0 && ++at[a - 1] == axes[a - 1].second.size()) at[--a] = 0;
    if (a == 0) break;
  }
}

void check(const Phase& p, const std::string& origin) {
  const std::string where = origin + ": phase \"" + p.name + "\"";
  if (p.sizes.empty()) fail(where, "no \"sizes\"");
  if (p.qd.empty()) fail(where, "no \"qd\"");
  if (p.idle_probability > 0 && p.idle_mean_ns <= 0) fail(where, "\"idle\" needs a positive \"mean\"");
}

}  // namespace

int64_t DeviceModel::service_ns(uint64_t bytes, uint64_t depth) const {
  const double alone = static_cast<double>(latency_ns) + static_cast<double>(bytes) * 1e9 / bandwidth_Bps;
  const double queued = std::max(1.0, static_cast<double>(depth) / parallelism);
  return static_cast<int64_t>(std::llround(alone * queued));
}

static Profile parse_checked(const nlohmann::json& doc, const std::string& origin) {
  if (!doc.is_object()) fail(origin, "a profile is a JSON object");
  Profile prof;
  prof.name = doc.value("name", std::filesystem::path(origin).stem().string());
  prof.description = doc.value("description", "");
  Phase defaults;
  for (const auto& [k, v] : doc.items()) {
    if (k == "name" || k == "sweep") continue;
    if (kPhaseKeys.count(k)) apply(defaults, k, v, origin);
    else if (!kProfileKeys.count(k)) fail(origin, "unknown key \"" + k + "\"");
  }
  if (!doc.contains("span")) fail(origin, "no \"span\" (bytes the IOs may touch, e.g. \"8GiB\")");
  prof.span = unit_of(units::parse_size, text_of(doc["span"]), origin, "span");
  if (doc.contains("ios")) prof.ios = doc["ios"].get<uint64_t>();
  if (doc.contains("duration")) prof.duration_ns = duration_of(doc["duration"], origin, "duration");
  if ((prof.ios > 0) == (prof.duration_ns > 0)) fail(origin, "give exactly one of \"ios\" and \"duration\"");
  if (doc.contains("device")) {
    for (const auto& [k, v] : doc["device"].items()) {
      if (k == "latency") prof.device.latency_ns = duration_of(v, origin, "device.latency");
      else if (k == "bandwidth") {
        std::string t = text_of(v);
        if (t.ends_with("/s")) t.resize(t.size() - 2);
        prof.device.bandwidth_Bps = static_cast<double>(unit_of(units::parse_size, t, origin, "device.bandwidth"));
      } else if (k == "parallelism") prof.device.parallelism = std::max(1u, v.get<uint32_t>());
      else fail(origin, "unknown key \"device." + k + "\"");
    }
    if (prof.device.bandwidth_Bps <= 0) fail(origin, "\"device.bandwidth\" must be positive");
  }
  const json phases = doc.value("phases", json::array({json::object()}));
  if (!phases.is_array() || phases.empty()) fail(origin, "\"phases\" must be a non-empty list");
  for (const auto& ph : phases) {
    Phase p = defaults;
    p.name.clear();
    for (const auto& [k, v] : ph.items()) {
      if (!kPhaseKeys.count(k)) fail(origin, "unknown phase key \"" + k + "\"");
      if (k != "sweep") apply(p, k, v, origin);
    }
    const json* sweep = ph.contains("sweep") ? &ph["sweep"] : (doc.contains("sweep") ? &doc["sweep"] : nullptr);
    if (sweep) expand(p, *sweep, origin, prof.phases);
    else prof.phases.push_back(std::move(p));
  }
  for (auto& p : prof.phases) {
    if (p.name.empty()) p.name = prof.name;
    check(p, origin);
    for (const auto& s : p.sizes)
      if (s.high * p.threads > prof.span) fail(origin, fmt::format("IO size {} does not fit a zone of the span", s.high));
  }
  return prof;
}

Profile parse_profile(const nlohmann::json& doc, const std::string& origin) {
  try {
    return parse_checked(doc, origin);
  } catch (const json::exception& e) {
    fail(origin, std::string("wrong type of a value: ") + e.what());
  }
}

Profile load_profile(const std::string& name_or_path) {
  for (const auto& b : builtin_profiles())
    if (name_or_path == b.name) return parse_profile(json::parse(b.json), std::string("built-in ") + b.name);
  std::ifstream f(name_or_path);
  if (!f) {
    std::string names;
    for (const auto& b : builtin_profiles()) names += std::string(names.empty() ? "" : ", ") + b.name;
    throw format::UsageError("'" + name_or_path + "' is neither a built-in profile (" + names +
                             ") nor a readable file");
  }
  json doc;
  try {
    doc = json::parse(f, nullptr, true, /*ignore_comments=*/true);
  } catch (const json::parse_error& e) {
    throw format::InputError(name_or_path + ": not JSON: " + e.what());
  }
  return parse_profile(doc, name_or_path);
}

}  // namespace iotape::workloads

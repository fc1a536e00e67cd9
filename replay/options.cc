#include "replay/options.h"

#include <fmt/format.h>

#include <cstdlib>

#include "format/error.h"

namespace iotape::replay {

int64_t ReplayOptions::effective_max_idle_ns() const {
  if (max_idle_ns) return *max_idle_ns;
  return timing == Timing::kAfap ? 25'000'000 : -1;
}

DataPattern parse_data(const std::string& text) {
  DataPattern d;
  if (text == "random") return d;
  if (text == "zero") {
    d.kind = DataPattern::Kind::kZero;
    return d;
  }
  if (text.rfind("compress:", 0) == 0) {
    char* end = nullptr;
    const long pct = std::strtol(text.c_str() + 9, &end, 10);
    if (*end == '\0' && end != text.c_str() + 9 && pct >= 0 && pct <= 100) {
      d.kind = DataPattern::Kind::kCompressible;
      d.compress_percent = static_cast<int>(pct);
      return d;
    }
  }
  throw format::UsageError("bad --data '" + text + "': random, zero or compress:PCT (0-100)");
}

namespace {

bool parse_uint(const std::string& s, uint32_t& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  const unsigned long v = std::strtoul(s.c_str(), &end, 10);
  if (*end != '\0' || v > 0xffffffffUL) return false;
  out = static_cast<uint32_t>(v);
  return true;
}

}  // namespace

std::vector<DeviceMapEntry> parse_device_map(const std::string& text, const std::vector<std::string>& targets) {
  std::vector<DeviceMapEntry> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    pos = comma + 1;
    const auto eq = item.find('=');
    if (eq == std::string::npos) throw format::UsageError("bad --device-map entry '" + item + "': expected SRC=DST");
    const std::string src = item.substr(0, eq), dst = item.substr(eq + 1);
    DeviceMapEntry e;
    const auto colon = src.find(':');
    uint32_t v;
    if (colon != std::string::npos) {
      if (!parse_uint(src.substr(0, colon), e.source_major) || !parse_uint(src.substr(colon + 1), e.source_minor))
        throw format::UsageError("bad trace device '" + src + "' in --device-map: MAJ:MIN, an index or a name");
    } else if (parse_uint(src, v)) {
      e.source_index = v;
    } else if (!src.empty()) {
      e.source_name = src;  // checked against the trace's device table by make_plan
    } else {
      throw format::UsageError("bad --device-map entry '" + item +
                               "': no trace device (an index, MAJ:MIN or name) before '='");
    }
    bool found = false;
    for (size_t t = 0; t < targets.size() && !found; ++t)
      if (targets[t] == dst) e.target = static_cast<uint32_t>(t), found = true;
    if (!found && parse_uint(dst, v) && v < targets.size()) e.target = v, found = true;
    if (!found) throw format::UsageError("bad target '" + dst + "' in --device-map: a --target path or its index");
    out.push_back(e);
  }
  return out;
}

std::string describe_data(const DataPattern& d) {
  switch (d.kind) {
    case DataPattern::Kind::kRandom: return "random";
    case DataPattern::Kind::kZero: return "zero";
    case DataPattern::Kind::kCompressible: return fmt::format("compress:{}", d.compress_percent);
  }
  return "random";
}

const char* prefill_name(Prefill p) {
  switch (p) {
    case Prefill::kNone: return "none";
    case Prefill::kReads: return "reads";
    case Prefill::kFull: return "full";
    case Prefill::kAuto: return "auto";
  }
  return "auto";
}

std::string describe_ring(const RingSetup& r) {
  if (r.sqpoll) return r.iopoll ? "sqpoll+iopoll" : "sqpoll";
  return r.iopoll ? "iopoll" : "interrupt";
}

std::string describe(const ReplayOptions& o) {
  std::string s = fmt::format("timing={} speed={} qd={} max_idle={} events={} fit={} data=",
                              o.timing == Timing::kOriginal ? "original" : "afap", o.speed,
                              o.qd ? std::to_string(o.qd) : std::string("recorded"),
                              o.effective_max_idle_ns() < 0 ? std::string("none")
                                                            : fmt::format("{}ns", o.effective_max_idle_ns()),
                              o.events == EventTime::kIssue ? "issue" : "queue",
                              o.fit == Fit::kFail ? "fail" : o.fit == Fit::kWrap ? "wrap" : "scale");
  s += describe_data(o.data);
  if (o.window.start_ns || o.window.end_ns)
    s += fmt::format(" window={}ns..{}", o.window.start_ns,
                     o.window.end_ns ? fmt::format("{}ns", *o.window.end_ns) : std::string());
  s += fmt::format(" prefill={}", prefill_name(o.prefill));
  if (o.threads > 1) s += fmt::format(" threads={}", o.threads);
  if (o.ring.iopoll || o.ring.sqpoll) s += " ring=" + describe_ring(o.ring);
  if (o.stop_on_error) s += " stop_on_error";
  if (o.force) s += " force";
  return s;
}

}  // namespace iotape::replay

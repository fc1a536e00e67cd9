#include "units/units.h"

#include <limits>
#include <span>
#include <string>

#include "format/error.h"

namespace iotape::units {
namespace {

struct Unit {
  std::string_view name;
  uint64_t scale;
};

constexpr uint64_t kSecond = 1'000'000'000;
constexpr Unit kDurationUnits[] = {
    {"", kSecond},     {"ns", 1},           {"us", 1'000},         {"µs", 1'000},
    {"ms", 1'000'000}, {"s", kSecond},      {"m", 60 * kSecond},   {"min", 60 * kSecond},
    {"h", 3'600 * kSecond},                 {"d", 86'400 * kSecond},
};

constexpr uint64_t kKi = 1ull << 10, kMi = 1ull << 20, kGi = 1ull << 30, kTi = 1ull << 40;
constexpr Unit kSizeUnits[] = {
    {"", 1},        {"B", 1},
    {"K", kKi},     {"k", kKi},        {"KiB", kKi},           {"KB", kKi},
    {"M", kMi},     {"m", kMi},        {"MiB", kMi},
    {"G", kGi},     {"g", kGi},        {"GiB", kGi},
    {"T", kTi},     {"t", kTi},        {"TiB", kTi},
    {"kB", 1'000},  {"MB", 1'000'000}, {"GB", 1'000'000'000}, {"TB", 1'000'000'000'000},
};

constexpr std::string_view kDurationForms = "a non-negative number with ns, us, ms, s, m, h or d (plain = seconds)";
constexpr std::string_view kSizeForms =
    "a non-negative number of bytes (plain or B), or with K, M, G, T or KiB, MiB, GiB, TiB (binary) "
    "or kB, MB, GB, TB (decimal)";
constexpr std::string_view kWindowForms =
    "START..END with durations (e.g. 90s..2h; 10..20 is in seconds), either end may be left out";

[[noreturn]] void fail(std::string_view what, std::string_view kind, std::string_view text, std::string_view why) {
  throw format::UsageError(std::string(what) + ": bad " + std::string(kind) + " '" + std::string(text) +
                           "': " + std::string(why));
}

enum class Scaled { kOk, kMalformed, kTooLarge };

// NUMBER UNIT -> NUMBER x the unit's scale, rounded to the nearest integer
// (halves up). Integer arithmetic, so that sizes and durations beyond the 53
// bits of a double still come out exact.
Scaled scale(std::string_view text, std::span<const Unit> units, uint64_t max, uint64_t& out) {
  size_t i = 0;
  unsigned __int128 whole = 0;
  bool too_large = false;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    whole = whole * 10 + static_cast<unsigned>(text[i] - '0');
    if (whole > max) too_large = true, whole = max;
  }
  bool digits = i > 0;
  // Fraction digits beyond 18 are below the resolution of every unit: ignored.
  uint64_t fraction = 0, denominator = 1;
  if (i < text.size() && text[i] == '.') {
    for (++i; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, digits = true)
      if (denominator < 1'000'000'000'000'000'000ull)
        fraction = fraction * 10 + static_cast<unsigned>(text[i] - '0'), denominator *= 10;
  }
  if (!digits) return Scaled::kMalformed;
  const std::string_view name = text.substr(i);
  for (const Unit& u : units) {
    if (u.name != name) continue;
    if (too_large) return Scaled::kTooLarge;
    const unsigned __int128 v =
        whole * u.scale + (static_cast<unsigned __int128>(fraction) * u.scale + denominator / 2) / denominator;
    if (v > max) return Scaled::kTooLarge;
    out = static_cast<uint64_t>(v);
    return Scaled::kOk;
  }
  return Scaled::kMalformed;
}

}  // namespace

int64_t parse_duration(std::string_view text, std::string_view what) {
  uint64_t ns = 0;
  const Scaled s = scale(text, kDurationUnits, std::numeric_limits<int64_t>::max(), ns);
  if (s == Scaled::kMalformed) fail(what, "duration", text, kDurationForms);
  if (s == Scaled::kTooLarge) fail(what, "duration", text, "too long (at most 106751 days)");
  return static_cast<int64_t>(ns);
}

uint64_t parse_size(std::string_view text, std::string_view what) {
  uint64_t bytes = 0;
  const Scaled s = scale(text, kSizeUnits, std::numeric_limits<uint64_t>::max(), bytes);
  if (s == Scaled::kMalformed) fail(what, "size", text, kSizeForms);
  if (s == Scaled::kTooLarge) fail(what, "size", text, "too large (16 EiB or more)");
  return bytes;
}

Window parse_window(std::string_view text, std::string_view what) {
  const auto dots = text.find("..");
  if (dots == std::string_view::npos) fail(what, "window", text, kWindowForms);
  const std::string_view start = text.substr(0, dots), end = text.substr(dots + 2);
  Window w;
  if (!start.empty()) w.start_ns = parse_duration(start, what);
  if (!end.empty()) {
    w.end_ns = parse_duration(end, what);
    if (*w.end_ns <= w.start_ns) fail(what, "window", text, "END must be after START");
  }
  return w;
}

std::string format_size(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"", "K", "M", "G", "T"};
  size_t u = 0;
  while (u + 1 < std::size(kUnits) && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++u;
  }
  return std::to_string(bytes) + kUnits[u];
}

}  // namespace iotape::units

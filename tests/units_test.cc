// Tests of the units module: every form of its grammar and every rejection.
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "traces/error.h"
#include "units/units.h"

using namespace iotape;

namespace {

constexpr int64_t kS = 1'000'000'000;
constexpr uint64_t kGiB = 1ull << 30;

// The message of the UsageError that `f` throws, or "" when it throws none.
template <class F>
std::string usage_error_of(F f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

// Each text of the table parses to its value.
template <class Parse, class T>
void check_values(Parse parse, const std::vector<std::pair<std::string, T>>& table) {
  for (const auto& [text, value] : table) {
    INFO(text);
    CHECK(parse(text, "--option") == value);
  }
}

// Each text is rejected with "OPTION: bad KIND 'TEXT': WHY".
template <class Parse>
void check_rejected(Parse parse, const std::string& option, const std::string& kind,
                    const std::vector<std::string>& texts, const std::string& why) {
  for (const auto& text : texts) {
    INFO(text);
    CHECK(usage_error_of([&] { parse(text, option); }) == option + ": bad " + kind + " '" + text + "': " + why);
  }
}

}  // namespace

TEST_CASE("durations: every unit, plain seconds, fractions rounded to the ns") {
  const std::vector<std::pair<std::string, int64_t>> table = {
      {"1h", 3'600 * kS},
      {"7d", 7 * 86'400 * kS},
      {"90s", 90 * kS},
      {"1.5us", 1'500},
      {"1.5µs", 1'500},
      {"250ms", 250'000'000},
      {"500ns", 500},
      {"2m", 120 * kS},
      {"2min", 120 * kS},
      {"1.5m", 90 * kS},
      {"10", 10 * kS},
      {"0.5", kS / 2},
      {".5s", kS / 2},
      {"0", 0},
      {"0.0000000005", 1},  // half a ns rounds up
      {"0.0000000004", 0},
      {"106751d", 106'751 * (86'400 * kS)},
      {"9223372036854775807ns", std::numeric_limits<int64_t>::max()},
  };
  check_values(units::parse_duration, table);
}

TEST_CASE("durations: rejections name the option and the forms") {
  check_rejected(units::parse_duration, "--length", "duration",
                 {"-1s", "1x", "", "s", "1 s", "1e3s", "1S", "1.s5", "3 parsecs"},
                 "a non-negative number with ns, us, ms, s, m, h or d (plain = seconds)");
  check_rejected(units::parse_duration, "--max-idle", "duration",
                 {"106752d", "9223372036854775808ns", "99999999999999999999999h"}, "too long (at most 106751 days)");
}

TEST_CASE("sizes: bytes, binary K M G T and KiB.., decimal kB MB GB TB, KB binary") {
  const std::vector<std::pair<std::string, uint64_t>> table = {
      {"1GiB", kGiB},
      {"1GB", 1'000'000'000},
      {"1G", kGiB},
      {"1g", kGiB},
      {"4k", 4'096},
      {"4K", 4'096},
      {"4KiB", 4'096},
      {"4KB", 4'096},  // binary, as profiles always read it
      {"4kB", 4'000},
      {"512M", 512ull << 20},
      {"512m", 512ull << 20},
      {"2MiB", 2ull << 20},
      {"1.5G", 3 * kGiB / 2},
      {"1TB", 1'000'000'000'000},
      {"1T", 1ull << 40},
      {"1t", 1ull << 40},
      {"1TiB", 1ull << 40},
      {"100B", 100},
      {"4096", 4'096},
      {"0", 0},
      {"0.3K", 307},  // 307.2 bytes
      {"0.5", 1},     // half a byte rounds up
      {"18446744073709551615", std::numeric_limits<uint64_t>::max()},
  };
  check_values(units::parse_size, table);
}

TEST_CASE("sizes: rejections name the option and the forms") {
  check_rejected(units::parse_size, "--rotate-size", "size",
                 {"-1G", "1x", "", "G", "1Gb", "1gb", "1 G", "1e3", "1KIB"},
                 "a non-negative number of bytes (plain or B), or with K, M, G, T or KiB, MiB, GiB, TiB (binary) "
                 "or kB, MB, GB, TB (decimal)");
  check_rejected(units::parse_size, "--buffer", "size",
                 {"16777216T", "18446744073709551616", "20000000TB", "99999999999999999999999999"},
                 "too large (16 EiB or more)");
}

TEST_CASE("windows: START..END of durations, either end open") {
  struct Row {
    std::string text;
    int64_t start_ns;
    std::optional<int64_t> end_ns;
  };
  const std::vector<Row> table = {
      {"90s..2h", 90 * kS, 7'200 * kS},
      {"10..20", 10 * kS, 20 * kS},
      {"1m..2m", 60 * kS, 120 * kS},
      {"2ms..5ms", 2'000'000, 5'000'000},
      {"0.0000003..0.0000007", 300, 700},
      {"10s..", 10 * kS, std::nullopt},
      {"..2h", 0, 7'200 * kS},
      {"..", 0, std::nullopt},
  };
  for (const auto& row : table) {
    INFO(row.text);
    const units::Window w = units::parse_window(row.text, "--window");
    CHECK(w.start_ns == row.start_ns);
    CHECK(w.end_ns == row.end_ns);
  }
}

TEST_CASE("windows: rejections name the option") {
  const std::string forms =
      "START..END with durations (e.g. 90s..2h; 10..20 is in seconds), either end may be left out";
  const std::string duration_forms = "a non-negative number with ns, us, ms, s, m, h or d (plain = seconds)";
  const std::vector<std::pair<std::string, std::string>> table = {
      {"5..1", "--window: bad window '5..1': END must be after START"},
      {"2h..1h", "--window: bad window '2h..1h': END must be after START"},
      {"10..10", "--window: bad window '10..10': END must be after START"},
      {"..0", "--window: bad window '..0': END must be after START"},
      {"abc", "--window: bad window 'abc': " + forms},
      {"", "--window: bad window '': " + forms},
      {"10s", "--window: bad window '10s': " + forms},
      {"1x..2s", "--window: bad duration '1x': " + duration_forms},
      {"1s..-2s", "--window: bad duration '-2s': " + duration_forms},
  };
  for (const auto& [text, message] : table) {
    INFO(text);
    CHECK(usage_error_of([&] { units::parse_window(text, "--window"); }) == message);
  }
}

TEST_CASE("the window forms report took keep their values") {
  CHECK(units::parse_window("10..", "--window").start_ns == 10'000'000'000);
  CHECK(!units::parse_window("10..", "--window").end_ns);
  CHECK(units::parse_window("..2.5", "--window").end_ns == 2'500'000'000);
  CHECK_THROWS(units::parse_window("5..1", "--window"));
  CHECK_THROWS(units::parse_window("abc", "--window"));
}

TEST_CASE("the forms replay took keep their values") {
  CHECK(units::parse_duration("25ms", "--max-idle") == 25'000'000);
  CHECK(units::parse_duration("1.5us", "--max-idle") == 1500);
  CHECK_THROWS(units::parse_duration("3 parsecs", "--max-idle"));
  const units::Window w = units::parse_window("1s..2500ms", "--window");
  CHECK(w.start_ns == 1'000'000'000);
  CHECK(*w.end_ns == 2'500'000'000);
}

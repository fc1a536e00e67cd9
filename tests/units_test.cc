// Tests of the units module: every form of its grammar and every rejection,
// then every command that takes a unit, run as a user would.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "format/error.h"
#include "tests/test_support.h"
#include "units/units.h"

using namespace iotape;
using iotape::test::iotape_binary;
using iotape::test::run;
using iotape::test::TempDir;

namespace {

constexpr int64_t kS = 1'000'000'000;
constexpr uint64_t kGiB = 1ull << 30;

// The message of the UsageError that `f` throws, or "" when it throws none.
template <class F>
std::string usage_error_of(F f) {
  try {
    f();
  } catch (const format::UsageError& e) {
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

TEST_CASE("sizes are written back in the largest whole binary unit, and read back") {
  CHECK(units::format_size(0) == "0");
  CHECK(units::format_size(512) == "512");
  CHECK(units::format_size(1536) == "1536");
  CHECK(units::format_size(8192) == "8K");
  CHECK(units::format_size(1536 * 1024) == "1536K");
  CHECK(units::format_size(1 << 20) == "1M");
  CHECK(units::format_size(16ull << 30) == "16G");
  CHECK(units::format_size(3ull << 50) == "3072T");
  for (uint64_t v : {1ull, 512ull, 4096ull, 1ull << 20, 12345ull << 10, 5ull << 40})
    CHECK(units::parse_size(units::format_size(v), "x") == v);
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

namespace {

// A profile of a burst of IOs about every second for three minutes: a trace
// long enough for windows of minutes, small enough to make in milliseconds.
constexpr const char* kProfile = R"({
  "description": "units test",
  "span": "64MiB",
  "duration": "3m",
  "device": {"latency": "50us", "bandwidth": "500MB/s"},
  "sizes": {"4k": 50, "8KiB": 50},
  "qd": 1,
  "qd_run": 20,
  "idle": {"probability": 100, "mean": "1s", "max": "2s"}
})";

// Forms of one value: `command` with each form in place of {0} (and a fresh
// output path in place of {1}) succeeds, and every form gives the same
// output (the file written at {1} if any, else stdout), in which `expect`
// stands (stdout and `iotape info` of the file).
struct SameValue {
  std::string command;
  std::vector<std::string> forms;
  std::string expect;
};

class Cli {
 public:
  Cli() {
    test::write_file(profile, kProfile);
    must_run("synth " + profile + " -o " + trace);
    test::write_file(target, "");
    std::filesystem::resize_file(target, 64ull << 20);  // the profile's span
  }

  void check(const SameValue& s) {
    std::string first;
    for (size_t i = 0; i < s.forms.size(); ++i) {
      const std::string out = dir.file(fmt::format("out{}.iot", i));
      const std::string command = fmt::format(fmt::runtime(s.command), s.forms[i], out);
      const auto r = run(iotape_binary() + " " + command + " 2>&1");
      INFO(command << "\n" << r.output);
      REQUIRE(r.exit_code == 0);
      const bool wrote = std::filesystem::exists(out);
      const std::string output = wrote ? test::read_file(out) : r.output;
      std::string shown = r.output;
      if (wrote) shown += run(iotape_binary() + " info " + out).output;
      CHECK(shown.find(s.expect) != std::string::npos);
      if (i == 0) first = output;
      else CHECK(output == first);
    }
  }

  void must_run(const std::string& args) {
    const auto r = run(iotape_binary() + " " + args + " 2>&1");
    INFO(args << "\n" << r.output);
    REQUIRE(r.exit_code == 0);
  }

  TempDir dir;
  const std::string profile = dir.file("p.json");
  const std::string trace = dir.file("t.iot");
  const std::string target = dir.file("target.img");
};

}  // namespace

TEST_CASE("every command takes every form of its durations, sizes and windows", "[cli]") {
  Cli cli;
  const std::string& t = cli.trace;
  const std::vector<SameValue> table = {
      {"synth " + cli.profile + " -o {1} --span {0}", {"1GiB", "1G", "1024M", "1048576k", "1073741824", "1073741824B"},
       "span=1073741824 "},
      {"synth " + cli.profile + " -o {1} --span {0}", {"1GB", "1000MB", "1000000kB", "0.001TB", "1000000000"},
       "span=1000000000 "},
      {"synth " + cli.profile + " -o {1} --span {0}", {"1.5G", "1536M", "1536MiB"}, "span=1610612736 "},
      {"synth " + cli.profile + " -o {1} --span {0}", {"64KB", "64K", "65536"}, "span=65536 "},
      {"synth " + cli.profile + " -o {1} --duration {0}", {"3m", "180", "180s", "3min", "0.05h", "180000ms"},
       "duration_ns=180000000000 "},
      {"cut " + t + " -o {1} --heavy --length {0}", {"1m", "1min", "60", "60s", "60000ms"},
       "windows of 60.000 s"},
      {"cut " + t + " -o {1} --heavy --length {0}", {"90s", "1.5m", "90"}, "windows of 90.000 s"},
      {"cut " + t + " -o {1} --light --length {0}", {"0.75min", "0.75m", "45"}, "windows of 45.000 s"},
      {"cut " + t + " -o {1} --heavy --length 90s --max-idle {0}", {"250ms", "0.25", "250000us", "0.25s"}, ""},
      {"cut " + t + " -o {1} --window {0}", {"1m..2m", "60..120", "60s..120s"}, "window 60.000..120.000"},
      {"cut " + t + " -o {1} --window {0}", {"10s..", "10.."}, "window 10.000..end"},
      {"cut " + t + " -o {1} --window {0}", {"..2h", "..7200", "..120m"}, "window 0.000..7200.000"},
      {"report " + t + " --window {0}", {"1m..2m", "60..120", "60000ms..2min"}, "IOs"},
      {"report " + t + " --window {0}", {"10s..", "10..", "10000ms.."}, "IOs"},
      {"report " + t + " --window {0}", {"..2h", "..7200"}, "IOs"},
      {"report " + t + " --window {0}", {"90s..2h", "1.5m..7200"}, "IOs"},
      {"report " + t + " --window {0}", {"1..5", "1s..5s", "0.0167m..5000ms"}, "IOs"},
      {"replay " + t + " --target " + cli.target + " --dry-run --max-idle 1h --window {0}",
       {"1m..2m", "60..120", "60s..120000ms"}, "max_idle=3600000000000ns events=issue fit=fail data=random "
                                               "window=60000000000ns..120000000000ns"},
      {"replay " + t + " --target " + cli.target + " --dry-run --window {0}", {"2ms..150000ms", "0.002..150"},
       "window=2000000ns..150000000000ns"},
      {"replay " + t + " --target " + cli.target + " --dry-run --window {0}", {"10s..", "10.."},
       "window=10000000000ns.."},
      {"replay " + t + " --target " + cli.target + " --dry-run --max-idle {0}", {"25ms", "0.025", "25000us"},
       "max_idle=25000000ns"},
      {"replay " + t + " --target " + cli.target + " --dry-run --max-idle {0}", {"1.5us", "1.5µs", "1500ns"},
       "max_idle=1500ns"},
  };
  for (const auto& row : table) cli.check(row);

  // A window takes its part of the trace, not all of it.
  const auto whole = run(iotape_binary() + " report " + t);
  const auto part = run(iotape_binary() + " report " + t + " --window 1m..2m");
  CHECK(whole.output != part.output);

  // bench has no dry run: without --allow-write it stops after its options
  // were read, at the first thing it would write.
  for (const std::string option : {"--duration 30m", "--duration 90s", "--duration 1h", "--duration 10",
                                   "--round 1.5s", "--round 500ms", "--round 2", "--window 5m", "--window 300"}) {
    const auto r = run(iotape_binary() + " bench consistency --target " + cli.target + " -o " +
                       cli.dir.file("bench") + " " + option + " 2>&1");
    INFO(option << "\n" << r.output);
    CHECK(r.exit_code == 64);
    CHECK(r.output.find("give --allow-write") != std::string::npos);
  }
}

TEST_CASE("a rejected form exits 64 naming the option", "[cli]") {
  Cli cli;
  const std::string& t = cli.trace;
  const std::string replay = "replay " + t + " --target " + cli.target + " --dry-run";
  const std::string bench = "bench consistency --target " + cli.target + " -o " + cli.dir.file("bench");
  const std::string record = "record -o " + cli.dir.file("r.iot");
  const std::vector<std::pair<std::string, std::string>> table = {
      {"synth " + cli.profile + " -o " + cli.dir.file("s.iot") + " --span 1x", "--span"},
      {"synth " + cli.profile + " -o " + cli.dir.file("s.iot") + " --span 16777216T", "--span"},
      {"synth " + cli.profile + " -o " + cli.dir.file("s.iot") + " --duration '3 parsecs'", "--duration"},
      {"cut " + t + " -o " + cli.dir.file("c.iot") + " --heavy --length 1x", "--length"},
      {"cut " + t + " -o " + cli.dir.file("c.iot") + " --heavy --max-idle -1s", "--max-idle"},
      {"cut " + t + " -o " + cli.dir.file("c.iot") + " --window 2m..1m", "--window"},
      {"report " + t + " --window 5..1", "--window"},
      {"report " + t + " --window abc", "--window"},
      {"report " + t + " --window 1x..2s", "--window"},
      {replay + " --max-idle 1x", "--max-idle"},
      {replay + " --window 5ms..2ms", "--window"},
      {bench + " --duration 1x", "--duration"},
      {bench + " --round -1s", "--round"},
      {bench + " --window 5x", "--window"},
      {record + " --duration -1s", "--duration"},
      {record + " --rotate-size 1x", "--rotate-size"},
      {record + " --rotate-size 1Gb", "--rotate-size"},
      {record + " --rotate-time 1y", "--rotate-time"},
      {record + " --buffer 16Q", "--buffer"},
      {record + " --flush-interval fast", "--flush-interval"},
  };
  for (const auto& [command, option] : table) {
    const auto r = run(iotape_binary() + " " + command + " 2>&1");
    INFO(command << "\n" << r.output);
    CHECK(r.exit_code == 64);
    CHECK(r.output.find("iotape: " + option + ": bad ") != std::string::npos);
  }

  // In a profile the error is the profile's (bad input, 65), naming the file and the field.
  const std::vector<std::pair<std::string, std::string>> fields = {  // the field, its line in kProfile
      {"span", R"("span": "64MiB")"},
      {"idle.mean", R"("mean": "1s")"},
      {"device.bandwidth", R"("bandwidth": "500MB/s")"},
  };
  for (const auto& [field, line] : fields) {
    std::string text = kProfile;
    text.replace(text.find(line), line.size(), line.substr(0, line.find(':')) + R"(: "1x")");
    const std::string path = cli.dir.file("bad.json");
    test::write_file(path, text);
    const auto r = run(iotape_binary() + " synth " + path + " -o " + cli.dir.file("s.iot") + " 2>&1");
    INFO(text << "\n" << r.output);
    CHECK(r.exit_code == 65);
    CHECK(r.output.find("iotape: " + path + ": \"" + field + "\": bad ") != std::string::npos);
  }
}

TEST_CASE("record takes every form of its durations and sizes", "[record][ebpf]") {
  if (!test::require_root("record block IOs")) return;
  TempDir dir;
  test::LoopDevice loop(16u << 20);
  for (const std::string options :
       {"--rotate-size 1GB --rotate-time 1h --duration 1s --buffer 16MiB --flush-interval 100ms",
        "--rotate-size 1G --rotate-time 3600 --duration 1 --buffer 16M --flush-interval 0.1",
        "--rotate-size 512m --rotate-time 90m --duration 1000ms --buffer 4096K --flush-interval 1s"}) {
    const std::string out = dir.file("r.iot");
    const auto r = run(iotape_binary() + " record -d " + loop.path() + " -o " + out + " " + options + " 2>&1");
    INFO(options << "\n" << r.output);
    CHECK(r.exit_code == 0);
    CHECK(std::filesystem::exists(dir.file("r.0000.iot")));  // rotation writes numbered parts
    std::filesystem::remove(dir.file("r.0000.iot"));
  }
}

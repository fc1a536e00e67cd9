// The command line's promises: one exit status per error kind, as
// `iotape --help` and README.md document them, with messages that name the
// file and the place.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/test_support.h"

namespace {

using iotape::test::iotape_binary;
using iotape::test::read_file;
using iotape::test::run;
using iotape::test::TempDir;

std::string synth(const TempDir& dir) {
  const std::string t = dir.file("t.iot");
  REQUIRE(run(iotape_binary() + " synth storage-light --ios 20000 -o " + t).exit_code == 0);
  return t;
}

}  // namespace

TEST_CASE("exit statuses follow the kind of error", "[cli]") {
  TempDir dir;
  const std::string t = synth(dir);

  SECTION("0: done") { CHECK(run(iotape_binary() + " report " + t).exit_code == 0); }
  SECTION("64: an unknown option or a bad value") {
    CHECK(run(iotape_binary() + " report --no-such-option " + t).exit_code == 64);
    CHECK(run(iotape_binary() + " nosuchcommand").exit_code == 64);
    const auto r = run(iotape_binary() + " report --window 5..1 " + t);
    CHECK(r.exit_code == 64);
    CHECK(r.output.find("5..1") != std::string::npos);
  }
  SECTION("2: a damaged trace, read up to the damage") {
    const std::string cut = dir.file("cut.iot");
    std::filesystem::copy_file(t, cut);
    std::filesystem::resize_file(cut, std::filesystem::file_size(t) * 2 / 3);
    const auto r = run(iotape_binary() + " report " + cut);
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find(cut) != std::string::npos);
  }
  SECTION("65: bad input, named by file and line") {
    const std::string csv = dir.file("bad.csv");
    std::ofstream(csv) << "128166372003061629,hm,0,Read,3154608128,4096,38747\nnot,a,record\n";
    const auto r = run(iotape_binary() + " import msr " + csv + " -o " + dir.file("m.iot"));
    INFO(r.output);
    CHECK(r.exit_code == 65);
    CHECK(r.output.find(csv + ":2:") != std::string::npos);
  }
  SECTION("65: times centuries apart, named by trace and IO") {
    // A made-up trace: the first IO completes 292 years after its issue. The
    // page once ran out of memory on it, spreading that IO over its bins.
    const std::string csv = dir.file("odd.csv"), odd = dir.file("odd.iot");
    std::ofstream(csv) << "index,device,major,minor,op,flags,offset,length,queue_ns,issue_ns,complete_ns,status,pid,"
                          "comm,cgroup,cpu,source_index,flag_bits,device_name\n"
                          "0,0,259,0,read,R,0,4096,,-9223372036854775000,5000,0,1,\"a\",0,-1,-1,0,\"d\"\n"
                          "1,0,259,0,read,R,4096,4096,,1000,3000,0,1,\"a\",0,-1,-1,0,\"d\"\n";
    REQUIRE(run(iotape_binary() + " import csv " + csv + " -o " + odd).exit_code == 0);
    for (const std::string& args : {std::string(), " --html " + dir.file("odd.html")}) {
      const auto r = run(iotape_binary() + " report " + odd + args);
      INFO(r.output);
      CHECK(r.exit_code == 65);
      CHECK(r.output.find(odd + ": IO 0: its time 5000 ns lies more than 146 years") != std::string::npos);
    }
  }
  SECTION("74: a system call failed, with its error") {
    const auto r = run(iotape_binary() + " report " + t + " --series-csv " + dir.file("no/such/dir/s.csv"));
    INFO(r.output);
    CHECK(r.exit_code == 74);
    CHECK(r.output.find("No such file or directory") != std::string::npos);
  }
}

// `report --html`: the page of the whole trace, so --window is refused; a
// page that cannot be written is a failed system call.
TEST_CASE("report --html: refused with --window, 74 when the page cannot be written", "[cli]") {
  TempDir dir;
  const std::string t = synth(dir);
  const auto windowed = run(iotape_binary() + " report " + t + " --window 1..2 --html " + dir.file("p.html"));
  INFO(windowed.output);
  CHECK(windowed.exit_code == 64);
  CHECK(windowed.output.find("--window excludes --html") != std::string::npos);
  const auto unwritable = run(iotape_binary() + " report " + t + " --html " + dir.file("no/such/dir/p.html"));
  INFO(unwritable.output);
  CHECK(unwritable.exit_code == 74);
  CHECK(unwritable.output.find("cannot write the page") != std::string::npos);
  CHECK(run(iotape_binary() + " report " + t + " --html " + dir.file("p.html")).exit_code == 0);
  // Shorter than one of cut's 60 s windows: the page says so instead of marking windows.
  const std::string page = read_file(dir.file("p.html"));
  CHECK(page.find("<section id=\"windows\">") != std::string::npos);
  CHECK(page.find("less than one window of 60.000 s") != std::string::npos);
  CHECK(page.find("<tr class=\"heavy\">") == std::string::npos);
}

// `replay`: a target that is not there is a bad argument, and -o is required
// exactly where --help says it is.
TEST_CASE("replay: a missing target is a usage error, and --help and the check agree on -o", "[cli]") {
  TempDir dir;
  const std::string t = synth(dir), missing = dir.file("no/such/device");
  const auto r = run(iotape_binary() + " replay " + t + " --target " + missing + " -o " + dir.file("r.iot"));
  INFO(r.output);
  CHECK(r.exit_code == 64);
  CHECK(r.output.find(missing + ": no such target") != std::string::npos);

  const auto help = run(iotape_binary() + " replay --help");
  CHECK(help.exit_code == 0);
  CHECK(help.output.find("required unless --dry-run") != std::string::npos);
  const std::string file = dir.file("target");
  { std::ofstream(file).close(); }
  std::filesystem::resize_file(file, 64 << 20);
  const auto no_output = run(iotape_binary() + " replay " + t + " --target " + file);
  INFO(no_output.output);
  CHECK(no_output.exit_code == 64);
  CHECK(no_output.output.find("-o RESULT is required") != std::string::npos);
  CHECK(run(iotape_binary() + " replay " + t + " --target " + file + " --dry-run --fit wrap").exit_code == 0);
}

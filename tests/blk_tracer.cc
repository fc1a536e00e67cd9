#include "tests/blk_tracer.h"

#include <sys/mount.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <filesystem>
#include <map>
#include <queue>
#include <sstream>

namespace iotape::test {

namespace {
const std::string kDir = "/sys/kernel/tracing";
}

BlkTrace::BlkTrace(const LoopDevice& dev, bool keep_merges, int buffer_kb) : dev_(dev), keep_merges_(keep_merges) {
  if (!std::filesystem::exists(kDir + "/current_tracer")) {
    REQUIRE(::mount("nodev", kDir.c_str(), "tracefs", 0, nullptr) == 0);
    mounted_ = true;
  }
  nomerges_ = read_file(sys("queue/nomerges"));
  if (!keep_merges_) write_file(sys("queue/nomerges"), "2");
  // CLOCK_MONOTONIC, the replay's clock; the option file lists the clocks
  // with the one in use in brackets.
  const std::string clocks = read_file(kDir + "/trace_clock");
  const auto open = clocks.find('['), close = clocks.find(']');
  if (open != std::string::npos && close != std::string::npos) clock_ = clocks.substr(open + 1, close - open - 1);
  write_file(kDir + "/trace_clock", "mono");
  buffer_kb_ = tracefs_buffer_kb();
  write_file(kDir + "/buffer_size_kb", std::to_string(buffer_kb));
  write_file(kDir + "/current_tracer", "nop");
  write_file(kDir + "/trace", "");
  write_file(sys("trace/enable"), "1");
  write_file(kDir + "/current_tracer", "blk");
}

BlkTrace::~BlkTrace() {
  write_file(kDir + "/current_tracer", "nop");
  write_file(sys("trace/enable"), "0");
  if (!keep_merges_) write_file(sys("queue/nomerges"), nomerges_);
  if (!clock_.empty()) write_file(kDir + "/trace_clock", clock_);
  write_file(kDir + "/buffer_size_kb", buffer_kb_);
  write_file(kDir + "/trace", "");
  if (mounted_) ::umount(kDir.c_str());
}

std::multiset<std::tuple<char, uint64_t, uint64_t>> BlkTrace::issued() const {
  std::multiset<std::tuple<char, uint64_t, uint64_t>> out;
  for (const Event& e : events())
    if (e.action == 'D' && e.ranged) out.emplace(e.op, e.offset, e.length);
  return out;
}

// Each CPU's buffer counts what it overwrote ("overrun: N"), from the clear
// the constructor made.
uint64_t BlkTrace::overwritten() const {
  uint64_t total = 0;
  for (int cpu = 0; std::filesystem::exists(kDir + "/per_cpu/cpu" + std::to_string(cpu)); ++cpu) {
    std::istringstream in(read_file(kDir + "/per_cpu/cpu" + std::to_string(cpu) + "/stats"));
    for (std::string line; std::getline(in, line);)
      if (line.starts_with("overrun: ")) total += std::stoull(line.substr(9));
  }
  return total;
}

std::vector<BlkTrace::Request> BlkTrace::completed_requests() const { return matched('D', 'C', true); }

std::vector<int64_t> BlkTrace::queue_waits() const {
  std::vector<int64_t> out;
  for (const auto& [queued, issued] : spans('Q', 'D')) out.push_back(issued - queued);
  return out;
}

std::vector<std::pair<int64_t, int64_t>> BlkTrace::spans(char from, char to) const {
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const Request& r : matched(from, to, false)) out.emplace_back(r.issue_ns, r.complete_ns);
  return out;
}

// Each `from` event and the next `to` event of the same op and range.
std::vector<BlkTrace::Request> BlkTrace::matched(char from, char to, bool with_flushes) const {
  std::map<std::tuple<char, uint64_t, uint64_t>, std::queue<int64_t>> open;
  std::vector<Request> out;
  for (const Event& e : events()) {
    if (!e.ranged && !with_flushes) continue;
    const auto key = std::make_tuple(e.op, e.offset, e.length);
    if (e.action == from) {
      open[key].push(e.time_ns);
    } else if (auto it = open.find(key); e.action == to && it != open.end() && !it->second.empty()) {
      out.push_back({e.op, e.offset, e.length, it->second.front(), e.time_ns});
      it->second.pop();
    }
  }
  return out;
}

// Lines look like
//   iotape-123 [001] ..... 12.345678:   7,0    D   R 2048 + 8 [iotape]
// (the sector and the count of sectors).
std::vector<BlkTrace::Event> BlkTrace::events() const {
  std::vector<Event> out;
  std::istringstream in(read_file(kDir + "/trace"));
  const std::string devno = std::to_string(dev_.dev_major()) + "," + std::to_string(dev_.dev_minor());
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::vector<std::string> w;
    for (std::string s; f >> s;) w.push_back(s);
    auto it = std::find(w.begin(), w.end(), devno);
    if (it == w.end() || it == w.begin() || w.end() - it < 4 || (it[1] != "Q" && it[1] != "D" && it[1] != "C"))
      continue;
    const std::string& stamp = it[-1];  // "12.345678:"
    const auto dot = stamp.find('.');
    if (dot == std::string::npos) continue;
    const int64_t t = std::stoll(stamp.substr(0, dot)) * 1'000'000'000 + std::stoll(stamp.substr(dot + 1, 6)) * 1'000;
    const std::string& rwbs = it[2];
    const char op = rwbs.find('W') != std::string::npos   ? 'W'
                    : rwbs.find('R') != std::string::npos ? 'R'
                    : rwbs.find('D') != std::string::npos ? 'D'
                                                          : 'N';
    // A flush request has no range: "D FN [kworker/0:1H]", "C FN 0 [0]". A
    // completion without one otherwise ends a write's flush sequence.
    const bool ranged = w.end() - it >= 6 && it[4] == "+";
    if (!ranged && op != 'N') continue;
    out.push_back({it[1][0], op, ranged ? std::stoull(it[3]) * 512 : 0, ranged ? std::stoull(it[5]) * 512 : 0, t, ranged});
  }
  return out;
}

}  // namespace iotape::test

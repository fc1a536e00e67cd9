#include "replay/saturation.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <string>

#include "replay/cpu_load.h"

namespace iotape::replay {
namespace {

// io_ticks: the 10th field of a block device's stat file, in milliseconds.
bool read_io_ticks(const std::string& path, uint64_t& ms) {
  std::ifstream in(path);
  uint64_t v = 0;
  for (int field = 1; field <= 10; ++field)
    if (!(in >> v)) return false;
  ms = v;
  return true;
}

std::string device_name(uint32_t major, uint32_t minor) {
  std::ifstream in(fmt::format("/sys/dev/block/{}:{}/uevent", major, minor));
  for (std::string line; std::getline(in, line);)
    if (line.rfind("DEVNAME=", 0) == 0) return line.substr(8);
  return fmt::format("{}:{}", major, minor);
}

}  // namespace

int64_t thread_cpu_wait_ns() {
  std::ifstream in("/proc/thread-self/schedstat");
  int64_t run = 0, wait = 0;
  return in >> run >> wait ? wait : 0;
}

ThreadUseMeter::ThreadUseMeter() : cpu_ns_(thread_cpu_ns()), wait_ns_(thread_cpu_wait_ns()) {}

int64_t ThreadUseMeter::cpu_ns() const { return thread_cpu_ns() - cpu_ns_; }
int64_t ThreadUseMeter::wait_ns() const { return thread_cpu_wait_ns() - wait_ns_; }

ThreadUse ThreadUseMeter::use(int64_t wall_ns) const {
  if (wall_ns <= 0) return {};
  const auto share = [&](int64_t ns) { return static_cast<double>(ns) / static_cast<double>(wall_ns); };
  return {.busy = share(cpu_ns()), .waiting = share(wait_ns())};
}

double closed_loop_host_share(const ThreadUse& thread, double device_busy) {
  return std::max(thread.busy + thread.waiting, 1 - device_busy);
}

bool closed_loop_host_limited(const ThreadUse& thread, double device_busy) {
  return closed_loop_host_share(thread, device_busy) >= kSaturated;
}

DeviceBusy::DeviceBusy(const std::vector<Target>& targets) {
  for (const Target& t : targets) {
    Device d{.name = {}, .stat_path = fmt::format("/sys/dev/block/{}:{}/stat", t.dev_major, t.dev_minor)};
    const bool known =
        std::any_of(devices_.begin(), devices_.end(), [&](const Device& o) { return o.stat_path == d.stat_path; });
    if (known || !read_io_ticks(d.stat_path, d.io_ticks_ms)) continue;
    d.name = device_name(t.dev_major, t.dev_minor);
    devices_.push_back(std::move(d));
  }
}

std::vector<DeviceBusy::Share> DeviceBusy::shares(int64_t wall_ns) const {
  std::vector<Share> out;
  for (const Device& d : devices_) {
    uint64_t ms = 0;
    if (wall_ns <= 0 || !read_io_ticks(d.stat_path, ms)) continue;
    out.push_back(
        {d.name, std::min(1.0, static_cast<double>(ms - d.io_ticks_ms) * 1e6 / static_cast<double>(wall_ns))});
  }
  return out;
}

double busiest(const std::vector<DeviceBusy::Share>& shares) {
  if (shares.empty()) return 1;
  return std::max_element(shares.begin(), shares.end(), [](const auto& a, const auto& b) { return a.busy < b.busy; })
      ->busy;
}

std::string describe(const std::vector<DeviceBusy::Share>& shares) {
  std::string s;
  for (const auto& sh : shares) s += fmt::format("{}{}:{:.3f}", s.empty() ? "" : " ", sh.device, sh.busy);
  return s;
}

std::string host_limit_warning(const std::vector<ThreadUse>& threads, const std::vector<DeviceBusy::Share>& devices) {
  if (threads.empty() || devices.empty()) return {};
  const auto demand = [](const ThreadUse& t) { return t.busy + t.waiting; };
  const auto thread = std::max_element(threads.begin(), threads.end(),
                                       [&](const auto& a, const auto& b) { return demand(a) < demand(b); });
  const auto device =
      std::max_element(devices.begin(), devices.end(), [](const auto& a, const auto& b) { return a.busy < b.busy; });
  if (demand(*thread) < kSaturated || device->busy >= kSaturated) return {};
  return fmt::format(
      "an issue thread was busy {:.0f}% of the replay and waited on the host {:.0f}% while {} was busy {:.0f}%: "
      "the IOPS and latencies measure this host (iotape), not the drive{}",
      100 * thread->busy, 100 * thread->waiting, device->device, 100 * device->busy,
      threads.size() == 1 ? " (--threads N with --timing afap spreads the issue over N rings)" : "");
}

}  // namespace iotape::replay

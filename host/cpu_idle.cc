#include "host/cpu_idle.h"

#include <string>

#include "host/block_device.h"

namespace fs = std::filesystem;

namespace iotape::host {

std::string describe_cpu_idle(const fs::path& sys) {
  const fs::path cpuidle = sys / "devices/system/cpu/cpuidle";
  const std::string driver = read_sysfs_attribute(cpuidle / "current_driver");
  if (driver.empty()) return "";
  std::string governor = read_sysfs_attribute(cpuidle / "current_governor");
  if (governor.empty()) governor = read_sysfs_attribute(cpuidle / "current_governor_ro");
  std::string out = "driver " + driver + ", governor " + (governor.empty() ? "none" : governor) + ", states ";
  std::string states;
  for (int i = 0;; ++i) {
    const fs::path state = sys / "devices/system/cpu/cpu0/cpuidle" / ("state" + std::to_string(i));
    const std::string name = read_sysfs_attribute(state / "name");
    if (name.empty()) break;
    states += (states.empty() ? "" : " + ") + name;
    if (read_sysfs_attribute(state / "disable") == "1") states += " (disabled)";
  }
  out += states.empty() ? "none" : states;
  const std::string poll = read_sysfs_attribute(sys / "module/haltpoll/parameters/guest_halt_poll_ns");
  if (!poll.empty()) out += ", guest_halt_poll_ns " + poll;
  return out;
}

}  // namespace iotape::host

#include "observer/devices.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "format/error.h"
#include "host/block_device.h"

namespace iotape::observer {
namespace fs = std::filesystem;
namespace {

BlockDevice from_sysfs(const std::string& name) {
  const fs::path dir = fs::path("/sys/block") / name;
  BlockDevice d;
  d.name = name;
  const std::string dev = host::read_sysfs_attribute(dir / "dev");
  if (std::sscanf(dev.c_str(), "%u:%u", &d.major, &d.minor) != 2)
    throw format::InputError("cannot read " + (dir / "dev").string());
  d.request_based = fs::exists(dir / "mq");
  if (d.request_based) {
    for (const auto& q : fs::directory_iterator(dir / "mq")) {
      ++d.hw_queues;
      d.tags = std::max<uint64_t>(d.tags, host::read_sysfs_number(q.path() / "nr_tags"));
    }
    d.tags = std::max<uint64_t>(d.tags, host::read_sysfs_number(dir / "queue" / "nr_requests"));
  }
  return d;
}

}  // namespace

v1::Device BlockDevice::describe() const {
  return host::describe_block_device(fs::path("/sys/block") / name, major, minor);
}

std::vector<BlockDevice> all_disks() {
  std::vector<BlockDevice> out;
  for (const auto& e : fs::directory_iterator("/sys/block")) {
    const std::string name = e.path().filename().string();
    if (host::read_sysfs_number(e.path() / "size") == 0) continue;  // unbound loop devices, empty drives
    out.push_back(from_sysfs(name));
  }
  std::sort(out.begin(), out.end(), [](const BlockDevice& a, const BlockDevice& b) { return a.name < b.name; });
  return out;
}

BlockDevice resolve_device(const std::string& spec) {
  unsigned maj = 0, min = 0;
  char tail = 0;
  if (std::sscanf(spec.c_str(), "%u:%u%c", &maj, &min, &tail) != 2) {
    struct stat st;
    if (::stat(spec.c_str(), &st) != 0) throw format::UsageError(spec + ": no such device");
    if (!S_ISBLK(st.st_mode)) throw format::UsageError(spec + ": not a block device");
    maj = ::major(st.st_rdev);
    min = ::minor(st.st_rdev);
  }
  const fs::path dir = host::block_device_dir(maj, min);
  if (dir.empty())
    throw format::UsageError(spec + ": no block device " + std::to_string(maj) + ":" + std::to_string(min));
  return from_sysfs(host::whole_disk_dir(dir).filename().string());
}

}  // namespace iotape::observer

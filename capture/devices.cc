#include "capture/devices.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace iotape::capture {
namespace fs = std::filesystem;
namespace {

std::string read_attr(const fs::path& p) {
  std::ifstream in(p);
  std::string s;
  std::getline(in, s);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n')) s.pop_back();
  return s;
}

uint64_t read_number(const fs::path& p) {
  const std::string s = read_attr(p);
  try {
    return s.empty() ? 0 : std::stoull(s);
  } catch (const std::exception&) {
    return 0;
  }
}

BlockDevice from_sysfs(const std::string& name) {
  const fs::path dir = fs::path("/sys/block") / name;
  BlockDevice d;
  d.name = name;
  const std::string dev = read_attr(dir / "dev");
  if (std::sscanf(dev.c_str(), "%u:%u", &d.major, &d.minor) != 2)
    throw std::runtime_error("cannot read " + (dir / "dev").string());
  d.request_based = fs::exists(dir / "mq");
  return d;
}

}  // namespace

v1::Device BlockDevice::describe() const {
  const fs::path dir = fs::path("/sys/block") / name;
  v1::Device d;
  d.set_major(major);
  d.set_minor(minor);
  d.set_name(name);
  d.set_model(read_attr(dir / "device" / "model"));
  std::string serial = read_attr(dir / "device" / "serial");
  if (serial.empty()) serial = read_attr(dir / "serial");  // virtio-blk
  d.set_serial(serial);
  d.set_size_bytes(read_number(dir / "size") * 512);  // sysfs size is always in 512-byte sectors
  d.set_logical_block_size(static_cast<uint32_t>(read_number(dir / "queue" / "logical_block_size")));
  d.set_physical_block_size(static_cast<uint32_t>(read_number(dir / "queue" / "physical_block_size")));
  d.set_rotational(read_number(dir / "queue" / "rotational") != 0);
  return d;
}

std::vector<BlockDevice> all_disks() {
  std::vector<BlockDevice> out;
  for (const auto& e : fs::directory_iterator("/sys/block")) {
    const std::string name = e.path().filename().string();
    if (read_number(e.path() / "size") == 0) continue;  // unbound loop devices, empty drives
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
    if (::stat(spec.c_str(), &st) != 0) throw std::runtime_error(spec + ": no such device");
    if (!S_ISBLK(st.st_mode)) throw std::runtime_error(spec + ": not a block device");
    maj = ::major(st.st_rdev);
    min = ::minor(st.st_rdev);
  }
  // /sys/dev/block/M:m links to .../block/DISK or .../block/DISK/PART.
  const fs::path link = "/sys/dev/block/" + std::to_string(maj) + ":" + std::to_string(min);
  std::error_code ec;
  fs::path target = fs::canonical(link, ec);
  if (ec) throw std::runtime_error(spec + ": no block device " + std::to_string(maj) + ":" + std::to_string(min));
  if (fs::exists(target / "partition")) target = target.parent_path();
  return from_sysfs(target.filename().string());
}

}  // namespace iotape::capture

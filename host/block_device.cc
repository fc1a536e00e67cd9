#include "host/block_device.h"

#include <fstream>

namespace iotape::host {
namespace fs = std::filesystem;

std::string read_sysfs_attribute(const fs::path& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n')) s.pop_back();
  return s;
}

uint64_t read_sysfs_number(const fs::path& path) {
  const std::string s = read_sysfs_attribute(path);
  try {
    return s.empty() ? 0 : std::stoull(s);
  } catch (const std::exception&) {
    return 0;
  }
}

fs::path block_device_dir(uint32_t major, uint32_t minor) {
  std::error_code ec;
  return fs::canonical("/sys/dev/block/" + std::to_string(major) + ":" + std::to_string(minor), ec);
}

fs::path whole_disk_dir(const fs::path& dir) { return fs::exists(dir / "partition") ? dir.parent_path() : dir; }

v1::Device describe_block_device(const fs::path& dir, uint32_t major, uint32_t minor) {
  const fs::path disk = whole_disk_dir(dir);
  v1::Device d;
  d.set_major(major);
  d.set_minor(minor);
  d.set_name(dir.filename().string());
  d.set_model(read_sysfs_attribute(disk / "device" / "model"));
  std::string serial = read_sysfs_attribute(disk / "device" / "serial");
  if (serial.empty()) serial = read_sysfs_attribute(disk / "serial");  // virtio-blk
  d.set_serial(serial);
  d.set_size_bytes(read_sysfs_number(dir / "size") * 512);  // sysfs size is always in 512-byte sectors
  d.set_logical_block_size(static_cast<uint32_t>(read_sysfs_number(disk / "queue" / "logical_block_size")));
  d.set_physical_block_size(static_cast<uint32_t>(read_sysfs_number(disk / "queue" / "physical_block_size")));
  d.set_rotational(read_sysfs_number(disk / "queue" / "rotational") != 0);
  return d;
}

}  // namespace iotape::host

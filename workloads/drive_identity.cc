#include "workloads/drive_identity.h"

#include <fcntl.h>
#include <linux/nvme_ioctl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "format/error.h"
#include "host/block_device.h"

namespace iotape::workloads {
namespace {

namespace fs = std::filesystem;

constexpr uint8_t kSmartLog = 0x02, kOcpSmartExtendedLog = 0xc0;

// A 512-byte log page, or nullopt when the drive does not give it.
std::optional<std::array<uint8_t, 512>> nvme_log(const std::string& path, uint8_t log_id) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::array<uint8_t, 512> page{};
  nvme_admin_cmd cmd{};
  cmd.opcode = 0x02;  // Get Log Page
  cmd.nsid = 0xffffffff;
  cmd.addr = reinterpret_cast<uint64_t>(page.data());
  cmd.data_len = page.size();
  cmd.cdw10 = ((page.size() / 4 - 1) << 16) | log_id;
  const int rc = ::ioctl(fd, NVME_IOCTL_ADMIN_CMD, &cmd);
  ::close(fd);
  if (rc != 0) return std::nullopt;
  return page;
}

// The low 64 bits of a 128-bit little-endian counter at `at`.
uint64_t le64(const std::array<uint8_t, 512>& page, size_t at) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | page[at + i];
  return v;
}

}  // namespace

analysis::ReviewDrive describe_drive(const replay::Target& t, const std::string& label) {
  analysis::ReviewDrive d;
  d.label = label.empty() ? t.name : label;
  d.path = t.path;
  d.name = t.name;
  d.block_device = t.block;
  d.size_bytes = t.size;
  d.logical_block_size = t.logical_block;
  d.physical_block_size = t.physical_block;
  d.rotational = t.rotational;
  if (!t.block) return d;
  const fs::path disk = host::whole_disk_dir(host::block_device_dir(t.dev_major, t.dev_minor));
  analysis::ReviewDrive::Block b;
  b.model = t.model;
  b.vendor = host::read_sysfs_attribute(disk / "device/vendor");
  b.serial = t.serial;
  b.scheduler = host::read_sysfs_attribute(disk / "queue/scheduler");
  if (fs::exists(disk / "loop"))
    b.loop = analysis::ReviewDrive::Loop{host::read_sysfs_attribute(disk / "loop/backing_file"),
                                         host::read_sysfs_attribute(disk / "loop/dio") == "1"};
  d.block = std::move(b);
  return d;
}

std::optional<uint64_t> completed_device_ios(const replay::Target& t) {
  if (!t.block) return std::nullopt;
  std::ifstream in(host::block_device_dir(t.dev_major, t.dev_minor) / "stat");
  std::vector<uint64_t> v{std::istream_iterator<uint64_t>(in), {}};
  if (v.size() < 11) return std::nullopt;
  uint64_t n = v[0] + v[4];
  if (v.size() >= 15) n += v[11];
  if (v.size() >= 17) n += v[15];
  return n;
}

WriteAmplificationSource write_amplification_source(const replay::Target& t) {
  WriteAmplificationSource w;
  w.path = t.path;
  if (!t.block) {
    w.reason = "a regular file: there is no drive to ask";
  } else if (t.name.rfind("loop", 0) == 0) {
    w.reason = "a loop device: its blocks are a file's, it has no SMART log";
  } else if (t.name.rfind("vd", 0) == 0) {
    w.reason = "a virtio disk: virtio-blk passes no SMART log to the guest";
  } else if (t.name.rfind("nvme", 0) != 0) {
    w.reason = "not an NVMe drive: iotape reads write amplification from NVMe logs only";
  } else if (!nvme_log(t.path, kSmartLog)) {
    w.reason = "the drive did not return its SMART / health log";
  } else if (!nvme_log(t.path, kOcpSmartExtendedLog)) {
    w.reason = "the drive has no OCP SMART extended log (C0h), so no media writes to set against host writes";
  } else {
    w.available = true;
  }
  return w;
}

std::pair<double, double> host_and_media_bytes_written(const WriteAmplificationSource& w) {
  const auto smart = nvme_log(w.path, kSmartLog);
  const auto ocp = nvme_log(w.path, kOcpSmartExtendedLog);
  if (!smart || !ocp) throw format::IoError(w.path + ": the NVMe logs read before the test are gone", EIO);
  return {static_cast<double>(le64(*smart, 48)) * 512000.0, static_cast<double>(le64(*ocp, 0))};
}

}  // namespace iotape::workloads

#include "replay/target.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "format/error.h"
#include "host/block_device.h"

namespace iotape::replay {
namespace fs = std::filesystem;

Target::Target(Target&& o) noexcept
    : path(std::move(o.path)), fd(o.fd), block(o.block), direct(o.direct), size(o.size),
      logical_block(o.logical_block), physical_block(o.physical_block), dev_major(o.dev_major), dev_minor(o.dev_minor),
      name(std::move(o.name)), model(std::move(o.model)), serial(std::move(o.serial)), rotational(o.rotational) {
  o.fd = -1;
}

Target::~Target() {
  if (fd >= 0) ::close(fd);
}

v1::Device Target::to_device() const {
  v1::Device d;
  d.set_major(dev_major);
  d.set_minor(dev_minor);
  d.set_name(name);
  d.set_model(model);
  d.set_serial(serial);
  d.set_size_bytes(size);
  d.set_logical_block_size(logical_block);
  d.set_physical_block_size(physical_block);
  d.set_rotational(rotational);
  return d;
}

namespace {

// Name, model, serial and rotational from sysfs directory `dir`. A replay
// target's description looks further than the trace header's device table:
// the MMC/SD name, the WWID, and a loop device's backing file.
void read_identity(Target& t, const fs::path& dir) {
  const v1::Device d = host::describe_block_device(dir, t.dev_major, t.dev_minor);
  t.name = d.name();
  t.model = d.model();
  t.serial = d.serial();
  t.rotational = d.rotational();
  const fs::path disk = host::whole_disk_dir(dir);
  if (t.model.empty()) t.model = host::read_sysfs_attribute(disk / "device/name");
  if (t.serial.empty()) t.serial = host::read_sysfs_attribute(disk / "device/wwid");
  if (t.model.empty() && t.name.rfind("loop", 0) == 0)
    t.model = "loop:" + host::read_sysfs_attribute(dir / "loop/backing_file");
}

std::string dev_text(dev_t d) { return fmt::format("{}:{}", ::major(d), ::minor(d)); }

}  // namespace

Target open_target(const std::string& path, bool writable, bool force) {
  Target t;
  t.path = path;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    // A target that is not there is a wrong argument, not a failed system call.
    if (errno == ENOENT || errno == ENOTDIR)
      throw format::UsageError(fmt::format("{}: no such target: {}", path, std::strerror(errno)));
    throw format::error_errno(path, "cannot stat target", errno);
  }
  t.block = S_ISBLK(st.st_mode);
  if (!t.block && !S_ISREG(st.st_mode))
    throw format::UsageError(path + ": target is neither a block device nor a regular file");
  int flags = (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC;
  if (t.block && writable && !force) flags |= O_EXCL;
  t.fd = ::open(path.c_str(), flags | O_DIRECT);
  // udev probes a device after a writer closes it, and a finished replay's
  // io_uring lets go of it only once the kernel tears the ring down: wait
  // that out before calling it busy. On 2 loaded cores (load 11), a replay
  // right after another one with --allow-write still found the device busy
  // after 1 s.
  for (int i = 0; t.fd < 0 && errno == EBUSY && (flags & O_EXCL) && i < 100; ++i) {
    ::usleep(50'000);
    t.fd = ::open(path.c_str(), flags | O_DIRECT);
  }
  t.direct = t.fd >= 0;
  if (t.fd < 0 && errno == EINVAL && !t.block) t.fd = ::open(path.c_str(), flags);
  if (t.fd < 0) {
    if (errno == EBUSY)
      throw format::DeviceRefused(path + ": device is busy (mounted or held); --force to replay anyway");
    throw format::error_errno(path, "cannot open target", errno);
  }
  // Every read would otherwise check, and on a file may write, the inode's
  // access time (file_accessed() in the kernel's read path): CPU per IO fio
  // also spends, and metadata a replay has no business changing. Only the
  // owner or root may ask; others keep it.
  if (const int fl = ::fcntl(t.fd, F_GETFL); fl >= 0) ::fcntl(t.fd, F_SETFL, fl | O_NOATIME);
  t.name = fs::path(path).filename().string();
  if (t.block) {
    t.dev_major = ::major(st.st_rdev);
    t.dev_minor = ::minor(st.st_rdev);
    uint64_t bytes = 0;
    int lbs = 512;
    unsigned pbs = 512;
    if (::ioctl(t.fd, BLKGETSIZE64, &bytes) != 0) throw format::error_errno(path, "BLKGETSIZE64", errno);
    ::ioctl(t.fd, BLKSSZGET, &lbs);
    ::ioctl(t.fd, BLKPBSZGET, &pbs);
    t.size = bytes;
    t.logical_block = static_cast<uint32_t>(lbs);
    t.physical_block = pbs;
    if (const fs::path dir = host::block_device_dir(t.dev_major, t.dev_minor); !dir.empty()) read_identity(t, dir);
  } else {
    t.dev_major = ::major(st.st_dev);
    t.dev_minor = ::minor(st.st_dev);
    t.size = static_cast<uint64_t>(st.st_size);
    t.logical_block = t.physical_block = 4096;  // safe O_DIRECT alignment on any filesystem
    t.model = "file";
  }
  if (t.size == 0) throw format::UsageError(path + ": target has size 0");
  return t;
}

std::vector<std::string> safety_problems(const Target& t) {
  std::vector<std::string> problems;
  if (!t.block) return problems;
  // The device itself and its partitions, as "MAJ:MIN" -> name.
  std::vector<std::pair<std::string, std::string>> devs = {{fmt::format("{}:{}", t.dev_major, t.dev_minor), t.name}};
  const fs::path dir = host::block_device_dir(t.dev_major, t.dev_minor);
  std::error_code ec;
  if (!dir.empty()) {
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (fs::exists(e.path() / "partition"))
        devs.emplace_back(host::read_sysfs_attribute(e.path() / "dev"), e.path().filename());
    for (const auto& [num, name] : devs) {
      const fs::path holders = (name == t.name ? dir : dir / name) / "holders";
      for (const auto& h : fs::directory_iterator(holders, ec))
        problems.push_back(fmt::format("{} is held by {}", name, h.path().filename().string()));
    }
  }
  std::ifstream mi("/proc/self/mountinfo");
  std::string line;
  while (std::getline(mi, line)) {
    std::istringstream f(line);
    std::string id, parent, majmin, root, mountpoint;
    f >> id >> parent >> majmin >> root >> mountpoint;
    for (const auto& [num, name] : devs)
      if (majmin == num) problems.push_back(fmt::format("{} is mounted on {}", name, mountpoint));
  }
  struct stat st;
  if (::stat("/", &st) == 0)
    for (const auto& [num, name] : devs)
      if (dev_text(st.st_dev) == num) problems.push_back(fmt::format("{} holds the root filesystem", name));
  std::ifstream swaps("/proc/swaps");
  std::getline(swaps, line);  // header
  while (std::getline(swaps, line)) {
    const std::string file = line.substr(0, line.find_first_of(" \t"));
    struct stat sw;
    if (::stat(file.c_str(), &sw) != 0) continue;
    const std::string num = S_ISBLK(sw.st_mode) ? dev_text(sw.st_rdev) : dev_text(sw.st_dev);
    for (const auto& [n, name] : devs)
      if (n == num) problems.push_back(fmt::format("{} is used as swap ({})", name, file));
  }
  return problems;
}

Target open_writable_target(const std::string& path, bool force) {
  Target t = open_target(path, true, force);
  const auto problems = safety_problems(t);
  if (!problems.empty() && !force)
    throw format::DeviceRefused(path + ": refusing to write: " + problems.front() + " (--force overrides)");
  return t;
}

void require_poll_queues(const std::vector<Target>& targets) {
  for (const Target& t : targets) {
    if (!t.direct) throw format::UsageError(t.path + ": --iopoll needs O_DIRECT, which its filesystem refuses");
    // A partition's queue is its disk's.
    const std::string dev = fmt::format("/sys/dev/block/{}:{}", t.dev_major, t.dev_minor);
    std::ifstream in(dev + "/queue/io_poll");
    if (!in) in.open(dev + "/../queue/io_poll");
    int polls = 0;
    if (!(in >> polls) || polls != 1)
      throw format::UsageError(fmt::format(
          "--iopoll: {} is on {}:{}, which has no poll queues ({}/queue/io_poll is not 1; an NVMe drive gets them "
          "from the nvme module's poll_queues parameter)",
          t.path, t.dev_major, t.dev_minor, dev));
  }
}

}  // namespace iotape::replay

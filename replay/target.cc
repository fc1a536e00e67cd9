#include "replay/target.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "traces/error.h"

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

std::string read_line(const fs::path& p) {
  std::ifstream in(p);
  std::string s;
  std::getline(in, s);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n')) s.pop_back();
  return s;
}

// sysfs directory of a block device: /sys/dev/block/MAJ:MIN resolved.
fs::path sysfs_dir(uint32_t maj, uint32_t min) {
  std::error_code ec;
  return fs::canonical(fmt::format("/sys/dev/block/{}:{}", maj, min), ec);
}

void read_identity(Target& t) {
  const fs::path dir = sysfs_dir(t.dev_major, t.dev_minor);
  if (dir.empty()) return;
  // A partition's queue and device attributes live on its whole disk.
  const fs::path disk = fs::exists(dir / "partition") ? dir.parent_path() : dir;
  for (const char* f : {"device/model", "device/name"})
    if (t.model.empty()) t.model = read_line(disk / f);
  for (const char* f : {"device/serial", "serial", "device/wwid"})
    if (t.serial.empty()) t.serial = read_line(disk / f);
  if (t.model.empty() && t.name.rfind("loop", 0) == 0) t.model = "loop:" + read_line(dir / "loop/backing_file");
  t.rotational = read_line(disk / "queue/rotational") == "1";
}

std::string dev_text(dev_t d) { return fmt::format("{}:{}", ::major(d), ::minor(d)); }

}  // namespace

Target open_target(const std::string& path, bool writable, bool force) {
  Target t;
  t.path = path;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) throw error_errno(path, "cannot stat target", errno);
  t.block = S_ISBLK(st.st_mode);
  if (!t.block && !S_ISREG(st.st_mode)) throw TraceError(path + ": target is neither a block device nor a regular file");
  int flags = (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC;
  if (t.block && writable && !force) flags |= O_EXCL;
  t.fd = ::open(path.c_str(), flags | O_DIRECT);
  // udev probes a device after a writer closes it, holding it for a moment:
  // wait that out before calling it busy.
  for (int i = 0; t.fd < 0 && errno == EBUSY && (flags & O_EXCL) && i < 20; ++i) {
    ::usleep(50'000);
    t.fd = ::open(path.c_str(), flags | O_DIRECT);
  }
  t.direct = t.fd >= 0;
  if (t.fd < 0 && errno == EINVAL && !t.block) t.fd = ::open(path.c_str(), flags);
  if (t.fd < 0) {
    if (errno == EBUSY) throw TraceError(path + ": device is busy (mounted or held); --force to replay anyway");
    throw error_errno(path, "cannot open target", errno);
  }
  t.name = fs::path(path).filename().string();
  if (t.block) {
    t.dev_major = ::major(st.st_rdev);
    t.dev_minor = ::minor(st.st_rdev);
    uint64_t bytes = 0;
    int lbs = 512;
    unsigned pbs = 512;
    if (::ioctl(t.fd, BLKGETSIZE64, &bytes) != 0) throw error_errno(path, "BLKGETSIZE64", errno);
    ::ioctl(t.fd, BLKSSZGET, &lbs);
    ::ioctl(t.fd, BLKPBSZGET, &pbs);
    t.size = bytes;
    t.logical_block = static_cast<uint32_t>(lbs);
    t.physical_block = pbs;
    const fs::path dir = sysfs_dir(t.dev_major, t.dev_minor);
    if (!dir.empty()) t.name = dir.filename().string();
    read_identity(t);
  } else {
    t.dev_major = ::major(st.st_dev);
    t.dev_minor = ::minor(st.st_dev);
    t.size = static_cast<uint64_t>(st.st_size);
    t.logical_block = t.physical_block = 4096;  // safe O_DIRECT alignment on any filesystem
    t.model = "file";
  }
  if (t.size == 0) throw TraceError(path + ": target has size 0");
  return t;
}

std::vector<std::string> safety_problems(const Target& t) {
  std::vector<std::string> problems;
  if (!t.block) return problems;
  // The device itself and its partitions, as "MAJ:MIN" -> name.
  std::vector<std::pair<std::string, std::string>> devs = {{fmt::format("{}:{}", t.dev_major, t.dev_minor), t.name}};
  const fs::path dir = sysfs_dir(t.dev_major, t.dev_minor);
  std::error_code ec;
  if (!dir.empty()) {
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (fs::exists(e.path() / "partition")) devs.emplace_back(read_line(e.path() / "dev"), e.path().filename());
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

}  // namespace iotape::replay

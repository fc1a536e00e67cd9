#include "workloads/file_level.h"

#include <fcntl.h>
#include <linux/loop.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <utility>
#include <thread>

#include "format/error.h"
#include "host/clocks.h"
#include "replay/engine.h"
#include "workloads/rng.h"

extern char** environ;

namespace iotape::workloads {
namespace {

namespace fs = std::filesystem;
using nlohmann::ordered_json;
constexpr uint64_t kMiB = 1 << 20;

// Runs a program (no shell), its output into `log`; throws IoError naming it
// and the log when it fails.
void run_program(const std::vector<std::string>& argv, const std::string& log) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw format::IoError(argv[0] + ": cannot run", rc);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw format::IoError(
        fmt::format("{} failed (exit status {}); its output is in {}", argv[0], WEXITSTATUS(status), log), EIO);
}

class Fd {
 public:
  Fd(const std::string& path, int flags, mode_t mode = 0644) : fd_(::open(path.c_str(), flags | O_CLOEXEC, mode)) {
    if (fd_ < 0) throw format::error_errno(path, "cannot open", errno);
  }
  ~Fd() { ::close(fd_); }
  int get() const { return fd_; }

 private:
  int fd_;
};

// The two partitions: loop devices over the halves of the target (offset
// views, as `losetup --offset --sizelimit` makes them). No partition table
// is written, so this needs no partition support in the kernel (this one's
// may have neither MSDOS/GPT parsers nor device-mapper). Each detaches
// itself once the last user is gone (autoclear): after the unmount.
// The returned descriptor keeps the device until it is mounted.
std::pair<std::string, std::unique_ptr<Fd>> partition_view(const replay::Target& t, int fd, uint64_t offset,
                                                           uint64_t size) {
  Fd control("/dev/loop-control", O_RDWR);
  const int n = ::ioctl(control.get(), LOOP_CTL_GET_FREE);
  if (n < 0) throw format::error_errno("/dev/loop-control", "no free loop device", errno);
  const std::string dev = "/dev/loop" + std::to_string(n);
  auto loop = std::make_unique<Fd>(dev, O_RDWR);
  loop_config cfg{};
  cfg.fd = static_cast<uint32_t>(fd);
  cfg.block_size = t.logical_block;
  cfg.info.lo_offset = offset;
  cfg.info.lo_sizelimit = size;
  cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR | LO_FLAGS_DIRECT_IO;
  if (::ioctl(loop->get(), LOOP_CONFIGURE, &cfg) != 0)
    throw format::error_errno(dev, "LOOP_CONFIGURE over " + t.path, errno);
  return {dev, std::move(loop)};
}

// Bytes discarded on a block device so far, per /sys/block/NAME/stat.
uint64_t discarded_bytes(const std::string& dev) {
  std::ifstream in("/sys/block/" + fs::path(dev).filename().string() + "/stat");
  std::vector<uint64_t> v{std::istream_iterator<uint64_t>(in), {}};
  return v.size() >= 15 ? v[13] * 512 : 0;
}

// The two file systems, mounted while it lives.
class Mounts {
 public:
  // The mkfs of both is recorded into `mkfs_trace` when `record` is set.
  Mounts(const replay::Target& t, const std::string& dir, const FileLevelPass& pass, const StartRecording& record,
         const std::string& mkfs_trace) {
    const uint64_t half = t.size / 2 / kMiB * kMiB;
    if (half < 32 * kMiB) throw format::UsageError(t.path + ": too small for two 32 MiB partitions");
    Fd disk(t.path, O_RDWR | O_DIRECT);
    std::vector<std::unique_ptr<Fd>> holds;
    for (int n = 1; n <= 2; ++n) {
      auto [dev, hold] = partition_view(t, disk.get(), (n - 1) * half, half);
      devices_.push_back(dev);
      holds.push_back(std::move(hold));
    }
    {
      auto recording = record ? record(t.path, mkfs_trace) : nullptr;
      for (const auto& dev : devices_) {
        const uint64_t before = discarded_bytes(dev);
        // Inode tables and journal written now, not in the background during
        // the steps; mke2fs discards the device first unless told not to.
        run_program({"mkfs.ext4", "-q", "-F", "-E",
                     std::string("lazy_itable_init=0,lazy_journal_init=0") + (pass.discard ? "" : ",nodiscard"), dev},
                    dir + "/mkfs-" + pass.name + ".log");
        mkfs_discarded_ += discarded_bytes(dev) - before;
      }
    }
    for (int n = 1; n <= 2; ++n) {
      const std::string mnt = dir + "/mnt" + std::to_string(n);
      fs::create_directories(mnt);
      const std::string& dev = devices_[n - 1];
      if (::mount(dev.c_str(), mnt.c_str(), "ext4", 0, "") != 0) throw format::error_errno(dev, "cannot mount", errno);
      mounted_.push_back(mnt);
    }
  }
  ~Mounts() {
    for (const auto& m : mounted_) {
      ::umount2(m.c_str(), 0);
      std::error_code ec;
      fs::remove(m, ec);
    }
  }
  const std::string& at(int n) const { return mounted_.at(n - 1); }
  const std::vector<std::string>& devices() const { return devices_; }
  uint64_t mkfs_discarded() const { return mkfs_discarded_; }

 private:
  std::vector<std::string> mounted_, devices_;
  uint64_t mkfs_discarded_ = 0;
};

struct File {
  std::string path;  // relative to the set's root
  uint64_t bytes;
};

// Writes `bytes` of incompressible data; fsync before close.
void write_file(const std::string& path, uint64_t bytes, const std::vector<char>& data, uint64_t seed) {
  Fd fd(path, O_WRONLY | O_CREAT | O_TRUNC);
  uint64_t at = seed % (data.size() / 2);
  for (uint64_t done = 0; done < bytes;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(bytes - done, kMiB));
    if (::write(fd.get(), data.data() + at, n) != static_cast<ssize_t>(n))
      throw format::error_errno(path, "cannot write", errno);
    done += n;
    at = (at + 4096) % (data.size() / 2);
  }
  if (::fsync(fd.get()) != 0) throw format::error_errno(path, "fsync", errno);
}

uint64_t read_file(const std::string& path, std::vector<char>& buf) {
  Fd fd(path, O_RDONLY);
  uint64_t total = 0;
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf.data(), buf.size());
    if (n < 0) throw format::error_errno(path, "cannot read", errno);
    if (n == 0) return total;
    total += static_cast<uint64_t>(n);
  }
}

void copy_file(const std::string& from, const std::string& to, std::vector<char>& buf) {
  Fd in(from, O_RDONLY);
  Fd out(to, O_WRONLY | O_CREAT | O_TRUNC);
  for (;;) {
    const ssize_t n = ::read(in.get(), buf.data(), buf.size());
    if (n < 0) throw format::error_errno(from, "cannot read", errno);
    if (n == 0) break;
    if (::write(out.get(), buf.data(), static_cast<size_t>(n)) != n)
      throw format::error_errno(to, "cannot write", errno);
  }
  if (::fsync(out.get()) != 0) throw format::error_errno(to, "fsync", errno);
}

// Out of the page cache: the next read of these files goes to the drive.
void drop_cached(const std::string& root, const std::vector<File>& files) {
  for (const auto& f : files) {
    Fd fd(root + "/" + f.path, O_RDONLY);
    ::fdatasync(fd.get());
    ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED);
  }
}

void make_dirs(const std::string& root, const std::vector<File>& files) {
  for (const auto& f : files) fs::create_directories(fs::path(root + "/" + f.path).parent_path());
}

std::vector<File> file_set(const std::string& name, const FileSets& s, uint64_t seed) {
  std::vector<File> out;
  if (name == "iso") out.push_back({"image.iso", s.iso_bytes});
  if (name == "mp3")
    for (uint32_t i = 0; i < s.mp3_files; ++i) out.push_back({fmt::format("album{:02}/track{:03}.mp3", i / 12, i), s.mp3_bytes});
  if (name == "program") {
    Rng rng(seed);
    for (uint32_t i = 0; i < s.program_files; ++i)
      out.push_back({fmt::format("lib{:02}/mod{}/file{:05}.dat", i % 40, (i / 40) % 5, i), (1 + rng.below(64)) * 512});
  }
  return out;
}

}  // namespace

nlohmann::ordered_json run_file_level(const replay::Target& target, const FileSets& sets, const std::string& dir,
                                      const FileLevelPass& pass, const StartRecording& record,
                                      const std::atomic<bool>& stop) {
  if (!target.block) throw format::UsageError(target.path + ": file-level tests need a block device to partition");
  const std::string mkfs_trace = "file-" + pass.name + "-mkfs.iot";
  Mounts mounts(target, dir, pass, record, dir + "/" + mkfs_trace);
  std::vector<char> data(8 * kMiB), buf(kMiB);
  Rng rng(1);
  for (size_t i = 0; i < data.size(); i += 8) {
    const uint64_t v = rng.next();
    std::memcpy(data.data() + i, &v, 8);
  }
  ordered_json steps = ordered_json::array();
  auto step = [&](const std::string& set, const std::string& what, const std::vector<File>& files,
                  const std::function<void()>& body) {
    if (stop) return;
    uint64_t bytes = 0;
    for (const auto& f : files) bytes += f.bytes;
    const std::string name = set + " " + what;
    const std::string trace = fmt::format("file-{}-{}-{}.iot", pass.name, set, steps.size());
    int64_t t0 = 0, t1 = 0;
    {
      auto recording = record ? record(target.path, dir + "/" + trace) : nullptr;
      t0 = host::monotonic_ns();
      body();
      t1 = host::monotonic_ns();
    }
    const double MBps = t1 > t0 ? bytes * 1e3 / static_cast<double>(t1 - t0) : 0.0;
    steps.push_back({{"name", name}, {"files", files.size()}, {"bytes", bytes}, {"duration_s", (t1 - t0) / 1e9},
                     {"MBps", MBps}, {"trace", record ? trace : ""}});
  };
  const std::string p1 = mounts.at(1), p2 = mounts.at(2);
  for (const std::string set : {"iso", "mp3", "program"}) {
    const auto files = file_set(set, sets, 7);
    const std::string src = p1 + "/" + set, near = p1 + "/" + set + "-copy", far = p2 + "/" + set;
    make_dirs(src, files);
    make_dirs(near, files);
    make_dirs(far, files);
    step(set, "create", files, [&] {
      for (size_t i = 0; i < files.size(); ++i) write_file(src + "/" + files[i].path, files[i].bytes, data, i * 7919);
    });
    drop_cached(src, files);
    step(set, "read", files, [&] {
      for (const auto& f : files) read_file(src + "/" + f.path, buf);
    });
    drop_cached(src, files);
    step(set, "copy within a partition", files, [&] {
      for (const auto& f : files) copy_file(src + "/" + f.path, near + "/" + f.path, buf);
    });
    drop_cached(src, files);
    step(set, "copy to the other partition", files, [&] {
      for (const auto& f : files) copy_file(src + "/" + f.path, far + "/" + f.path, buf);
    });
  }
  return {{"steps", steps},
          {"partitions", mounts.devices()},
          {"mkfs", {{"discard", pass.discard}, {"discarded_bytes", mounts.mkfs_discarded()},
                    {"trace", record ? mkfs_trace : ""}}}};
}

}  // namespace iotape::workloads

// Shared pieces for iotape's tests: real sample traces, scratch directories,
// loop devices and external commands. Everything made here is removed by the
// object that made it, by its own id.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace iotape::test {

// Path of a file in ../shared/traces/real, or nullopt when the folder is
// absent. Absent samples skip the test with a loud WARN, except under CI
// (environment variable CI set), where they fail it.
std::optional<std::string> real_trace(const std::string& name);

// True when running as root with the given capability present; tests that
// need it call require_root() which skips loudly outside CI and fails in CI.
bool require_root(const std::string& why);

// True when `present`; otherwise the test skips loudly naming `capability`,
// except under CI, where CI's machines have every capability the tests use
// (zram, swap on loop devices, fio, chromium, BPF, tracefs) and it fails.
bool require(bool present, const std::string& capability);

// A fresh directory under $TMPDIR (or /tmp), removed with its contents.
class TempDir {
 public:
  explicit TempDir(const std::string& base = "");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A loop device over a sparse file of `bytes` in `dir` (by default /dev/shm,
// tmpfs), detached and deleted on destruction. Throws if losetup fails.
// The queue settings tests change (nomerges, max_sectors_kb) outlive a
// detach, on the next device to take the same number: destruction puts back
// those it found.
class LoopDevice {
 public:
  explicit LoopDevice(uint64_t bytes, bool direct_io = false, const std::string& dir = "/dev/shm");
  ~LoopDevice();
  LoopDevice(const LoopDevice&) = delete;
  LoopDevice& operator=(const LoopDevice&) = delete;
  const std::string& path() const { return dev_; }       // /dev/loopN
  std::string name() const;                              // loopN
  const std::string& backing_file() const { return file_; }
  uint32_t dev_major() const;
  uint32_t dev_minor() const;

 private:
  std::string file_;
  std::string dev_;
  std::string nomerges_, max_sectors_kb_;
};

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};
// Runs `command` with /bin/sh and captures its output.
CommandResult run(const std::string& command);

// Fields of /sys/block/NAME/stat (see Documentation/block/stat.rst).
struct BlockStat {
  uint64_t read_ios, read_merges, read_sectors, read_ticks;
  uint64_t write_ios, write_merges, write_sectors, write_ticks;
  uint64_t in_flight, io_ticks, time_in_queue;
  uint64_t discard_ios, discard_merges, discard_sectors, discard_ticks;
  uint64_t flush_ios, flush_ticks;
};
BlockStat block_stat(const std::string& name);

// Path of the built iotape binary (set by CMake).
std::string iotape_binary();

// A whole file's bytes ("" if it cannot be read), and a file made of `bytes`.
std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& bytes);

// Checks (Catch2 assertions) that headless chromium renders `html` into
// `png` at `size` ("1200,2000") and that it is not blank: a page of charts
// compresses to several times the bytes of a blank page rendered the same
// way (into PNG.blank.png).
void check_renders(const std::string& html, const std::string& png, const std::string& size);

// The ftrace ring buffer's size per CPU in KiB as a value to write back to
// buffer_size_kb: it reads "1408", or "7 (expanded: 1408)" before first use.
std::string tracefs_buffer_kb();

}  // namespace iotape::test

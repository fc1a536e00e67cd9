#include "tests/test_support.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace iotape::test {

std::optional<std::string> real_trace(const std::string& name) {
  const std::string path = std::string(IOTAPE_REAL_TRACES) + "/" + name;
  if (std::filesystem::exists(path)) return path;
  if (std::getenv("CI")) FAIL("real trace sample missing under CI: " << path);
  WARN("SKIPPED: real trace sample not found: " << path);
  return std::nullopt;
}

bool require_root(const std::string& why) {
  if (::geteuid() == 0) return true;
  if (std::getenv("CI")) FAIL("this test needs root (" << why << ") and CI runs as root");
  WARN("SKIPPED: not root, cannot " << why);
  return false;
}

bool require(bool present, const std::string& capability) {
  if (present) return true;
  if (std::getenv("CI")) FAIL("missing under CI: " << capability);
  WARN("SKIPPED: missing here: " << capability);
  return false;
}

TempDir::TempDir(const std::string& base) {
  std::string root = base;
  if (root.empty()) {
    const char* t = std::getenv("TMPDIR");
    root = t ? t : "/tmp";
  }
  std::string tmpl = root + "/iotape-test-XXXXXX";
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp " + tmpl + " failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

CommandResult run(const std::string& command) {
  CommandResult r;
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  int st = ::pclose(p);
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

LoopDevice::LoopDevice(uint64_t bytes, bool direct_io, const std::string& dir) {
  std::string tmpl = dir + "/iotape-loop-XXXXXX";
  int fd = ::mkstemp(tmpl.data());
  if (fd < 0) throw std::runtime_error("mkstemp in " + dir + " failed");
  file_ = tmpl;
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    ::close(fd);
    throw std::runtime_error("ftruncate " + file_);
  }
  ::close(fd);
  auto r = run("losetup -f --show " + std::string(direct_io ? "--direct-io=on " : "") + file_);
  if (r.exit_code != 0) {
    ::unlink(file_.c_str());
    throw std::runtime_error("losetup failed: " + r.output);
  }
  dev_ = r.output.substr(0, r.output.find('\n'));
  nomerges_ = read_file("/sys/block/" + name() + "/queue/nomerges");
  max_sectors_kb_ = read_file("/sys/block/" + name() + "/queue/max_sectors_kb");
}

LoopDevice::~LoopDevice() {
  write_file("/sys/block/" + name() + "/queue/nomerges", nomerges_);
  write_file("/sys/block/" + name() + "/queue/max_sectors_kb", max_sectors_kb_);
  run("losetup -d " + dev_);
  ::unlink(file_.c_str());
}

std::string LoopDevice::name() const { return dev_.substr(dev_.rfind('/') + 1); }

uint32_t LoopDevice::dev_major() const {
  struct stat st;
  return ::stat(dev_.c_str(), &st) == 0 ? ::major(st.st_rdev) : 0;
}

uint32_t LoopDevice::dev_minor() const {
  struct stat st;
  return ::stat(dev_.c_str(), &st) == 0 ? ::minor(st.st_rdev) : 0;
}

BlockStat block_stat(const std::string& name) {
  std::ifstream in("/sys/block/" + name + "/stat");
  BlockStat s{};
  in >> s.read_ios >> s.read_merges >> s.read_sectors >> s.read_ticks >> s.write_ios >> s.write_merges >>
      s.write_sectors >> s.write_ticks >> s.in_flight >> s.io_ticks >> s.time_in_queue;
  if (!in) throw std::runtime_error("cannot read /sys/block/" + name + "/stat");
  // Discard (4.18) and flush (5.5) fields: 0 where the kernel has none.
  in >> s.discard_ios >> s.discard_merges >> s.discard_sectors >> s.discard_ticks >> s.flush_ios >> s.flush_ticks;
  return s;
}

std::string iotape_binary() { return IOTAPE_BINARY; }

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

void check_renders(const std::string& html, const std::string& png, const std::string& size) {
  const std::string chromium = "timeout 120 chromium --headless --no-sandbox --disable-gpu --window-size=" + size;
  const auto shot = run(chromium + " --screenshot=" + png + " file://" + html);
  INFO(shot.output);
  const std::string bytes = read_file(png);
  REQUIRE(!bytes.empty());
  CHECK(bytes.compare(1, 3, "PNG") == 0);
  const std::string blank = png + ".blank.html", blank_png = png + ".blank.png";
  write_file(blank, "<!DOCTYPE html><html><body></body></html>");
  run(chromium + " --screenshot=" + blank_png + " file://" + blank);
  const size_t blank_bytes = read_file(blank_png).size();
  INFO("page " << bytes.size() << " B, blank " << blank_bytes << " B");
  REQUIRE(blank_bytes > 0);
  CHECK(bytes.size() > 5 * blank_bytes);
}

std::string tracefs_buffer_kb() {
  const std::string size = read_file("/sys/kernel/tracing/buffer_size_kb");
  const size_t expanded = size.find("expanded: ");
  return std::to_string(std::stoul(expanded == std::string::npos ? size : size.substr(expanded + 10)));
}

}  // namespace iotape::test

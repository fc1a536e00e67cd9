#include "capture/self_traffic.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <exception>
#include <filesystem>
#include <numeric>

#include <fmt/format.h>

namespace iotape::capture {
namespace {

constexpr size_t kSyncsKept = 256;  // IOs reach the recorder within a few flushes of their sync

std::vector<uint32_t> own_threads() {
  std::vector<uint32_t> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    try {
      out.push_back(static_cast<uint32_t>(std::stoul(e.path().filename().string())));
    } catch (const std::exception&) {
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The recorded disk holding the directory of `path`, if any.
std::optional<uint32_t> disk_of(const std::vector<observer::BlockDevice>& devices, const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  struct stat st;
  if (::stat(parent.empty() ? "." : parent.c_str(), &st) != 0) return std::nullopt;
  try {
    const observer::BlockDevice disk =
        observer::resolve_device(fmt::format("{}:{}", ::major(st.st_dev), ::minor(st.st_dev)));
    for (size_t i = 0; i < devices.size(); ++i)
      if (devices[i].major == disk.major && devices[i].minor == disk.minor) return static_cast<uint32_t>(i);
  } catch (const std::exception&) {
    // Not on a block device (tmpfs, NFS, ...).
  }
  return std::nullopt;
}

std::string human_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double b = static_cast<double>(bytes);
  int i = 0;
  while (b >= 1024 && i < 4) b /= 1024, ++i;
  return fmt::format("{:.1f} {}", b, units[i]);
}

}  // namespace

SelfTraffic::SelfTraffic(const std::vector<observer::BlockDevice>& devices, const std::string& trace_path)
    : devices_(devices),
      tgid_(::getpid()),
      threads_(own_threads()),
      trace_disk_(disk_of(devices, trace_path)),
      ios_(devices.size()),
      bytes_(devices.size()) {}

void SelfTraffic::add_sync(int64_t begin_ns, int64_t end_ns) {
  syncs_.emplace_back(begin_ns, end_ns);
  if (syncs_.size() > kSyncsKept) syncs_.pop_front();
}

bool SelfTraffic::own_thread(uint32_t pid) const {
  return pid != 0 && (pid == static_cast<uint32_t>(tgid_) || std::binary_search(threads_.begin(), threads_.end(), pid));
}

bool SelfTraffic::during_sync(int64_t t) const {
  for (auto it = syncs_.rbegin(); it != syncs_.rend(); ++it)
    if (t >= it->first && t <= it->second) return true;
  return false;
}

bool SelfTraffic::caused(const format::Io& io) {
  bool self = own_thread(io.pid);
  if (!self && trace_disk_ && io.device == *trace_disk_) {
    const bool journal = io.comm.substr(0, 5) == "jbd2/";
    const bool flush_machinery = io.pid == 0 && io.comm.empty() && io.op == format::Op::kFlush;
    if (journal || flush_machinery) self = during_sync(io.has_queue() ? io.queue_ns : io.issue_ns);
  }
  if (!self) return false;
  if (io.device < ios_.size()) {
    ++ios_[io.device];
    bytes_[io.device] += io.length;
  }
  return true;
}

uint64_t SelfTraffic::ios() const { return std::accumulate(ios_.begin(), ios_.end(), uint64_t{0}); }
uint64_t SelfTraffic::bytes() const { return std::accumulate(bytes_.begin(), bytes_.end(), uint64_t{0}); }

void SelfTraffic::write_metadata(const std::function<void(const std::string&, const std::string&)>& set) const {
  set("capture.self_ios", std::to_string(ios()));
  set("capture.self_bytes", std::to_string(bytes()));
  for (size_t i = 0; i < devices_.size(); ++i) {
    set("capture.self_ios." + devices_[i].name, std::to_string(ios_[i]));
    set("capture.self_bytes." + devices_[i].name, std::to_string(bytes_[i]));
  }
}

std::string SelfTraffic::describe() const {
  std::string out;
  for (size_t i = 0; i < devices_.size(); ++i)
    if (ios_[i])
      out += fmt::format("{}{} {} IOs {}", out.empty() ? "" : ", ", devices_[i].name, ios_[i], human_bytes(bytes_[i]));
  return out;
}

}  // namespace iotape::capture

#include "capture/trace_output.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include <fmt/format.h>

#include "format/error.h"

namespace iotape::capture {
namespace {

int64_t boottime_ns() {
  timespec ts;
  ::clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Makes the directory entry of the file `path` durable: fdatasync on the file
// alone may leave a new file nameless after a power loss.
void sync_directory(const std::string& path, const format::WriterOptions& w) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  const std::string dir = parent.empty() ? std::string(".") : parent.string();
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw format::error_errno(dir, "cannot open the trace's directory", errno);
  const int64_t begin = boottime_ns();
  const int err = ::fsync(fd) == 0 ? 0 : errno;
  if (w.on_sync) w.on_sync(begin, boottime_ns());
  ::close(fd);
  if (err) throw format::error_errno(dir, "fsync", err);
}

}  // namespace

std::string anonymize_comm(std::string_view comm) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : comm) h = (h ^ c) * 1099511628211ull;
  return fmt::format("c-{:08x}", static_cast<uint32_t>(h ^ (h >> 32)));
}

TraceOutput::TraceOutput(OutputOptions options, v1::TraceHeader header)
    : opt_(std::move(options)), header_(std::move(header)) {
  open_part();
}

TraceOutput::~TraceOutput() = default;  // the writer closes itself quietly

std::string TraceOutput::part_path(uint32_t part) const {
  if (!opt_.rotate_bytes && !opt_.rotate_ns) return opt_.path;
  std::string stem = opt_.path;
  if (stem.size() > 4 && stem.compare(stem.size() - 4, 4, ".iot") == 0) stem.resize(stem.size() - 4);
  return fmt::format("{}.{:04d}.iot", stem, part);
}

void TraceOutput::open_part() {
  const uint32_t part = next_part_++;
  header_.set_part(part);
  if (removed_parts_) {
    auto& m = *header_.mutable_metadata();
    m["capture.removed_parts"] = std::to_string(removed_parts_);
    m["capture.removed_bytes"] = std::to_string(removed_bytes_);
  }
  paths_.push_back(part_path(part));
  writer_ = std::make_unique<format::TraceWriter>(paths_.back(), header_, opt_.writer);
  part_start_ns_ = 0;
  if (opt_.writer.durability == format::Durability::kFdatasync) sync_directory(paths_.back(), opt_.writer);
}

void TraceOutput::remove_old_parts() {
  const int64_t now = boottime_ns();
  uint64_t total = 0;
  for (const auto& p : closed_) total += p.bytes;
  while (!closed_.empty()) {
    std::string why;
    if (opt_.keep_ns && now - closed_.front().closed_ns > opt_.keep_ns)
      why = fmt::format("ended more than {:.0f} s ago (--keep)", opt_.keep_ns / 1e9);
    else if (opt_.max_total_bytes && total > opt_.max_total_bytes)
      why = fmt::format("the closed parts hold {} bytes, more than {} (--max-total)", total, opt_.max_total_bytes);
    else
      break;
    const std::string path = paths_.front();
    const uint64_t bytes = closed_.front().bytes;
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) throw format::error_errno(path, "cannot remove an old part", errno);
    paths_.erase(paths_.begin());
    closed_.pop_front();
    total -= bytes;
    ++removed_parts_;
    removed_bytes_ += bytes;
    if (opt_.on_remove) opt_.on_remove(path, bytes, why);
  }
}

void TraceOutput::append(const format::Io& io) {
  if (!opt_.anonymize || io.comm.empty()) {
    writer_->append(io);
  } else {
    auto it = anonymized_.find(std::string(io.comm));
    if (it == anonymized_.end()) it = anonymized_.emplace(io.comm, anonymize_comm(io.comm)).first;
    format::Io copy = io;
    copy.comm = it->second;
    writer_->append(copy);
  }
  if (opt_.rotate_bytes && writer_->stats().file_bytes >= opt_.rotate_bytes) rotate_if_due(io.issue_ns);
}

void TraceOutput::add_dropped(uint64_t events) { writer_->add_dropped(events); }

void TraceOutput::flush() { writer_->flush(); }

void TraceOutput::tick(int64_t now_ns) {
  if (!part_start_ns_) part_start_ns_ = now_ns;
  rotate_if_due(now_ns);
}

void TraceOutput::rotate_if_due(int64_t now_ns) {
  const bool by_size = opt_.rotate_bytes && writer_->stats().file_bytes >= opt_.rotate_bytes;
  const bool by_time = opt_.rotate_ns && part_start_ns_ && now_ns - part_start_ns_ >= opt_.rotate_ns;
  if (!by_size && !by_time) return;
  writer_->close();
  closed_ios_ += writer_->stats().ios;
  closed_bytes_ += writer_->stats().file_bytes;
  closed_late_ += writer_->stats().late_ios;
  closed_.push_back({writer_->stats().file_bytes, boottime_ns()});
  remove_old_parts();
  open_part();
  part_start_ns_ = now_ns;
}

void TraceOutput::close() {
  if (opt_.keep_ns || opt_.max_total_bytes) {
    writer_->set_metadata("capture.removed_parts", std::to_string(removed_parts_));
    writer_->set_metadata("capture.removed_bytes", std::to_string(removed_bytes_));
  }
  writer_->close();
}

void TraceOutput::set_metadata(const std::string& key, const std::string& value) {
  writer_->set_metadata(key, value);
}

uint64_t TraceOutput::ios() const { return closed_ios_ + writer_->stats().ios; }
uint64_t TraceOutput::file_bytes() const { return closed_bytes_ + writer_->stats().file_bytes; }
uint64_t TraceOutput::late_ios() const { return closed_late_ + writer_->stats().late_ios; }
uint64_t TraceOutput::part_bytes() const { return writer_->stats().file_bytes; }

}  // namespace iotape::capture

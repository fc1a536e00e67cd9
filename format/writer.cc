#include "format/writer.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <queue>
#include <vector>

#include "format/chunk_codec.h"
#include "format/error.h"
#include "format/frame.h"
#include "format/name_interner.h"
#include "format/version.h"

namespace iotape::format {
namespace {

int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Map entries (metadata) in a fixed order: the same trace gives the same bytes.
// Into *out, reusing its storage.
void serialize(const google::protobuf::MessageLite& m, std::string* out) {
  out->clear();
  google::protobuf::io::StringOutputStream stream(out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  m.SerializeToCodedStream(&coded);
}

// An IO held in the reorder window, numbered in arrival order so that IOs with
// equal issue times leave in the order they came.
struct HeldIo {
  Io io;
  uint64_t arrival;
};

struct LaterIssue {
  bool operator()(const HeldIo& a, const HeldIo& b) const {
    return a.io.issue_ns != b.io.issue_ns ? a.io.issue_ns > b.io.issue_ns : a.arrival > b.arrival;
  }
};

}  // namespace

class TraceWriter::Impl {
 public:
  Impl(std::string path, v1::TraceHeader header, WriterOptions options)
      : path_(std::move(path)), header_(std::move(header)), opt_(options) {
    if (opt_.chunk_ios == 0 || opt_.chunk_ios > kMaxChunkIos)
      throw TraceError(path_ + ": chunk size " + std::to_string(opt_.chunk_ios) + " out of range");
    int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (opt_.overwrite ? O_TRUNC : O_EXCL);
    fd_ = ::open(path_.c_str(), flags, opt_.file_mode);
    if (fd_ < 0) throw error_errno(path_, "cannot create trace", errno);
    header_.set_format_version(kFormatVersion);
    if (header_.creator().empty()) header_.set_creator("iotape");
    if (header_.creator_version().empty()) header_.set_creator_version(kVersion);
    buffer_.reserve(opt_.chunk_ios);
    last_flush_ns_ = steady_now_ns();
  }

  ~Impl() {
    if (fd_ >= 0) ::close(fd_);
  }

  uint32_t add_device(const v1::Device& d) {
    const uint32_t index = device_count();
    if (header_written_)
      *pending_devices_.Add() = d;
    else
      *header_.add_devices() = d;
    return index;
  }

  uint32_t device_count() const {
    return static_cast<uint32_t>(header_.devices_size() + added_devices_.size() + pending_devices_.size());
  }

  void set_metadata(const std::string& key, const std::string& value) {
    if (header_written_)
      (*index_.mutable_metadata())[key] = value;
    else
      (*header_.mutable_metadata())[key] = value;
  }

  void append(const Io& in) {
    check_usable();
    Io io = in;
    io.comm = names_.intern(io.comm);
    if (have_emitted_ && io.issue_ns < last_emitted_issue_) {
      // Its place is already written: keep it anyway, and say so.
      ++stats_.late_ios;
      ++pending_late_;
      emit(io);
      return;
    }
    if (opt_.reorder_window_ns <= 0) {
      emit(io);
      return;
    }
    newest_issue_ = window_.empty() ? io.issue_ns : std::max(newest_issue_, io.issue_ns);
    window_.push({io, arrivals_++});
    // newest >= oldest, so their unsigned difference is exact even beyond INT64_MAX.
    while (!window_.empty() &&
           (window_.size() > opt_.reorder_window_ios ||
            static_cast<uint64_t>(newest_issue_) - static_cast<uint64_t>(window_.top().io.issue_ns) >
                static_cast<uint64_t>(opt_.reorder_window_ns))) {
      emit(window_.top().io);
      window_.pop();
    }
  }

  void add_dropped(uint64_t events) {
    pending_dropped_ += events;
    stats_.dropped_events += events;
  }

  void release_before(int64_t t) {
    while (!window_.empty() && window_.top().io.issue_ns < t) {
      emit(window_.top().io);
      window_.pop();
    }
  }

  void flush(bool drain) {
    check_usable();
    if (drain) release_before(std::numeric_limits<int64_t>::max());
    if (!buffer_.empty() || pending_dropped_ || pending_late_ || !pending_devices_.empty())
      write_chunk();
    if (!header_written_) {
      write_header();
      // A flush makes what it wrote durable, the header of an empty trace too.
      if (opt_.durability == Durability::kFdatasync && sync_file() != 0) {
        failed_ = true;
        throw error_errno(path_, "fdatasync", errno);
      }
    }
    last_flush_ns_ = steady_now_ns();
  }

  void tick(int64_t now_issue_ns) {
    if (failed_ || closed_) return;
    if (now_issue_ns != kNoTime && opt_.reorder_window_ns > 0) {
      // Saturate: trace times near INT64_MIN must not wrap to the future.
      int64_t before;
      if (__builtin_sub_overflow(now_issue_ns, opt_.reorder_window_ns, &before)) before = INT64_MIN;
      release_before(before);
    }
    if (opt_.durability != Durability::kNone &&
        steady_now_ns() - last_flush_ns_ >= opt_.flush_interval_ns)
      flush(false);
  }

  void close() {
    if (closed_) return;
    if (!failed_) {
      flush(true);
      write_index();
      if (opt_.durability != Durability::kNone && sync_file() != 0)
        throw error_errno(path_, "fdatasync", errno);
    }
    closed_ = true;
    int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0 && !failed_) throw error_errno(path_, "close", errno);
  }

  void close_quietly() noexcept {
    try {
      close();
    } catch (...) {
      if (fd_ >= 0) ::close(fd_);
      fd_ = -1;
      closed_ = true;
    }
  }

  const WriterStats& stats() const { return stats_; }
  const std::string& path() const { return path_; }

 private:
  void check_usable() const {
    if (closed_) throw TraceError(path_ + ": trace already closed");
    if (failed_) throw TraceError(path_ + ": an earlier write failed; the file ends at its last good chunk");
  }

  void emit(const Io& io) {
    if (!buffer_.empty() && beyond_span(buffer_.front().issue_ns, io.issue_ns)) write_chunk();
    buffer_.push_back(io);
    last_emitted_issue_ = have_emitted_ ? std::max(last_emitted_issue_, io.issue_ns) : io.issue_ns;
    have_emitted_ = true;
    if (buffer_.size() >= opt_.chunk_ios) write_chunk();
  }

  // True when `t` is chunk_span_ns or more after `first` (a late IO, before it, never is).
  bool beyond_span(int64_t first, int64_t t) const {
    if (opt_.chunk_span_ns <= 0 || t <= first) return false;
    // t > first, so their unsigned difference is exact even beyond INT64_MAX.
    return static_cast<uint64_t>(t) - static_cast<uint64_t>(first) >= static_cast<uint64_t>(opt_.chunk_span_ns);
  }

  // fdatasync, timed for WriterOptions::on_sync; 0 or -1 with errno.
  int sync_file() {
    if (!opt_.on_sync) return ::fdatasync(fd_);
    timespec a, b;
    ::clock_gettime(CLOCK_BOOTTIME, &a);
    const int rc = ::fdatasync(fd_);
    const int err = errno;
    ::clock_gettime(CLOCK_BOOTTIME, &b);
    opt_.on_sync(a.tv_sec * 1'000'000'000LL + a.tv_nsec, b.tv_sec * 1'000'000'000LL + b.tv_nsec);
    errno = err;
    return rc;
  }

  void write_header() {
    serialize(header_, &raw_);
    write_frame(frame::Kind::kHeader, frame::Codec::kRaw, raw_, raw_.size());
    header_written_ = true;
  }

  void write_chunk() {
    if (!header_written_) write_header();
    chunk_.Clear();
    encode_chunk(buffer_, stats_.ios, &chunk_);
    if (!pending_devices_.empty()) {
      chunk_.set_devices_added_base(header_.devices_size() + static_cast<uint32_t>(added_devices_.size()));
      chunk_.mutable_devices_added()->Swap(&pending_devices_);
      for (const auto& d : chunk_.devices_added()) added_devices_.push_back(d);
    }
    chunk_.set_dropped_events(pending_dropped_);
    chunk_.set_late_ios(pending_late_);
    serialize(chunk_, &raw_);
    v1::ChunkEntry entry;
    entry.set_file_offset(stats_.file_bytes);
    entry.set_first_index(stats_.ios);
    entry.set_count(static_cast<uint32_t>(buffer_.size()));
    if (!buffer_.empty()) {
      auto [lo, hi] = std::minmax_element(buffer_.begin(), buffer_.end(),
                                          [](const Io& a, const Io& b) { return a.issue_ns < b.issue_ns; });
      entry.set_min_issue_ns(lo->issue_ns);
      entry.set_max_issue_ns(hi->issue_ns);
    }
    frame::compress(raw_, opt_.zstd_level, &stored_);
    write_frame(frame::Kind::kChunk, frame::Codec::kZstd, stored_, raw_.size());
    *index_.add_chunks() = entry;
    stats_.ios += buffer_.size();
    ++stats_.chunks;
    buffer_.clear();
    pending_dropped_ = 0;
    pending_late_ = 0;
    if (opt_.durability == Durability::kFdatasync && sync_file() != 0) {
      failed_ = true;
      throw error_errno(path_, "fdatasync", errno);
    }
  }

  void write_index() {
    index_.set_ios(stats_.ios);
    index_.set_dropped_events(stats_.dropped_events);
    index_.set_late_ios(stats_.late_ios);
    *index_.mutable_devices() = header_.devices();
    for (const auto& d : added_devices_) *index_.add_devices() = d;
    serialize(index_, &raw_);
    const uint64_t at = stats_.file_bytes;
    std::string tail(frame::kTailSize, '\0');
    frame::encode_tail(at, tail.data());
    frame::compress(raw_, opt_.zstd_level, &stored_);
    write_frame(frame::Kind::kIndex, frame::Codec::kZstd, stored_, raw_.size(), tail);
  }

  // Appends one frame (plus `extra` bytes) with a single write. A failed or
  // short write is cut back off, so the file always ends at a frame boundary.
  void write_frame(frame::Kind kind, frame::Codec codec, const std::string& stored, size_t raw_len,
                   const std::string& extra = {}) {
    if (stored.size() > frame::kMaxPayload || raw_len > frame::kMaxPayload)
      throw TraceError(path_ + ": frame of " + std::to_string(raw_len) + " bytes exceeds the format limit");
    std::string& out = frame_;
    out.clear();
    const bool first = stats_.file_bytes == 0;
    out.reserve((first ? sizeof frame::kFileMagic : 0) + frame::kHeaderSize + stored.size() + extra.size());
    if (first) out.append(frame::kFileMagic, sizeof frame::kFileMagic);
    char h[frame::kHeaderSize];
    frame::encode_header({kind, codec, static_cast<uint32_t>(stored.size()), static_cast<uint32_t>(raw_len),
                          frame::crc32(stored)},
                         h);
    out.append(h, sizeof h);
    out.append(stored);
    out.append(extra);
    size_t done = 0;
    while (done < out.size()) {
      ssize_t n = ::write(fd_, out.data() + done, out.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int err = n < 0 ? errno : ENOSPC;
        failed_ = true;
        if (::ftruncate(fd_, static_cast<off_t>(stats_.file_bytes)) == 0)
          ::lseek(fd_, static_cast<off_t>(stats_.file_bytes), SEEK_SET);
        throw error_errno(path_, "write failed at byte " + std::to_string(stats_.file_bytes + done) +
                                     "; the trace ends at its last complete chunk",
                          err);
      }
      done += static_cast<size_t>(n);
    }
    stats_.file_bytes += out.size();
  }

  std::string path_;
  v1::TraceHeader header_;
  WriterOptions opt_;
  int fd_ = -1;
  bool header_written_ = false;
  bool failed_ = false;
  bool closed_ = false;

  std::vector<Io> buffer_;
  std::priority_queue<HeldIo, std::vector<HeldIo>, LaterIssue> window_;
  uint64_t arrivals_ = 0;
  int64_t newest_issue_ = 0;
  int64_t last_emitted_issue_ = 0;
  bool have_emitted_ = false;
  NameInterner names_;

  google::protobuf::RepeatedPtrField<v1::Device> pending_devices_;
  std::vector<v1::Device> added_devices_;
  uint64_t pending_dropped_ = 0;
  uint64_t pending_late_ = 0;
  int64_t last_flush_ns_ = 0;

  v1::Chunk chunk_;
  v1::Index index_;
  WriterStats stats_;
  // Kept from frame to frame so their storage is reused (see frame::compress).
  std::string raw_, stored_, frame_;
};

TraceWriter::TraceWriter(std::string path, v1::TraceHeader header, WriterOptions options)
    : impl_(std::make_unique<Impl>(std::move(path), std::move(header), options)) {}
TraceWriter::~TraceWriter() { impl_->close_quietly(); }
uint32_t TraceWriter::add_device(const v1::Device& d) { return impl_->add_device(d); }
uint32_t TraceWriter::device_count() const { return impl_->device_count(); }
void TraceWriter::set_metadata(const std::string& k, const std::string& v) { impl_->set_metadata(k, v); }
void TraceWriter::append(const Io& io) { impl_->append(io); }
void TraceWriter::add_dropped(uint64_t events) { impl_->add_dropped(events); }
void TraceWriter::flush(bool drain) { impl_->flush(drain); }
void TraceWriter::tick(int64_t now_issue_ns) { impl_->tick(now_issue_ns); }
void TraceWriter::close() { impl_->close(); }
const WriterStats& TraceWriter::stats() const { return impl_->stats(); }
const std::string& TraceWriter::path() const { return impl_->path(); }

}  // namespace iotape::format

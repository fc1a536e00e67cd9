#include "format/reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <utility>

#include "format/chunk_codec.h"
#include "format/decode_ahead.h"
#include "format/error.h"
#include "format/frame.h"
#include "format/version.h"

namespace iotape::format {
namespace {

// Bytes read a block at a time: a long recording's chunks can be a few KiB,
// and two reads for each cost more than decoding it.
constexpr size_t kReadBlock = 256 << 10;

// One open trace file: its header, optional index and read position.
struct File {
  std::string path;
  int fd = -1;
  uint64_t size = 0;
  uint64_t pos = 0;       // next frame to read
  bool done = false;      // reached the index frame or the end
  uint64_t accounted = 0; // chunks before this offset were counted (seeks re-read them)
  v1::TraceHeader header;
  std::optional<v1::Index> index;
  std::string block;  // the bytes from block_at on, block_len of them (view_at)
  uint64_t block_at = 0;
  size_t block_len = 0;

  File() = default;
  File(File&& o) noexcept { *this = std::move(o); }
  File& operator=(File&& o) noexcept {
    std::swap(path, o.path);
    std::swap(fd, o.fd);
    size = o.size;
    pos = o.pos;
    done = o.done;
    accounted = o.accounted;
    header.Swap(&o.header);
    std::swap(index, o.index);
    std::swap(block, o.block);
    block_at = o.block_at;
    block_len = o.block_len;
    return *this;
  }
  ~File() {
    if (fd >= 0) ::close(fd);
  }
  // Only the file being read keeps a block, however many parts a trace has.
  void release_block() {
    std::string().swap(block);
    block_len = 0;
  }
};

// Reads up to n bytes at off, fewer only where the file ends; returns how many.
size_t read_upto(const File& f, uint64_t off, size_t n, char* out) {
  size_t done = 0;
  while (done < n) {
    ssize_t r = ::pread(f.fd, out + done, n - done, static_cast<off_t>(off + done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw error_errno(f.path, "read at byte " + std::to_string(off + done), errno);
    if (r == 0) break;
    done += static_cast<size_t>(r);
  }
  return done;
}

// Reads exactly n bytes at off; false if the file ends first.
bool read_at(const File& f, uint64_t off, size_t n, char* out) { return read_upto(f, off, n, out) == n; }

// The n bytes at off, through f's block; valid until the next call. False if
// the file ends first.
bool view_at(File& f, uint64_t off, size_t n, std::string_view* out) {
  if (off < f.block_at || off - f.block_at + n > f.block_len) {
    if (f.block.size() < std::max(n, kReadBlock)) f.block.resize(std::max(n, kReadBlock));
    f.block_len = read_upto(f, off, f.block.size(), f.block.data());
    f.block_at = off;
  }
  if (off - f.block_at + n > f.block_len) return false;
  *out = std::string_view(f.block.data() + (off - f.block_at), n);
  return true;
}

struct Frame {
  frame::FrameHeader h;
  std::string_view payload;  // decompressed: in the caller's buffer, or (raw) in f's block until its next read
};

// Reads and verifies the frame at `off`, decompressing into *buffer (whose
// storage is reused: no fresh memory to clear for each chunk). On damage
// returns nullopt and sets why.
std::optional<Frame> read_frame(File& f, uint64_t off, std::string* why, std::string* buffer) {
  std::string_view bytes;
  if (!view_at(f, off, frame::kHeaderSize, &bytes)) {
    *why = "file ends inside a frame header (truncated)";
    return std::nullopt;
  }
  auto h = frame::decode_header(bytes.data(), why);
  if (!h) return std::nullopt;
  if (off + frame::kHeaderSize + h->stored_len > f.size) {
    *why = "file ends inside a " + std::to_string(h->stored_len) + "-byte frame (truncated)";
    return std::nullopt;
  }
  if (!view_at(f, off + frame::kHeaderSize, h->stored_len, &bytes)) {
    *why = "file ends inside a frame (truncated)";
    return std::nullopt;
  }
  if (frame::crc32(bytes) != h->payload_crc) {
    *why = "frame checksum mismatch (corrupt)";
    return std::nullopt;
  }
  Frame fr{*h, bytes};
  if (h->codec == frame::Codec::kRaw) return fr;
  if (!frame::decompress(bytes, h->raw_len, buffer, why)) return std::nullopt;
  fr.payload = *buffer;
  return fr;
}

File open_file(const std::string& path) {
  File f;
  f.path = path;
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (f.fd < 0) throw error_errno(path, "cannot open trace", errno);
  struct stat st;
  if (::fstat(f.fd, &st) != 0) throw error_errno(path, "stat", errno);
  f.size = static_cast<uint64_t>(st.st_size);
  char magic[sizeof frame::kFileMagic];
  if (!read_at(f, 0, sizeof magic, magic) || std::memcmp(magic, frame::kFileMagic, sizeof magic) != 0)
    throw error_at_byte(path, 0, "not an iotape trace (bad file magic)");
  std::string why, buffer;
  auto fr = read_frame(f, sizeof magic, &why, &buffer);
  if (!fr) throw error_at_byte(path, sizeof magic, "unreadable trace header: " + why);
  if (fr->h.kind != frame::Kind::kHeader) throw error_at_byte(path, sizeof magic, "first frame is not a header");
  if (!f.header.ParseFromArray(fr->payload.data(), static_cast<int>(fr->payload.size())))
    throw error_at_byte(path, sizeof magic + frame::kHeaderSize, "trace header does not parse");
  if (f.header.format_version() > kFormatVersion)
    throw error_at_byte(path, sizeof magic + frame::kHeaderSize,
                        "format version " + std::to_string(f.header.format_version()) +
                            " is newer than this iotape reads (" + std::to_string(kFormatVersion) + ")");
  f.pos = sizeof magic + frame::kHeaderSize + fr->h.stored_len;

  // The index, if the file was closed cleanly. Anything wrong with it just
  // means reading without it.
  char tail[frame::kTailSize];
  if (f.size >= f.pos + frame::kTailSize && read_at(f, f.size - frame::kTailSize, sizeof tail, tail)) {
    if (auto at = frame::decode_tail(tail); at && *at >= f.pos && *at < f.size) {
      auto ix = read_frame(f, *at, &why, &buffer);
      v1::Index index;
      if (ix && ix->h.kind == frame::Kind::kIndex &&
          index.ParseFromArray(ix->payload.data(), static_cast<int>(ix->payload.size())))
        f.index = std::move(index);
    }
  }
  f.release_block();
  return f;
}

}  // namespace

class TraceReader::Impl {
 public:
  Impl(std::vector<std::string> paths, ReaderOptions options) : opt_(options) {
    if (paths.empty()) throw UsageError("no trace files given");
    for (auto& p : paths) files_.push_back(open_file(p));
    header_ = files_[0].header;
    // The final device table is in the index; without it, chunks add devices as they come.
    if (files_.back().index && files_.back().index->devices_size() >= header_.devices_size())
      *header_.mutable_devices() = files_.back().index->devices();
    metadata_.insert(header_.metadata().begin(), header_.metadata().end());
    for (const auto& f : files_)
      if (f.index)
        for (const auto& [k, v] : f.index->metadata()) metadata_[k] = v;
  }

  const v1::TraceHeader& header() const { return header_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  std::span<const Io> next_batch() {
    // What a seek or next() left of the current batch comes first.
    if (next_in_batch_ < current_.size()) {
      auto rest = current_.subspan(next_in_batch_);
      next_in_batch_ = current_.size();
      return rest;
    }
    return read_chunk();
  }

  ChunkView next_chunk() {
    if (next_in_batch_ < current_.size()) {
      const auto first = static_cast<uint32_t>(next_in_batch_);
      next_in_batch_ = current_.size();
      return {&chunk_, first};
    }
    return load_chunk() ? ChunkView{&chunk_, 0} : ChunkView{};
  }

  // next_chunk, the chunk moved into `out` (whose old contents it recycles).
  bool take_chunk(v1::Chunk* out, uint32_t* first_row) {
    const ChunkView v = next_chunk();
    if (!v.chunk) return false;
    out->Swap(&chunk_);
    *first_row = v.first_row;
    return true;
  }

  // What reading has changed since opening, to wind the reader back to: the
  // chunks decode_ahead read beyond a seek were never read for the caller.
  struct Progress {
    ReadStatus status;
    uint64_t dropped = 0;
    uint64_t late = 0;
    int devices = 0;
    std::vector<uint64_t> accounted;  // per file
  };
  void save(Progress* p) const {
    p->status = status_;
    p->dropped = dropped_;
    p->late = late_;
    p->devices = header_.devices_size();
    p->accounted.resize(files_.size());
    for (size_t i = 0; i < files_.size(); ++i) p->accounted[i] = files_[i].accounted;
  }
  void restore(const Progress& p) {
    status_ = p.status;
    dropped_ = p.dropped;
    late_ = p.late;
    header_.mutable_devices()->DeleteSubrange(p.devices, header_.devices_size() - p.devices);
    for (size_t i = 0; i < files_.size(); ++i) files_[i].accounted = p.accounted[i];
  }

  bool next(Io& io) {
    while (next_in_batch_ >= current_.size()) {
      current_ = read_chunk();
      next_in_batch_ = 0;
      if (current_.empty()) return false;
    }
    io = current_[next_in_batch_++];
    return true;
  }

  void seek_time(int64_t t) {
    current_ = {};
    next_in_batch_ = 0;
    for (size_t i = 0; i < files_.size(); ++i) {
      File& f = files_[i];
      if (!f.index) continue;
      for (const auto& e : f.index->chunks()) {
        if (e.count() == 0 || e.max_issue_ns() < t) continue;
        cur_ = i;
        for (size_t j = i; j < files_.size(); ++j) files_[j].done = false;
        f.pos = e.file_offset();
        current_ = read_chunk();
        return skip_before(t);
      }
    }
    // No index (or t beyond it): scan from the start, chunk by chunk.
    rewind();
    do current_ = read_chunk();
    while (!current_.empty() && current_.back().issue_ns < t);
    skip_before(t);
  }

  const ReadStatus& status() const { return status_; }
  uint64_t dropped() const { return dropped_; }
  uint64_t late() const { return late_; }
  bool has_index() const {
    for (const auto& f : files_)
      if (!f.index) return false;
    return true;
  }
  const TraceIndex* index() const {
    if (!files_[0].index) return nullptr;
    if (!first_index_) {
      const v1::Index& ix = *files_[0].index;
      first_index_.emplace();
      first_index_->ios = ix.ios();
      first_index_->dropped_events = ix.dropped_events();
      first_index_->late_ios = ix.late_ios();
      for (const auto& e : ix.chunks())
        first_index_->chunks.push_back({e.file_offset(), e.first_index(), e.count(), e.min_issue_ns(), e.max_issue_ns()});
      first_index_->metadata.insert(ix.metadata().begin(), ix.metadata().end());
    }
    return &*first_index_;
  }

 private:
  // Decodes the next chunk that holds IOs; empty at the end or at damage.
  std::span<const Io> read_chunk() {
    if (!load_chunk()) return {};
    decode_chunk(chunk_, &batch_);
    return batch_;
  }

  // Reads and checks the next chunk that holds IOs into chunk_; false at the
  // end or at damage.
  bool load_chunk() {
    while (cur_ < files_.size()) {
      File& f = files_[cur_];
      if (status_.damaged && !opt_.skip_damaged) return false;
      if (f.done) {
        f.release_block();
        ++cur_;
        continue;
      }
      if (f.pos >= f.size) {
        f.done = true;
        continue;
      }
      const uint64_t at = f.pos;
      std::string why;
      auto fr = read_frame(f, at, &why, &payload_);
      if (fr && fr->h.kind == frame::Kind::kIndex) {
        f.done = true;
        continue;
      }
      if (fr && fr->h.kind != frame::Kind::kChunk) why = "unexpected frame kind in the chunk sequence";
      if (fr && fr->h.kind == frame::Kind::kChunk && load(*fr, &why)) {
        f.pos = at + frame::kHeaderSize + fr->h.stored_len;
        if (at >= f.accounted) {
          dropped_ += chunk_.dropped_events();
          late_ += chunk_.late_ios();
          f.accounted = f.pos;
        }
        if (chunk_.count() == 0) continue;  // a chunk carrying only accounting
        return true;
      }
      damage(f, at, why);
    }
    return false;
  }

  void skip_before(int64_t t) {
    next_in_batch_ = 0;
    while (next_in_batch_ < current_.size() && current_[next_in_batch_].issue_ns < t) ++next_in_batch_;
  }

  void rewind() {
    for (auto& f : files_) {
      f.done = false;
      f.pos = 0;  // recomputed below
    }
    // Re-derive each file's first chunk position from its header frame.
    for (auto& f : files_) {
      char hb[frame::kHeaderSize];
      std::string why;
      read_at(f, sizeof frame::kFileMagic, sizeof hb, hb);
      auto h = frame::decode_header(hb, &why);
      f.pos = sizeof frame::kFileMagic + frame::kHeaderSize + (h ? h->stored_len : 0);
    }
    cur_ = 0;
    status_ = {};
  }

  bool load(const Frame& fr, std::string* why) {
    if (!chunk_.ParseFromArray(fr.payload.data(), static_cast<int>(fr.payload.size()))) {
      *why = "chunk does not parse";
      return false;
    }
    // Devices first named in this chunk, added once the chunk is known good.
    const uint32_t known = static_cast<uint32_t>(header_.devices_size());
    const uint32_t base = chunk_.devices_added_base();
    const uint32_t added = static_cast<uint32_t>(chunk_.devices_added_size());
    if (added > 0 && base > known) {
      *why = "chunk adds device " + std::to_string(base) + " but only " + std::to_string(known) + " are known";
      return false;
    }
    const uint32_t devices = added > 0 ? std::max(known, base + added) : known;
    if (!check_chunk(chunk_, devices, why)) return false;
    for (uint32_t i = known - std::min(known, base); i < added; ++i)
      *header_.add_devices() = chunk_.devices_added(static_cast<int>(i));
    return true;
  }

  void damage(File& f, uint64_t at, const std::string& why) {
    if (!status_.damaged) {
      status_.damaged = true;
      status_.file_offset = at;
      status_.message = f.path + ": byte " + std::to_string(at) + ": " + why;
    }
    if (!opt_.skip_damaged) {
      f.done = true;
      return;
    }
    // Look for the next intact frame header after the damage, a block at a time.
    std::string why_not, block;
    constexpr size_t kBlock = 1 << 20;
    for (uint64_t base = at + 1; base + frame::kHeaderSize <= f.size; base += kBlock) {
      const size_t len = static_cast<size_t>(std::min<uint64_t>(kBlock + frame::kHeaderSize - 1, f.size - base));
      block.resize(len);
      if (!read_at(f, base, len, block.data())) break;
      for (size_t i = 0; i + frame::kHeaderSize <= len; ++i) {
        if (std::memcmp(block.data() + i, &frame::kFrameMagic, 4) != 0) continue;
        if (frame::decode_header(block.data() + i, &why_not)) {
          f.pos = base + i;
          ++status_.skipped_regions;
          return;
        }
      }
    }
    f.done = true;
  }

  ReaderOptions opt_;
  std::vector<File> files_;
  size_t cur_ = 0;
  v1::TraceHeader header_;
  std::map<std::string, std::string> metadata_;
  mutable std::optional<TraceIndex> first_index_;  // files_[0].index, as plain values once asked for
  v1::Chunk chunk_;
  std::string payload_;  // the last chunk frame's, decompressed
  std::vector<Io> batch_;
  std::span<const Io> current_;
  size_t next_in_batch_ = 0;
  ReadStatus status_;
  uint64_t dropped_ = 0;
  uint64_t late_ = 0;
};

// The reader with decode_ahead: the serial reader (Impl) runs on the
// DecodeAhead's thread, and the caller sees its chunks, and its state as of
// each chunk, in order. The caller touches the Impl only while that thread is
// stopped (seek_time), or for what never changes after opening (metadata,
// index).
class TraceReader::Ahead {
 public:
  Ahead(Impl& impl, unsigned depth)
      : impl_(impl), header_(impl.header()), pipe_(depth, [this](Batch& b) { return produce(b); }) {
    impl_.save(&progress_);
    pipe_.start();
  }

  const v1::TraceHeader& header() const { return header_; }

  std::span<const Io> next_batch() {
    if (!advance()) return {};
    auto rest = std::span<const Io>(part_->ios).subspan(row_);
    row_ = part_->ios.size();
    return rest;
  }
  ChunkView next_chunk() {
    if (!advance()) return {};
    const ChunkView v{&part_->chunk, static_cast<uint32_t>(row_)};
    row_ = part_->ios.size();
    return v;
  }
  bool next(Io& io) {
    if (!advance()) return false;
    io = part_->ios[row_++];
    return true;
  }

  // As the serial reader would from where the caller stands.
  void seek_time(int64_t t) {
    pipe_.stop();
    batch_ = nullptr;
    part_ = nullptr;
    ended_ = false;
    error_ = nullptr;
    impl_.restore(progress_);
    impl_.seek_time(t);
    for (int d = header_.devices_size(); d < impl_.header().devices_size(); ++d)
      *header_.add_devices() = impl_.header().devices(d);
    impl_.save(&progress_);
    pipe_.start();
  }

  const ReadStatus& status() const { return progress_.status; }
  uint64_t dropped() const { return progress_.dropped; }
  uint64_t late() const { return progress_.late; }

 private:
  // One chunk as the thread hands it over, with the reader's state after it.
  struct Part {
    v1::Chunk chunk;
    std::vector<Io> ios;     // all its rows; the comm views point into `chunk`
    bool decoded = false;    // ios holds the chunk's rows; else the caller decodes them
    uint32_t first_row = 0;  // rows before it were passed over (seek_time)
    bool end = false;        // no chunk: the end of the trace, or damage
    std::vector<v1::Device> devices_added;
    Impl::Progress progress;
  };
  // Chunks handed over together: each hand-over may wake the other thread,
  // and a long recording's chunks (10 s of issue time each) can be a few
  // hundred IOs.
  struct Batch {
    std::vector<Part> parts;  // [0, used) in order; the rest are buffers to recycle
    size_t used = 0;
  };
  static constexpr uint64_t kBatchIos = 4'096;

  // On the DecodeAhead's thread: chunks up to kBatchIos IOs, or the end.
  bool produce(Batch& b) {
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));  // after the chunks before it
    b.used = 0;
    bool more = true;
    for (uint64_t ios = 0; more && ios < kBatchIos; ios += b.parts[b.used++].chunk.count()) {
      if (b.parts.size() == b.used) b.parts.emplace_back();
      try {
        more = take(b.parts[b.used]);
      } catch (...) {
        if (b.used == 0) throw;
        error_ = std::current_exception();
        return true;
      }
    }
    // A caller that already waits decodes the rest itself, while this thread reads on.
    for (size_t i = 0; i < b.used && !pipe_.consumer_waiting(); ++i) decode(b.parts[i]);
    return more;
  }
  bool take(Part& p) {
    const int known = impl_.header().devices_size();
    p.end = !impl_.take_chunk(&p.chunk, &p.first_row);
    p.decoded = false;
    const auto& devices = impl_.header().devices();
    p.devices_added.assign(devices.begin() + known, devices.end());
    impl_.save(&p.progress);
    return !p.end;
  }
  static void decode(Part& p) {
    if (!p.end && !p.decoded) decode_chunk(p.chunk, &p.ios);
    p.decoded = true;
  }

  // Makes part_ a chunk with rows left to hand out; false at the end.
  bool advance() {
    while (!part_ || row_ >= part_->ios.size()) {
      if (ended_) return false;
      if (!batch_ || next_part_ == batch_->used) {
        batch_ = &pipe_.next();
        next_part_ = 0;
      }
      part_ = &batch_->parts[next_part_++];
      decode(*part_);
      for (const auto& dev : part_->devices_added) *header_.add_devices() = dev;
      progress_ = part_->progress;
      ended_ = part_->end;
      row_ = part_->first_row;
      if (ended_) part_ = nullptr;
    }
    return true;
  }

  Impl& impl_;
  v1::TraceHeader header_;
  Impl::Progress progress_;  // as of the chunk handed out last
  Batch* batch_ = nullptr;   // the caller's
  size_t next_part_ = 0;     // of batch_
  Part* part_ = nullptr;
  size_t row_ = 0;  // of part_, next to hand out
  bool ended_ = false;
  std::exception_ptr error_;  // the thread's, thrown once the batch before it is handed over
  DecodeAhead<Batch> pipe_;   // last: its thread ends before the members it uses go
};

TraceReader::TraceReader(std::vector<std::string> paths, ReaderOptions options)
    : impl_(std::make_unique<Impl>(std::move(paths), options)),
      ahead_(options.decode_ahead ? std::make_unique<Ahead>(*impl_, options.decode_ahead) : nullptr) {}
TraceReader::TraceReader(const std::string& path, ReaderOptions options)
    : TraceReader(std::vector<std::string>{path}, options) {}
TraceReader::~TraceReader() = default;
TraceReader::TraceReader(TraceReader&&) noexcept = default;
TraceReader& TraceReader::operator=(TraceReader&&) noexcept = default;
const v1::TraceHeader& TraceReader::header() const { return ahead_ ? ahead_->header() : impl_->header(); }
const std::map<std::string, std::string>& TraceReader::metadata() const { return impl_->metadata(); }
std::span<const Io> TraceReader::next_batch() { return ahead_ ? ahead_->next_batch() : impl_->next_batch(); }
bool TraceReader::next(Io& io) { return ahead_ ? ahead_->next(io) : impl_->next(io); }
ChunkView TraceReader::next_chunk() { return ahead_ ? ahead_->next_chunk() : impl_->next_chunk(); }
void TraceReader::seek_time(int64_t t) { ahead_ ? ahead_->seek_time(t) : impl_->seek_time(t); }
const ReadStatus& TraceReader::status() const { return ahead_ ? ahead_->status() : impl_->status(); }
uint64_t TraceReader::dropped_events() const { return ahead_ ? ahead_->dropped() : impl_->dropped(); }
uint64_t TraceReader::late_ios() const { return ahead_ ? ahead_->late() : impl_->late(); }
bool TraceReader::has_index() const { return impl_->has_index(); }
const TraceIndex* TraceReader::index() const { return impl_->index(); }

}  // namespace iotape::format

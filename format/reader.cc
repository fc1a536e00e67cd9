#include "format/reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <functional>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>

#include "format/chunk_codec.h"
#include "format/chunk_wire.h"
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
  uint64_t first_chunk = 0;  // where the frames after the header start
  bool done = false;         // reached the index frame or the end
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
    first_chunk = o.first_chunk;
    done = o.done;
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

// Reads and verifies the frame at `off` (its header and checksum), leaving its
// payload as stored, in f's block until its next read. On damage returns
// nullopt and sets why.
std::optional<Frame> read_stored(File& f, uint64_t off, std::string* why) {
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
  return Frame{*h, bytes};
}

// A stored payload as its writer wrote it, decompressing into *buffer (whose
// storage is reused: no fresh memory to clear for each chunk).
bool unpack(const Frame& fr, std::string* buffer, std::string_view* out, std::string* why) {
  if (fr.h.codec == frame::Codec::kRaw) {
    *out = fr.payload;
    return true;
  }
  if (!frame::decompress(fr.payload, fr.h.raw_len, buffer, why)) return false;
  *out = *buffer;
  return true;
}

// read_stored, then unpack.
std::optional<Frame> read_frame(File& f, uint64_t off, std::string* why, std::string* buffer) {
  auto fr = read_stored(f, off, why);
  if (fr && !unpack(*fr, buffer, &fr->payload, why)) return std::nullopt;
  return fr;
}

bool parse_chunk(std::string_view payload, v1::Chunk* out, std::string* why) {
  if (parse_chunk_fast(payload, out) || out->ParseFromArray(payload.data(), static_cast<int>(payload.size())))
    return true;
  *why = "chunk does not parse";
  return false;
}

// Whether a parsed chunk may join a trace whose device table holds `known`
// devices: the devices it adds follow on, and its columns check against the
// table with them (check_chunk). Passing with fewer devices than the table
// holds means passing with the table. Sets why if not.
bool admissible(const v1::Chunk& c, uint32_t known, std::string* why) {
  const uint32_t base = c.devices_added_base();
  const auto added = static_cast<uint32_t>(c.devices_added_size());
  if (added > 0 && base > known) {
    *why = "chunk adds device " + std::to_string(base) + " but only " + std::to_string(known) + " are known";
    return false;
  }
  return check_chunk(c, added > 0 ? std::max(known, base + added) : known, why);
}

// Appends the devices an admissible chunk adds that `devices` lacks.
void admit_devices(const v1::Chunk& c, google::protobuf::RepeatedPtrField<v1::Device>* devices) {
  const auto known = static_cast<uint32_t>(devices->size());
  const uint32_t base = c.devices_added_base();
  for (uint32_t i = known - std::min(known, base); i < static_cast<uint32_t>(c.devices_added_size()); ++i)
    *devices->Add() = c.devices_added(static_cast<int>(i));
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
  f.pos = f.first_chunk = sizeof magic + frame::kHeaderSize + fr->h.stored_len;

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
    p_.accounted.assign(files_.size(), 0);
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

  // A chunk frame as stored, its header and checksum verified but not
  // unpacked or parsed: decode_ahead unpacks and parses it on whichever
  // thread is free, and admits it in order.
  struct StoredChunk {
    size_t file = 0;
    uint64_t at = 0;   // the frame's offset in its file
    uint64_t end = 0;  // the next frame's
    frame::FrameHeader h{};
    std::string bytes;
  };
  enum class Stored { kChunk, kEnd, kTrouble };
  // The next frame of the chunk sequence, read past. kTrouble: the frame at
  // (out->file, out->at) is damaged or not a chunk, and the reader stays
  // before it: the serial path (take_chunk, after reposition) says what is
  // wrong and goes on as the options say. Accounts for nothing; whoever
  // admits the chunk does.
  Stored take_stored(StoredChunk* out) {
    for (File* file; (file = reading()) != nullptr;) {
      File& f = *file;
      std::string why;
      const auto fr = read_stored(f, f.pos, &why);
      out->file = cur_;
      out->at = f.pos;
      if (fr && fr->h.kind == frame::Kind::kIndex) {
        f.done = true;
        continue;
      }
      if (!fr || fr->h.kind != frame::Kind::kChunk) return Stored::kTrouble;
      out->h = fr->h;
      out->bytes.assign(fr->payload);
      f.pos = out->end = f.pos + frame::kHeaderSize + fr->h.stored_len;
      return Stored::kChunk;
    }
    return Stored::kEnd;
  }
  bool has_leftover() const { return next_in_batch_ < current_.size(); }
  // The next chunk read is the one at `at` in file `file`.
  void reposition(size_t file, uint64_t at) {
    current_ = {};
    next_in_batch_ = 0;
    for (size_t i = 0; i < files_.size(); ++i) {
      files_[i].done = i < file;
      if (i > file) files_[i].pos = files_[i].first_chunk;
    }
    files_[file].pos = at;
    cur_ = file;
  }

  // What reading has changed since opening, to wind the reader back to: the
  // chunks decode_ahead read beyond a seek were never read for the caller.
  struct Progress {
    ReadStatus status;
    uint64_t dropped = 0;
    uint64_t late = 0;
    std::vector<uint64_t> accounted;  // per file: chunks before this offset were counted
    // Counts a chunk admitted from frame [at, end) of file `file` once, however often it is read.
    void account(size_t file, uint64_t at, uint64_t end, const v1::Chunk& c) {
      if (at < accounted[file]) return;
      dropped += c.dropped_events();
      late += c.late_ios();
      accounted[file] = end;
    }
  };
  const Progress& progress() const { return p_; }
  // Back to `p`, with `devices` the device table as of it.
  void restore(const Progress& p, const google::protobuf::RepeatedPtrField<v1::Device>& devices) {
    p_ = p;
    *header_.mutable_devices() = devices;
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
        // The parts after it are read again from their first chunks, wherever reading had left them.
        reposition(i, e.file_offset());
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

  const ReadStatus& status() const { return p_.status; }
  uint64_t dropped() const { return p_.dropped; }
  uint64_t late() const { return p_.late; }
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

  // The file whose next frame is read next, past those read to the end; null at the end.
  File* reading() {
    for (; cur_ < files_.size(); ++cur_) {
      File& f = files_[cur_];
      if (!f.done && f.pos < f.size) return &f;
      f.done = true;
      f.release_block();
    }
    return nullptr;
  }

  // Reads and checks the next chunk that holds IOs into chunk_; false at the
  // end or at damage.
  bool load_chunk() {
    while (!p_.status.damaged || opt_.skip_damaged) {
      File* file = reading();
      if (!file) return false;
      File& f = *file;
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
        p_.account(cur_, at, f.pos, chunk_);
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
      f.pos = f.first_chunk;
    }
    cur_ = 0;
    p_.status = {};
  }

  bool load(const Frame& fr, std::string* why) {
    if (!parse_chunk(fr.payload, &chunk_, why)) return false;
    // Devices first named in this chunk, added once the chunk is known good.
    if (!admissible(chunk_, static_cast<uint32_t>(header_.devices_size()), why)) return false;
    admit_devices(chunk_, header_.mutable_devices());
    return true;
  }

  void damage(File& f, uint64_t at, const std::string& why) {
    if (!p_.status.damaged) {
      p_.status.damaged = true;
      p_.status.file_offset = at;
      p_.status.message = f.path + ": byte " + std::to_string(at) + ": " + why;
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
          ++p_.status.skipped_regions;
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
  Progress p_;
};

// The reader with decode_ahead: the reader (Impl) runs on the DecodeAhead's
// thread, and the caller sees its chunks, and its state as of each chunk, in
// order. The thread reads chunk frames and checks their checksums; unpacking,
// parsing and decoding them is most of the work, and is done by the thread
// while the caller is busy, or by the caller when it would otherwise wait.
// So the caller admits chunks itself, in order: their device additions,
// their counts of losses, and the damage only parsing finds. At such damage,
// or at a frame the thread could not read, the thread is stopped and the
// serial reader reads on from there (stepping over the damage as it always
// does). The caller touches the Impl only while that thread is stopped, or
// for what never changes after opening (metadata, index).
class TraceReader::Ahead {
 public:
  Ahead(Impl& impl, const ReaderOptions& o)
      : impl_(impl),
        header_(impl.header()),
        stage_(o.each_batch),
        stage_header_(impl.header()),
        pipe_(
            o.decode_ahead, [this](Batch& b) { return produce(b); },
            o.each_batch ? DecodeAhead<Batch>::Idle([this] { return stage_on_thread(); }) : nullptr) {
    progress_ = impl_.progress();
    start();
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
    if (stage_) throw std::logic_error("TraceReader: seek_time with ReaderOptions::each_batch");
    stop();
    impl_.seek_time(t);
    for (int d = header_.devices_size(); d < impl_.header().devices_size(); ++d)
      *header_.add_devices() = impl_.header().devices(d);
    progress_ = impl_.progress();
    start();
  }

  const ReadStatus& status() const { return progress_.status; }
  uint64_t dropped() const { return progress_.dropped; }
  uint64_t late() const { return progress_.late; }

 private:
  // Whether the stage ran on a part: claimed by the thread or the caller.
  struct StageState {
    enum : int { kWaiting, kRunning, kDone, kFailed };
    std::atomic<int> v = kWaiting;
    StageState() = default;
    StageState(StageState&& o) noexcept : v(o.v.load(std::memory_order_relaxed)) {}
  };
  // One chunk as the thread hands it over.
  struct Part {
    enum Kind {
      kAdmitted,  // read by the serial reader: `progress` is the reader's state after it
      kStored,    // a chunk frame for the caller to admit (opened: unpacked and parsed already)
      kEnd,       // the end of the stored chunks: no more
      kTrouble,   // the frame at stored.file, stored.at needs the serial reader
    } kind = kEnd;
    Impl::StoredChunk stored;
    std::string payload;   // stored's, unpacked
    bool opened = false;   // chunk holds stored, parsed
    bool checked = false;  // chunk was found admissible
    v1::Chunk chunk;
    std::vector<Io> ios;     // all its rows; the comm views point into `chunk`
    bool decoded = false;    // ios holds the chunk's rows
    uint32_t first_row = 0;  // rows before it were passed over (seek_time)
    std::vector<v1::Device> devices_added;
    Impl::Progress progress;
    // The stage (ReaderOptions::each_batch):
    uint64_t seq = 0;              // the part's place in its order
    bool ready_for_stage = false;  // the thread decoded it and found it admissible
    StageState stage;
    std::exception_ptr stage_error;  // the stage threw on the reader's thread
  };
  // Chunks handed over together: each hand-over may wake the other thread,
  // and a long recording's chunks (10 s of issue time each) can be a few
  // hundred IOs.
  struct Batch {
    std::vector<Part> parts;  // [0, used) in order; the rest are buffers to recycle
    size_t used = 0;
  };
  static constexpr uint64_t kBatchBytes = 128 << 10;  // of chunks as stored: some 4,000 to 8,000 IOs

  void start() {
    devices_seen_ = static_cast<uint32_t>(header_.devices_size());
    // The parts after those the caller took were dropped, none of them
    // staged: they are read again.
    taken_ = next_stage_.load(std::memory_order_relaxed);
    unstaged_.clear();
    pipe_.start();
  }
  void stop() {
    pipe_.stop();
    batch_ = nullptr;
    part_ = nullptr;
    ended_ = false;
    error_ = nullptr;
    impl_.restore(progress_, header_.devices());
  }

  // On the DecodeAhead's thread: chunks up to kBatchBytes, or the end.
  bool produce(Batch& b) {
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));  // after the chunks before it
    b.used = 0;
    bool more = true;
    for (uint64_t bytes = 0; more && bytes < kBatchBytes; ++b.used) {
      if (b.parts.size() == b.used) b.parts.emplace_back();
      Part& p = b.parts[b.used];
      try {
        more = take(p);
      } catch (...) {
        if (b.used == 0) throw;
        error_ = std::current_exception();
        return true;
      }
      // A chunk the serial reader read counts some 16 bytes an IO, as stored.
      bytes += p.kind == Part::kStored ? p.stored.bytes.size() : p.kind == Part::kAdmitted ? 16 * p.chunk.count() : 0;
    }
    // A caller that already waits opens the rest itself, while this thread reads on.
    for (size_t i = 0; i < b.used && !pipe_.consumer_waiting(); ++i) open(b.parts[i]);
    if (stage_) {
      for (size_t i = 0; i < b.used; ++i) {
        Part& p = b.parts[i];
        p.ready_for_stage =
            p.decoded && (p.kind == Part::kAdmitted || p.kind == Part::kEnd || (p.kind == Part::kStored && p.checked));
        unstaged_.emplace_back(p.seq, &p);
      }
      while (!pipe_.consumer_waiting() && stage_on_thread()) {
      }
    }
    return more;
  }

  // The stage runs the parts in order of seq, each once, on either thread:
  // next_stage_ is the seq of the part it runs next, and whoever claims that
  // part (StageState kWaiting -> kRunning) runs it. The caller claims every
  // part of a batch it leaves (leave_batch); the thread claims the parts it
  // found ready, in the batches it holds or handed over, whenever it has time.

  // On the thread: runs the stage on the next part if that is one it
  // prepared and nobody claimed; false if not. A part the thread still knows
  // of is alive: its batch returns to the thread only once staged.
  bool stage_on_thread() {
    const uint64_t next = next_stage_.load(std::memory_order_acquire);
    while (!unstaged_.empty() && unstaged_.front().first < next) unstaged_.pop_front();
    if (unstaged_.empty() || unstaged_.front().first != next) return false;
    Part& p = *unstaged_.front().second;
    int waiting = StageState::kWaiting;
    if (!p.ready_for_stage || !p.stage.v.compare_exchange_strong(waiting, StageState::kRunning)) return false;
    try {
      run_stage(p);
    } catch (...) {
      p.stage_error = std::current_exception();  // the caller throws it when it reaches p
      p.stage.v.store(StageState::kFailed, std::memory_order_release);
      return false;
    }
    return true;
  }
  // On the thread that claimed p.
  void run_stage(Part& p) {
    stage_header_for(p);
    stage_rows(p, 0, static_cast<uint32_t>(p.ios.size()));
    stage_done(p);
  }
  // On the thread, a part next in the stage's order that nobody else can
  // claim yet (its batch is not handed over): decodes it, running the stage
  // on each slice of rows as it is decoded, while they are in this core's
  // cache (the week page on report_bench's 10M IOs: 0.67-0.69 s against
  // 0.71-0.75 s staging a chunk once decoded).
  void decode_and_stage(Part& p) {
    p.stage.v.store(StageState::kRunning, std::memory_order_relaxed);
    std::exception_ptr failed;
    stage_header_for(p);
    decode_chunk(p.chunk, &p.ios, [&](uint32_t begin, uint32_t end) {
      if (failed) return;
      try {
        stage_rows(p, begin, end);
      } catch (...) {
        failed = std::current_exception();  // the rows are decoded all the same
      }
    });
    p.decoded = true;
    if (!failed) return stage_done(p);
    p.stage_error = failed;  // the caller throws it when it reaches p
    p.stage.v.store(StageState::kFailed, std::memory_order_release);
  }
  void stage_header_for(const Part& p) {
    if (p.kind == Part::kStored) {
      admit_devices(p.chunk, stage_header_.mutable_devices());
    } else if (p.kind == Part::kAdmitted || serial_) {
      for (const auto& dev : p.devices_added) *stage_header_.add_devices() = dev;
    }
  }
  void stage_rows(const Part& p, uint32_t begin, uint32_t end) {
    begin = std::max(begin, p.first_row);
    if (p.kind != Part::kEnd && begin < end)
      stage_(std::span<const Io>(p.ios).subspan(begin, end - begin), stage_header_);
  }
  void stage_done(Part& p) {
    p.stage.v.store(StageState::kDone, std::memory_order_release);
    next_stage_.store(p.seq + 1, std::memory_order_release);
  }
  // The caller's side. It runs the stage on the parts of a batch it leaves
  // that the thread has not claimed, in order; where the thread is running
  // the stage on one, it keeps the batch (its IOs) and reads on, and gives
  // it back to the pool once the thread is done, waiting only when it keeps
  // more than kKeptBatches.
  static constexpr size_t kKeptBatches = 2;
  void leave_batch() {
    if (!stage_ || !batch_) return;
    kept_.push_back(pipe_.keep_held());
    batch_ = nullptr;
    give_back_staged(kept_.size() > kKeptBatches);
  }
  // Gives back the kept batches the stage is done with, in order; with
  // `wait`, at least one.
  void give_back_staged(bool wait) {
    for (; !kept_.empty() && stage_parts(*kept_.front(), kept_.front()->used, wait); wait = false) {
      pipe_.give_back(std::move(kept_.front()));
      kept_.pop_front();
    }
  }
  // Runs the stage on the parts [0, end) of `b` not run yet: true when it has
  // run on all. Where the thread runs one, false, or with `wait` waits.
  bool stage_parts(Batch& b, size_t end, bool wait) {
    for (size_t i = 0; i < end; ++i) {
      Part& p = b.parts[i];
      for (int state = p.stage.v.load(std::memory_order_acquire); state != StageState::kDone;
           state = p.stage.v.load(std::memory_order_acquire)) {
        if (state == StageState::kFailed) std::rethrow_exception(p.stage_error);
        if (state == StageState::kRunning) {
          if (!wait) return false;
          std::this_thread::yield();  // the thread runs it: a chunk's worth of work
          continue;
        }
        if (p.stage.v.compare_exchange_strong(state, StageState::kRunning)) run_stage(p);
      }
    }
    return true;
  }
  // Before the thread stops: the stage has run on the kept batches and on
  // the parts [0, end) of the one the caller holds.
  void finish_stage(size_t end) {
    if (!stage_) return;
    while (!kept_.empty()) give_back_staged(true);
    if (batch_) stage_parts(*batch_, end, true);
  }

  bool take(Part& p) {
    p.opened = p.checked = p.decoded = false;
    p.first_row = 0;
    p.seq = taken_++;
    p.ready_for_stage = false;
    p.stage.v.store(StageState::kWaiting, std::memory_order_relaxed);
    p.stage_error = nullptr;
    if (serial_ || impl_.has_leftover()) {
      const int known = impl_.header().devices_size();
      p.kind = impl_.take_chunk(&p.chunk, &p.first_row) ? Part::kAdmitted : Part::kEnd;
      p.opened = p.checked = true;
      const auto& devices = impl_.header().devices();
      p.devices_added.assign(devices.begin() + known, devices.end());
      p.progress = impl_.progress();
      return p.kind != Part::kEnd;
    }
    switch (impl_.take_stored(&p.stored)) {
      case Impl::Stored::kChunk:
        p.kind = Part::kStored;
        return true;
      case Impl::Stored::kEnd:
        p.kind = Part::kEnd;
        return false;
      case Impl::Stored::kTrouble:
        p.kind = Part::kTrouble;
        return false;
    }
    return false;
  }
  // On the thread, in order: unpacks, parses, checks and decodes what it can
  // of `p` (devices_seen_ follows the chunks it finds admissible). What fails
  // is left for admit() to find again, in order.
  void open(Part& p) {
    std::string why;
    if (!parse(p, &why)) return;
    if (!p.checked) {
      // Against the devices known so far: fewer than the caller may know, never more.
      p.checked = admissible(p.chunk, devices_seen_, &why);
      if (!p.checked) return;
      if (p.chunk.devices_added_size() > 0)
        devices_seen_ =
            std::max(devices_seen_, p.chunk.devices_added_base() + static_cast<uint32_t>(p.chunk.devices_added_size()));
    }
    // Only a chunk the stage may see (as ready_for_stage says): a frame in
    // trouble is read again serially, and its part may hold an older chunk.
    const bool stageable = p.kind == Part::kStored || p.kind == Part::kAdmitted;
    if (stage_ && stageable && !p.decoded && next_stage_.load(std::memory_order_acquire) == p.seq)
      return decode_and_stage(p);
    decode(p);
  }
  // Unpacks and parses a stored chunk, once.
  static bool parse(Part& p, std::string* why) {
    if (p.opened) return true;
    std::string_view payload;
    p.opened = unpack(Frame{p.stored.h, p.stored.bytes}, &p.payload, &payload, why) &&
               parse_chunk(payload, &p.chunk, why);
    return p.opened;
  }
  static void decode(Part& p) {
    if (!p.decoded && p.kind != Part::kEnd) decode_chunk(p.chunk, &p.ios);
    p.decoded = true;
  }

  // The caller's side of a stored chunk: false at damage.
  bool admit(Part& p) {
    std::string why;
    if (!parse(p, &why)) return false;
    if (!p.checked && !admissible(p.chunk, static_cast<uint32_t>(header_.devices_size()), &why)) return false;
    p.checked = true;
    admit_devices(p.chunk, header_.mutable_devices());
    progress_.account(p.stored.file, p.stored.at, p.stored.end, p.chunk);
    return true;
  }

  // From the frame at `file`, `at` on, the serial reader reads, as it reads damage.
  void read_serially_from(size_t file, uint64_t at) {
    finish_stage(next_part_ - 1);  // the parts before the one the serial reader reads again
    stop();
    impl_.reposition(file, at);
    serial_ = true;
    start();
  }

  // Makes part_ a chunk with rows left to hand out; false at the end.
  bool advance() {
    while (!part_ || row_ >= part_->ios.size()) {
      if (ended_) return false;
      if (!batch_ || next_part_ == batch_->used) {
        leave_batch();
        batch_ = &pipe_.next();
        next_part_ = 0;
      }
      Part& p = batch_->parts[next_part_++];
      part_ = &p;
      row_ = p.first_row;
      switch (p.kind) {
        case Part::kTrouble:
          read_serially_from(p.stored.file, p.stored.at);
          continue;
        case Part::kStored:
          if (!admit(p)) {
            read_serially_from(p.stored.file, p.stored.at);
            continue;
          }
          decode(p);
          break;
        case Part::kAdmitted:
        case Part::kEnd:
          if (p.kind == Part::kAdmitted || serial_) {
            for (const auto& dev : p.devices_added) *header_.add_devices() = dev;
            progress_ = p.progress;
          }
          decode(p);
          ended_ = p.kind == Part::kEnd;
          if (ended_) {
            finish_stage(next_part_);
            part_ = nullptr;
          }
          break;
      }
    }
    return true;
  }

  Impl& impl_;
  v1::TraceHeader header_;
  Impl::Progress progress_;  // as of the chunk handed out last
  bool serial_ = false;      // damage was met: the serial reader reads all
  uint32_t devices_seen_ = 0;  // the thread's: devices known as of the chunks it opened, at least
  // The stage (ReaderOptions::each_batch) runs the parts in order of `seq`,
  // each once, on the thread that finds it next: next_stage_ is the seq of
  // the part it runs next, and only the stage's runner advances it.
  const std::function<void(std::span<const Io>, const v1::TraceHeader&)> stage_;
  v1::TraceHeader stage_header_;  // the stage's: devices as of the part it ran last
  std::atomic<uint64_t> next_stage_ = 0;
  uint64_t taken_ = 0;                               // the thread's: parts taken since start()
  std::deque<std::pair<uint64_t, Part*>> unstaged_;  // the thread's: parts it took that may be unstaged, by seq
  std::deque<std::unique_ptr<Batch>> kept_;          // the caller's: batches left, the stage not done with
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
      ahead_(options.decode_ahead ? std::make_unique<Ahead>(*impl_, options) : nullptr) {
  if (options.each_batch && !options.decode_ahead)
    throw std::logic_error("TraceReader: ReaderOptions::each_batch needs decode_ahead");
}
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

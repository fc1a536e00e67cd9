// TraceReader: streams the IOs of one or more iotape trace files, chunk by
// chunk, in constant memory.
//
// Threads: a TraceReader is used by one thread at a time (it may be moved to
// another); what it returns is valid until the next call that reads. Readers
// of the same files in different threads share nothing. With
// ReaderOptions::decode_ahead the reader runs one thread of its own that
// reads, checks and decodes chunks ahead of the caller (see there); the
// caller still sees one reader, used by one thread at a time.
//
// Damage is not an exception: a file cut short or a chunk whose checksum
// fails ends the stream at the last good chunk, and status() says where and
// why. Exceptions (TraceError) are for files that are not iotape traces at all
// or whose header is unreadable.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "format/io.h"
#include "iotape/v1/trace.pb.h"

namespace iotape::format {

struct ReadStatus {
  bool damaged = false;        // truncated or corrupt data was met
  std::string message;         // the first damage: "FILE: byte N: why"; empty when clean
  uint64_t file_offset = 0;    // where that damage starts
  uint64_t skipped_regions = 0;  // with skip_damaged: damaged regions passed over
};

// A chunk handed out whole (TraceReader::next_chunk).
struct ChunkView {
  const v1::Chunk* chunk = nullptr;  // null at the end of the trace, or at damage
  uint32_t first_row = 0;            // rows before it were read already (next(), seek_time())
};

// What a cleanly closed file's index says (TraceReader::index).
struct IndexedChunk {
  uint64_t file_offset = 0;  // of the chunk's frame
  uint64_t first_index = 0;  // the file's IOs before it
  uint32_t count = 0;
  int64_t min_issue_ns = 0;
  int64_t max_issue_ns = 0;
};
struct TraceIndex {
  uint64_t ios = 0;
  uint64_t dropped_events = 0;
  uint64_t late_ios = 0;
  std::vector<IndexedChunk> chunks;
  std::map<std::string, std::string> metadata;  // the keys its writer set after the first chunk
};

using ReaderStage = std::function<void(std::span<const Io> ios, const v1::TraceHeader& header)>;

struct ReaderOptions {
  // After a damaged chunk, search for the next intact one instead of stopping.
  bool skip_damaged = false;
  // Chunks read, checked and decoded ahead on a thread of the reader's own, in
  // batches (chunks in order until they hold some 128 KiB as stored: one
  // hand-over, not one per chunk, as a long recording's chunks may be small),
  // at most this many batches (0: none, all work is done in the calling
  // thread). The thread reads frames and checks their checksums; the chunks
  // of a batch the caller already waits for are handed over as stored, and
  // the caller unpacks, parses and decodes them while the thread reads on, so
  // both cores decode. The IOs, their order, the damage rules, seek_time and
  // everything the reader reports are as without it: the header's devices,
  // status(), dropped_events() and late_ios() are as of the chunk handed out
  // last, not of those decoded ahead. Memory grows by about decode_ahead + 1
  // batches. The thread ends with the reader; an error reading a file is
  // thrown in the caller's thread, in turn.
  unsigned decode_ahead = 0;
  // A stage of the caller's work that sees every IO read, in order, a chunk's
  // IOs at a time, or a slice of them (kDecodeSlice) as the reader's thread
  // decodes them, with the header as of that chunk. Requires
  // decode_ahead: the reader's thread runs it when it has time, and the
  // caller's thread what is left of a batch when it moves past it; never on
  // two batches at once, so its state needs no lock, but on either thread:
  // give it an allocation of its own, apart from what the caller's thread
  // writes (it is written on another core). It runs up to decode_ahead
  // batches before the caller sees them, or a few after; it has seen every
  // IO when next_batch() returns the end. An exception it throws is thrown
  // by a later call, at the latest the one that would return the end. With a
  // stage, seek_time is a std::logic_error.
  ReaderStage each_batch = nullptr;
};
// The decode_ahead of the tools that read whole traces (report, info, cut):
// enough to keep a second core busy through the uneven cost of chunks.
inline constexpr unsigned kToolDecodeAhead = 4;

class TraceReader {
 public:
  // Several paths are read as one trace (rotated parts, in the order given).
  explicit TraceReader(std::vector<std::string> paths, ReaderOptions options = {});
  explicit TraceReader(const std::string& path, ReaderOptions options = {});
  ~TraceReader();
  TraceReader(TraceReader&&) noexcept;
  TraceReader& operator=(TraceReader&&) noexcept;

  // The first file's header; its device table grows as chunks add devices.
  const v1::TraceHeader& header() const;
  // The trace's metadata: the header's keys and the keys its writer set after
  // the first chunk (TraceWriter::set_metadata; kept in the index: totals
  // known only at the end, such as fidelity.*, replay.device_* and
  // capture.unmatched_completions), which win over a header key of the same
  // name. The files of a rotated trace add their end keys in order; a file
  // without an index (its writer did not close it) adds none.
  const std::map<std::string, std::string>& metadata() const;

  // The next batch of IOs (one chunk), empty at the end. The IOs, and the
  // comm views inside them, stay valid until the next call.
  std::span<const Io> next_batch();
  // One IO at a time; false at the end. `io` is valid until the next call.
  bool next(Io& io);
  // The next chunk, checked as next_batch checks it (the same damage rules)
  // but not decoded: for readers that decode only the columns they need
  // (ChunkColumns in format/chunk_codec.h). Valid until the next call.
  ChunkView next_chunk();

  // Positions the stream so the next IO is the first with issue_ns >= t (IOs
  // written late, out of order, may precede it). Uses the index when present
  // and scans chunks otherwise.
  void seek_time(int64_t t);

  const ReadStatus& status() const;
  uint64_t dropped_events() const;   // sum over the chunks read so far
  uint64_t late_ios() const;
  // True when every file was closed cleanly and has an index.
  bool has_index() const;
  const TraceIndex* index() const;  // first file's index, or nullptr

 private:
  class Impl;
  class Ahead;
  std::unique_ptr<Impl> impl_;
  std::unique_ptr<Ahead> ahead_;  // with decode_ahead: reads impl_ on its thread
};

}  // namespace iotape::format

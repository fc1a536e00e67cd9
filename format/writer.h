// TraceWriter: appends IOs to an iotape trace file.
//
// IOs may arrive slightly out of issue-time order (per-CPU buffers, importers
// of unsorted traces); the writer holds a bounded reorder window and writes
// them sorted. An IO that arrives after its place was already written is still
// written (nothing is lost), counted as "late", and the count is stored.
//
// The file is valid after every chunk: a crash or a full disk loses at most
// the IOs not yet flushed. close() adds the index that makes time seeks fast.
// Chunks are capped by IO count and by trace time, so a damaged byte costs
// the IOs of one chunk (a reader with skip_damaged reads on past it), never
// more than chunk_ios IOs or chunk_span_ns of trace.
//
// Threads: a TraceWriter is used by one thread at a time; it starts none of
// its own. A producer with several threads hands its IOs to one writer thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "format/io.h"
#include "iotape/v1/trace.pb.h"

namespace iotape::format {

enum class Durability {
  kNone,       // write(2) only when a chunk is full or flush() is called
  kWrite,      // also write the pending chunk every flush_interval_ns
  kFdatasync,  // as kWrite, and fdatasync after every chunk written
};

struct WriterOptions {
  uint32_t chunk_ios = 16384;           // IOs per chunk (at most)
  // Issue-time span of a chunk (at most): an IO issued this long after the
  // chunk's first starts the next chunk. 0 = no limit.
  int64_t chunk_span_ns = 10'000'000'000;
  int zstd_level = 9;
  int64_t reorder_window_ns = 0;        // hold IOs this long (issue time) for sorting; 0 = input is sorted
  uint32_t reorder_window_ios = 1 << 20;  // and never more than this many
  Durability durability = Durability::kNone;
  int64_t flush_interval_ns = 1'000'000'000;
  unsigned file_mode = 0644;
  bool overwrite = true;                // false: fail if the file exists
  // Called after every fdatasync with its start and end on CLOCK_BOOTTIME, the
  // capture clock: a recorder leaves out the IOs its syncs cause.
  std::function<void(int64_t begin_ns, int64_t end_ns)> on_sync = {};
};

struct WriterStats {
  uint64_t ios = 0;             // IOs written to chunks so far
  uint64_t chunks = 0;
  uint64_t file_bytes = 0;
  uint64_t late_ios = 0;
  uint64_t dropped_events = 0;
};

class TraceWriter {
 public:
  // Creates (or truncates) `path`. The header is written when the first chunk
  // is, so devices may still be added until then without a device update.
  TraceWriter(std::string path, v1::TraceHeader header, WriterOptions options = {});
  ~TraceWriter();  // closes if close() was not called; never throws
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Adds a device and returns its index. Allowed at any time.
  uint32_t add_device(const v1::Device& device);
  uint32_t device_count() const;
  // Sets a header key/value (before the first chunk) or an index key/value (after).
  void set_metadata(const std::string& key, const std::string& value);

  void append(const Io& io);
  // Records that the producer lost `events` events (ring buffer full, parse
  // failure, ...); stored with the next chunk.
  void add_dropped(uint64_t events);

  // Writes every IO whose reorder window has closed (all of them if `drain`)
  // as a chunk, honouring the durability policy. Cheap if nothing is pending.
  void flush(bool drain = false);
  // Call periodically (e.g. from a capture loop): flushes when the policy
  // says. `now_issue_ns`, the producer's current trace time, also releases IOs
  // older than the reorder window when no newer IO arrives to push them out.
  void tick(int64_t now_issue_ns = kNoTime);
  // Drains, writes the index and tail, fsyncs if durable, closes the file.
  void close();

  const WriterStats& stats() const;
  const std::string& path() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace iotape::format

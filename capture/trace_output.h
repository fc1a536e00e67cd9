// TraceOutput: the files a capture writes, one TraceWriter at a time.
//
// Without rotation the trace is the single file `path`. With rotation
// (by size and/or time) the parts are numbered: for path "week.iot" they are
// week.0000.iot, week.0001.iot, ... (".iot" is added when `path` has another
// extension or none). Every part carries the same header with the same
// trace_id and its own part number, so `TraceReader({parts...})` reads them as
// one trace. A write failure (full disk) throws TraceError; the failed part
// still ends at its last complete chunk. With Durability::kFdatasync a new
// part's directory entry is synced too, so a power loss cannot lose the file.
//
// Retention (keep_ns, max_total_bytes): when a new part starts, the oldest
// closed parts are removed while one ended more than keep_ns ago or the
// closed parts together exceed max_total_bytes; the open part never is. The
// parts left still read as one trace. Each removal is passed to on_remove and
// counted (capture.removed_parts, capture.removed_bytes: in each later part's
// header and the last part's end keys).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "format/writer.h"

namespace iotape::capture {

struct OutputOptions {
  std::string path;
  uint64_t rotate_bytes = 0;  // start a new part once a part reaches this size (0 = never)
  int64_t rotate_ns = 0;      // start a new part after this much time (0 = never)
  bool anonymize = false;     // comm -> stable hash
  int64_t keep_ns = 0;           // remove closed parts that ended longer ago than this (0 = keep)
  uint64_t max_total_bytes = 0;  // remove the oldest closed parts beyond this total (0 = no limit)
  // A part was removed: its path, its bytes and why.
  std::function<void(const std::string& path, uint64_t bytes, const std::string& why)> on_remove;
  format::WriterOptions writer;
};

// "c-" and 8 hex digits of a 64-bit FNV-1a hash: the same name gives the same
// token in every trace, so anonymized traces can still be compared. Not a
// secret: common process names can be guessed back.
std::string anonymize_comm(std::string_view comm);

class TraceOutput {
 public:
  TraceOutput(OutputOptions options, v1::TraceHeader header);
  ~TraceOutput();

  void append(const format::Io& io);
  void add_dropped(uint64_t events);
  void set_metadata(const std::string& key, const std::string& value);  // on the current part
  // Writes every IO appended so far as a chunk, and syncs it as the writer's
  // durability says. Then the current part's first part_bytes() bytes are
  // on storage (stable storage with kFdatasync).
  void flush();
  // Periodic work: rotation by time. Flushing is the caller's to schedule.
  void tick(int64_t now_ns);
  void close();

  uint64_t ios() const;        // over all parts
  uint64_t file_bytes() const; // over all parts
  uint64_t late_ios() const;
  uint64_t part_bytes() const;  // of the current part, the last of paths()
  uint64_t removed_parts() const { return removed_parts_; }
  uint64_t removed_bytes() const { return removed_bytes_; }
  // The parts on disk, oldest first (removed ones left out).
  const std::vector<std::string>& paths() const { return paths_; }

 private:
  std::string part_path(uint32_t part) const;
  void open_part();
  void rotate_if_due(int64_t now_ns);
  void remove_old_parts();

  OutputOptions opt_;
  v1::TraceHeader header_;
  std::unique_ptr<format::TraceWriter> writer_;
  std::vector<std::string> paths_;
  uint32_t next_part_ = 0;
  struct ClosedPart {
    uint64_t bytes;
    int64_t closed_ns;  // CLOCK_BOOTTIME
  };
  std::deque<ClosedPart> closed_;  // the closed parts on disk, like paths_ without the open one
  uint64_t closed_ios_ = 0, closed_bytes_ = 0, closed_late_ = 0;
  uint64_t removed_parts_ = 0, removed_bytes_ = 0;
  int64_t part_start_ns_ = 0;
  std::unordered_map<std::string, std::string> anonymized_;
};

}  // namespace iotape::capture

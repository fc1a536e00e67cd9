// Reader: a trace (one file, or the parts of a rotated capture read as one)
// as Arrow record batches, one per chunk, for iotape.Trace.batches()
// (python/iotape/__init__.py), which wraps each (schema, array) capsule pair
// in a pyarrow.RecordBatch. Memory is bounded by a chunk, whatever the trace's
// length.
//
// Errors: a file that cannot be opened raises OSError (IoError), one that is
// not a trace, or whose header is unreadable, TraceError, from the
// constructor. Damage (a file cut short, a failing checksum) is not an error
// until the good chunks before it are read: next() then raises TraceError
// naming the file and byte.
//
// Thread safety: a Reader is not safe for concurrent use, and the GIL does
// not serialise calls: next() releases it while it reads and decodes a chunk.
// Use one Reader from one thread at a time (iotape makes one per batches()
// generator). The batches it returns are independent of it and of each other.
// Other methods hold the GIL throughout.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "chunk_batch.h"
#include "format/reader.h"

namespace iotape::python {

class Reader {
 public:
  // Opens `paths` (in order: one trace). Throws as above.
  explicit Reader(std::vector<std::string> paths);

  // The header as a dict (header_dict.h), with the final device table.
  pybind11::dict header() const;

  // Positions the stream at the first IO issued at or after `t`
  // (TraceReader::seek_time); the index column then counts from there.
  void seek(int64_t t);

  // The next chunk as (schema, array) capsules of a struct array of `cols`
  // (Col values, distinct, in that order); None at the end; raises TraceError
  // after the last good chunk of a damaged trace. Rows outside [start, end) of
  // issue time are left out (kNoTime and INT64_MAX: no bound); the stream ends
  // at the first chunk that begins at or after `end`. Chunks with no row kept
  // are passed over.
  pybind11::object next(const std::vector<int>& cols, int64_t start, int64_t end);

  // The reader's counts so far (TraceReader::late_ios, dropped_events).
  uint64_t late_ios() const;
  uint64_t dropped_events() const;

 private:
  // The next chunk with rows in [start, end), as a batch; nullopt at the end.
  std::optional<Batch> read(const std::vector<int>& cols, int64_t start, int64_t end);

  format::TraceReader reader_;
  uint64_t index_ = 0;          // the trace-wide index of the next row handed out
  std::vector<uint32_t> rows_;  // the rows of the current chunk kept
};

// The C++ reader alone, for bench/python_bench.py: every chunk decoded into
// IOs (TraceReader::next_batch), nothing built. Returns the number of IOs;
// throws TraceError for a damaged trace. Releases the GIL throughout.
uint64_t read_ios(const std::vector<std::string>& paths);

}  // namespace iotape::python

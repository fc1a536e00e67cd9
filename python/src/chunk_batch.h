// One chunk of a trace as an Arrow record batch: the columns asked for,
// decoded straight into exported Arrow buffers (arrow_export.h), of the rows
// kept. The columns' types and nulls are those of iotape.SCHEMA
// (docs/python.md); names become dictionaries of UTF-8 strings, distinct
// within the chunk, so pandas can make them categories.
//
// Thread safety: touches no Python object and may run without the GIL; the
// chunk and columns passed in are used by this thread alone during the call.
#pragma once

#include <cstdint>
#include <vector>

#include "arrow_export.h"
#include "format/chunk_codec.h"
#include "iotape/v1/trace.pb.h"

namespace iotape::python {

// An exported struct array and its schema; the caller owns both (through
// schema_capsule and array_capsule, or their release callbacks).
struct Batch {
  ArrowSchema* schema;
  ArrowArray* array;
};

// Which rows of a chunk a batch keeps.
struct ChunkRows {
  const std::vector<uint32_t>* kept;  // ascending row numbers; null: every row
  uint64_t first;                     // the trace-wide index of row first_row
  uint32_t first_row;                 // the row the reader handed out first
};

// The batch of `cols` (Col values, distinct, in the batch's order) of the
// chunk's kept rows. `issue` holds the issue times of every row of the chunk
// (decoded first, since queue and completion times are relative to them) and
// is cut to the kept rows and moved into the batch when kIssue is asked for.
// Device names are those of `header`'s device table; codes beyond it are
// nulls. REQUIRES: `issue` started and filled for chunk.size() rows.
Batch chunk_batch(format::ChunkColumns& chunk, FixedColumn<int64_t>& issue, const ChunkRows& rows,
                  const std::vector<int>& cols, const v1::TraceHeader& header);

}  // namespace iotape::python

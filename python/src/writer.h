// Writer: IOs from Arrow record batches into an iotape trace, for
// iotape.write() (python/iotape/__init__.py), which casts every batch to the
// layout write() takes and adds the devices the data refers to first.
//
// Errors: a file that cannot be created raises OSError (IoError); a header
// dict with an unknown field, source or clock, or a batch in another layout,
// raises ValueError; a row without op or issue_ns raises TraceError naming the
// row (the rows before it are written).
//
// Thread safety: a Writer is not safe for concurrent use, and the GIL does
// not serialise calls: write() and close() release it while they append and
// flush. Use one Writer from one thread at a time. Other methods hold the GIL
// throughout.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

#include "format/writer.h"

namespace iotape::python {

class Writer {
 public:
  // Creates (or replaces) the trace at `path` with the header a dict of
  // Trace.header's shape describes (header_dict.h), `chunk_ios` IOs per chunk
  // at most, sorting IOs that arrive up to `reorder_window_ns` late.
  Writer(std::string path, const pybind11::dict& header, uint32_t chunk_ios, int64_t reorder_window_ns);

  // Adds a device (a dict of the header's devices' shape); returns its index.
  uint32_t add_device(const pybind11::dict& device);
  uint32_t device_count() const;

  // Appends the rows of a batch given as (schema, array) capsules of a
  // struct array with the columns, names and Arrow formats of the write layout
  // in writer.cc: device, op (int32 indexes into a dictionary of op names,
  // docs/python.md), flags, offset, length, queue_ns, issue_ns, complete_ns,
  // status, pid, comm (utf8), cgroup, cpu, source_index. Nulls are unknowns
  // (0, kNoTime, "", or -1 for cpu and source_index). The capsules keep
  // their arrays.
  void write(const pybind11::capsule& schema, const pybind11::capsule& array);

  // Writes what is held, the index and the tail, and closes the file. A
  // Writer never closed is closed when Python frees it.
  void close();

  // The writer's counts: ios, chunks, file_bytes, late_ios.
  pybind11::dict stats() const;

 private:
  format::TraceWriter writer_;
};

}  // namespace iotape::python

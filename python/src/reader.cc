// The Python reader: windows, chunks and the GIL (reader.h).
#include "reader.h"

#include <limits>
#include <utility>

#include "format/error.h"
#include "format/io.h"
#include "header_dict.h"

namespace py = pybind11;

namespace iotape::python {

Reader::Reader(std::vector<std::string> paths) : reader_(std::move(paths)) {}

py::dict Reader::header() const { return header_to_dict(reader_.header(), reader_.metadata()); }

void Reader::seek(int64_t t) { reader_.seek_time(t); }

py::object Reader::next(const std::vector<int>& cols, int64_t start, int64_t end) {
  std::optional<Batch> batch;
  {
    py::gil_scoped_release unlocked;
    batch = read(cols, start, end);
  }
  if (!batch) {
    if (reader_.status().damaged) throw format::InputError(reader_.status().message);
    return py::none();
  }
  return py::make_tuple(schema_capsule(batch->schema), array_capsule(batch->array));
}

uint64_t Reader::late_ios() const { return reader_.late_ios(); }

uint64_t Reader::dropped_events() const { return reader_.dropped_events(); }

std::optional<Batch> Reader::read(const std::vector<int>& cols, int64_t start, int64_t end) {
  for (;;) {
    const format::ChunkView view = reader_.next_chunk();
    if (!view.chunk) return std::nullopt;
    format::ChunkColumns chunk(*view.chunk);
    const uint32_t n = chunk.size();
    // Issue times first: the window needs them, and queue and completion
    // times are relative to them.
    FixedColumn<int64_t> issue;
    issue.start(n);
    chunk.issue_ns(0, n, issue.put());
    const int64_t* issue_ns = issue.values;
    if (issue_ns[view.first_row] >= end) return std::nullopt;
    const uint64_t first = index_;
    index_ += n - view.first_row;
    rows_.clear();
    bool all = view.first_row == 0;
    if (start != format::kNoTime || end != std::numeric_limits<int64_t>::max())
      for (uint32_t i = 0; i < n; ++i) all &= issue_ns[i] >= start && issue_ns[i] < end;
    if (!all) {
      for (uint32_t i = view.first_row; i < n; ++i)
        if (issue_ns[i] >= start && issue_ns[i] < end) rows_.push_back(i);
      if (rows_.empty()) continue;
    }
    return chunk_batch(chunk, issue, {all ? nullptr : &rows_, first, view.first_row}, cols, reader_.header());
  }
}

uint64_t read_ios(const std::vector<std::string>& paths) {
  py::gil_scoped_release unlocked;
  format::TraceReader reader(paths);
  uint64_t n = 0;
  for (auto b = reader.next_batch(); !b.empty(); b = reader.next_batch()) n += b.size();
  if (reader.status().damaged) throw format::InputError(reader.status().message);
  return n;
}

}  // namespace iotape::python

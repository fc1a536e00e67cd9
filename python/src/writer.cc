// The Python writer: Arrow batches to IOs (writer.h).
#include "writer.h"

#include <array>
#include <string_view>
#include <utility>
#include <vector>

#include "arrow_c.h"
#include "format/error.h"
#include "format/io.h"
#include "header_dict.h"

namespace py = pybind11;

namespace iotape::python {
namespace {

// The struct layout iotape/__init__.py casts every batch to before writing.
constexpr std::array<std::pair<const char*, const char*>, 14> kWriteLayout = {{
    {"device", "i"}, {"op", "i"}, {"flags", "i"}, {"offset", "l"}, {"length", "l"}, {"queue_ns", "l"},
    {"issue_ns", "l"}, {"complete_ns", "l"}, {"status", "i"}, {"pid", "i"}, {"comm", "u"},
    {"cgroup", "l"}, {"cpu", "i"}, {"source_index", "l"}}};

bool valid_at(const ArrowArray* a, int64_t i) {
  if (a->null_count == 0 || !a->buffers[0]) return true;
  int64_t k = a->offset + i;
  return (static_cast<const uint8_t*>(a->buffers[0])[k / 8] >> (k % 8)) & 1;
}
template <typename T>
T value_at(const ArrowArray* a, int64_t i) {
  return static_cast<const T*>(a->buffers[1])[a->offset + i];
}

format::WriterOptions options(uint32_t chunk_ios, int64_t reorder_window_ns) {
  format::WriterOptions o;
  o.chunk_ios = chunk_ios;
  o.reorder_window_ns = reorder_window_ns;
  return o;
}

// Throws ValueError unless `schema` is kWriteLayout's.
void check_layout(const ArrowSchema* schema) {
  if (std::string_view(schema->format) != "+s" || schema->n_children != static_cast<int64_t>(kWriteLayout.size()))
    throw py::value_error("write: batch is not in the writer's layout");
  for (size_t c = 0; c < kWriteLayout.size(); ++c) {
    const ArrowSchema* cs = schema->children[c];
    if (std::string_view(cs->name) != kWriteLayout[c].first || std::string_view(cs->format) != kWriteLayout[c].second)
      throw py::value_error(std::string("write: column ") + kWriteLayout[c].first + " has Arrow format " + cs->format);
  }
  if (std::string_view(schema->children[1]->dictionary->format) != "u")
    throw py::value_error("write: op must be dictionary-encoded strings");
}

// The op of each entry of the op column's dictionary, looked up once per
// batch; a null entry is Op::kOther. Throws ValueError for an unknown name.
std::vector<format::Op> op_codes(const ArrowArray* op_dict) {
  std::vector<format::Op> op_of(static_cast<size_t>(op_dict->length));
  for (int64_t k = 0; k < op_dict->length; ++k) {
    auto* offs = static_cast<const int32_t*>(op_dict->buffers[1]) + op_dict->offset;
    std::string_view name(static_cast<const char*>(op_dict->buffers[2]) + offs[k],
                          static_cast<size_t>(offs[k + 1] - offs[k]));
    auto op = format::op_from_name(name);
    if (!op && valid_at(op_dict, k)) throw py::value_error("write: unknown op '" + std::string(name) + "'");
    op_of[k] = op.value_or(format::Op::kOther);
  }
  return op_of;
}

// Row r of a batch in kWriteLayout: index i of its columns `col`. Throws
// InputError when op or issue_ns is null.
format::Io io_at(const ArrowArray* const* col, const std::vector<format::Op>& op_of, int64_t r, int64_t i) {
  format::Io io;
  auto int32_or = [&](int c, int32_t dflt) { return valid_at(col[c], i) ? value_at<int32_t>(col[c], i) : dflt; };
  auto int64_or = [&](int c, int64_t dflt) { return valid_at(col[c], i) ? value_at<int64_t>(col[c], i) : dflt; };
  io.device = static_cast<uint32_t>(int32_or(0, 0));
  if (!valid_at(col[1], i)) throw format::InputError("write: row " + std::to_string(r) + " has no op");
  io.op = op_of[static_cast<size_t>(value_at<int32_t>(col[1], i))];
  io.flags = static_cast<uint32_t>(int32_or(2, 0));
  io.offset = static_cast<uint64_t>(int64_or(3, 0));
  io.length = static_cast<uint64_t>(int64_or(4, 0));
  io.queue_ns = int64_or(5, format::kNoTime);
  if (!valid_at(col[6], i)) throw format::InputError("write: row " + std::to_string(r) + " has no issue_ns");
  io.issue_ns = value_at<int64_t>(col[6], i);
  io.complete_ns = int64_or(7, format::kNoTime);
  io.status = int32_or(8, 0);
  io.pid = static_cast<uint32_t>(int32_or(9, 0));
  if (valid_at(col[10], i)) {
    const auto* comm_offsets = static_cast<const int32_t*>(col[10]->buffers[1]);
    const auto* comm_data = static_cast<const char*>(col[10]->buffers[2]);
    const int64_t k = col[10]->offset + i;
    io.comm = std::string_view(comm_data + comm_offsets[k], static_cast<size_t>(comm_offsets[k + 1] - comm_offsets[k]));
  }
  io.cgroup = static_cast<uint64_t>(int64_or(11, 0));
  io.cpu = int32_or(12, -1);
  io.source_index = int64_or(13, -1);
  return io;
}

}  // namespace

Writer::Writer(std::string path, const py::dict& header, uint32_t chunk_ios, int64_t reorder_window_ns)
    : writer_(std::move(path), header_from_dict(header), options(chunk_ios, reorder_window_ns)) {}

uint32_t Writer::add_device(const py::dict& d) { return writer_.add_device(device_from_dict(d)); }

uint32_t Writer::device_count() const { return writer_.device_count(); }

void Writer::write(const py::capsule& schema_cap, const py::capsule& array_cap) {
  auto* schema = static_cast<ArrowSchema*>(PyCapsule_GetPointer(schema_cap.ptr(), "arrow_schema"));
  auto* array = static_cast<ArrowArray*>(PyCapsule_GetPointer(array_cap.ptr(), "arrow_array"));
  if (!schema || !array) throw py::error_already_set();
  check_layout(schema);
  const ArrowArray* const* col = array->children;
  const std::vector<format::Op> op_of = op_codes(col[1]->dictionary);
  py::gil_scoped_release unlocked;
  for (int64_t r = 0; r < array->length; ++r)
    writer_.append(io_at(col, op_of, r, array->offset + r));  // children index past the struct's own offset
}

void Writer::close() {
  py::gil_scoped_release unlocked;
  writer_.close();
}

py::dict Writer::stats() const {
  py::dict o;
  o["ios"] = writer_.stats().ios;
  o["chunks"] = writer_.stats().chunks;
  o["file_bytes"] = writer_.stats().file_bytes;
  o["late_ios"] = writer_.stats().late_ios;
  return o;
}

}  // namespace iotape::python

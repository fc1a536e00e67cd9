// iotape._ext: the trace reader and writer for Python. Chunks become Arrow
// record batches filled here, column by column, and handed to pyarrow through
// the Arrow C data interface (PyCapsules), so no Python code runs per IO.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <array>
#include <bit>
#include <limits>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "arrow_export.h"
#include "chunk_batch.h"
#include "columns.h"
#include "header_dict.h"
#include "reader.h"
#include "traces/chunk_codec.h"
#include "traces/error.h"
#include "traces/io.h"
#include "traces/reader.h"
#include "traces/version.h"
#include "traces/writer.h"

namespace py = pybind11;

namespace iotape::python {
namespace {

// ---------------------------------------------------------------- writing

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

class Writer {
 public:
  Writer(std::string path, const py::dict& header, uint32_t chunk_ios, int64_t reorder_window_ns)
      : writer_(std::move(path), header_from_dict(header), options(chunk_ios, reorder_window_ns)) {}

  uint32_t add_device(const py::dict& d) { return writer_.add_device(device_from_dict(d)); }
  uint32_t device_count() const { return writer_.device_count(); }

  void write(const py::capsule& schema_cap, const py::capsule& array_cap) {
    auto* schema = static_cast<ArrowSchema*>(PyCapsule_GetPointer(schema_cap.ptr(), "arrow_schema"));
    auto* array = static_cast<ArrowArray*>(PyCapsule_GetPointer(array_cap.ptr(), "arrow_array"));
    if (!schema || !array) throw py::error_already_set();
    if (std::string_view(schema->format) != "+s" || schema->n_children != static_cast<int64_t>(kWriteLayout.size()))
      throw py::value_error("write: batch is not in the writer's layout");
    for (size_t c = 0; c < kWriteLayout.size(); ++c) {
      const ArrowSchema* cs = schema->children[c];
      if (std::string_view(cs->name) != kWriteLayout[c].first || std::string_view(cs->format) != kWriteLayout[c].second)
        throw py::value_error(std::string("write: column ") + kWriteLayout[c].first + " has Arrow format " + cs->format);
    }
    if (std::string_view(schema->children[1]->dictionary->format) != "u")
      throw py::value_error("write: op must be dictionary-encoded strings");
    const ArrowArray* const* col = array->children;
    // Op codes for the op column's dictionary, looked up once per batch.
    const ArrowArray* op_dict = col[1]->dictionary;
    std::vector<Op> op_of(static_cast<size_t>(op_dict->length));
    for (int64_t k = 0; k < op_dict->length; ++k) {
      auto* offs = static_cast<const int32_t*>(op_dict->buffers[1]) + op_dict->offset;
      std::string_view name(static_cast<const char*>(op_dict->buffers[2]) + offs[k],
                            static_cast<size_t>(offs[k + 1] - offs[k]));
      auto op = op_from_name(name);
      if (!op && valid_at(op_dict, k)) throw py::value_error("write: unknown op '" + std::string(name) + "'");
      op_of[k] = op.value_or(Op::kOther);
    }
    py::gil_scoped_release unlocked;
    const auto* comm_offsets = static_cast<const int32_t*>(col[10]->buffers[1]);
    const auto* comm_data = static_cast<const char*>(col[10]->buffers[2]);
    for (int64_t r = 0; r < array->length; ++r) {
      const int64_t i = array->offset + r;  // children index past the struct's own offset
      Io io;
      auto int32_or = [&](int c, int32_t dflt) { return valid_at(col[c], i) ? value_at<int32_t>(col[c], i) : dflt; };
      auto int64_or = [&](int c, int64_t dflt) { return valid_at(col[c], i) ? value_at<int64_t>(col[c], i) : dflt; };
      io.device = static_cast<uint32_t>(int32_or(0, 0));
      if (!valid_at(col[1], i)) throw InputError("write: row " + std::to_string(r) + " has no op");
      io.op = op_of[static_cast<size_t>(value_at<int32_t>(col[1], i))];
      io.flags = static_cast<uint32_t>(int32_or(2, 0));
      io.offset = static_cast<uint64_t>(int64_or(3, 0));
      io.length = static_cast<uint64_t>(int64_or(4, 0));
      io.queue_ns = int64_or(5, kNoTime);
      if (!valid_at(col[6], i)) throw InputError("write: row " + std::to_string(r) + " has no issue_ns");
      io.issue_ns = value_at<int64_t>(col[6], i);
      io.complete_ns = int64_or(7, kNoTime);
      io.status = int32_or(8, 0);
      io.pid = static_cast<uint32_t>(int32_or(9, 0));
      if (valid_at(col[10], i)) {
        const int64_t k = col[10]->offset + i;
        io.comm = std::string_view(comm_data + comm_offsets[k], static_cast<size_t>(comm_offsets[k + 1] - comm_offsets[k]));
      }
      io.cgroup = static_cast<uint64_t>(int64_or(11, 0));
      io.cpu = int32_or(12, -1);
      io.source_index = int64_or(13, -1);
      writer_.append(io);
    }
  }

  void close() {
    py::gil_scoped_release unlocked;
    writer_.close();
  }
  py::dict stats() const {
    py::dict o;
    o["ios"] = writer_.stats().ios;
    o["chunks"] = writer_.stats().chunks;
    o["file_bytes"] = writer_.stats().file_bytes;
    o["late_ios"] = writer_.stats().late_ios;
    return o;
  }

 private:
  static WriterOptions options(uint32_t chunk_ios, int64_t reorder_window_ns) {
    WriterOptions o;
    o.chunk_ios = chunk_ios;
    o.reorder_window_ns = reorder_window_ns;
    return o;
  }
  TraceWriter writer_;
};

}  // namespace
}  // namespace iotape::python

PYBIND11_MODULE(_ext, m) {
  using namespace iotape::python;
  m.doc() = "iotape's trace reader and writer (use the iotape package, not this module)";

  static py::exception<iotape::TraceError> trace_error(m, "TraceError", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const iotape::IoError& e) {
      PyErr_SetObject(PyExc_OSError, py::make_tuple(e.errno_value(), e.what()).ptr());
    } catch (const iotape::UsageError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const iotape::TraceError& e) {
      trace_error(e.what());
    }
  });

  py::list names;
  for (const char* c : kColNames) names.append(c);
  m.attr("COLUMNS") = names;
  m.attr("VERSION") = iotape::kVersion;
  m.attr("NO_TIME") = iotape::kNoTime;

  py::class_<Reader>(m, "Reader")
      .def(py::init<std::vector<std::string>>())
      .def("header", &Reader::header)
      .def("seek", &Reader::seek)
      .def("next", &Reader::next)
      .def_property_readonly("late_ios", &Reader::late_ios)
      .def_property_readonly("dropped_events", &Reader::dropped_events);

  m.def("read_ios", &read_ios);

  py::class_<Writer>(m, "Writer")
      .def(py::init<std::string, py::dict, uint32_t, int64_t>())
      .def("add_device", &Writer::add_device)
      .def_property_readonly("device_count", &Writer::device_count)
      .def("write", &Writer::write)
      .def("close", &Writer::close)
      .def("stats", &Writer::stats);
}

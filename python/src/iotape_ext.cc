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
#include "columns.h"
#include "header_dict.h"
#include "traces/chunk_codec.h"
#include "traces/error.h"
#include "traces/io.h"
#include "traces/reader.h"
#include "traces/version.h"
#include "traces/writer.h"

namespace py = pybind11;

namespace iotape::python {
namespace {

// ---------------------------------------------------------------- reading

class Reader {
 public:
  explicit Reader(std::vector<std::string> paths) : reader_(std::move(paths)) {}

  py::dict header() const { return header_to_dict(reader_.header(), reader_.index()); }

  void seek(int64_t t) { reader_.seek_time(t); }

  // The next chunk as (schema, array) capsules of a struct array; None at the
  // end; raises TraceError after the last good chunk of a damaged trace.
  // Rows outside [start, end) of issue time are left out; the stream ends at
  // the first chunk that begins at or after `end`.
  py::object next(const std::vector<int>& cols, int64_t start, int64_t end) {
    std::optional<Batch> batch;
    {
      py::gil_scoped_release unlocked;
      batch = read(cols, start, end);
    }
    if (!batch) {
      if (reader_.status().damaged) throw InputError(reader_.status().message);
      return py::none();
    }
    return py::make_tuple(schema_capsule(batch->schema), array_capsule(batch->array));
  }

  uint64_t late_ios() const { return reader_.late_ios(); }
  uint64_t dropped_events() const { return reader_.dropped_events(); }

 private:
  struct Batch {
    ArrowSchema* schema;
    ArrowArray* array;
  };

  // The next chunk with rows in [start, end), its columns decoded straight
  // into Arrow buffers; nullopt at the end.
  std::optional<Batch> read(const std::vector<int>& cols, int64_t start, int64_t end) {
    for (;;) {
      const ChunkView view = reader_.next_chunk();
      if (!view.chunk) return std::nullopt;
      ChunkColumns chunk(*view.chunk);
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
      if (start != kNoTime || end != std::numeric_limits<int64_t>::max())
        for (uint32_t i = 0; i < n; ++i) all &= issue_ns[i] >= start && issue_ns[i] < end;
      if (!all) {
        for (uint32_t i = view.first_row; i < n; ++i)
          if (issue_ns[i] >= start && issue_ns[i] < end) rows_.push_back(i);
        if (rows_.empty()) continue;
      }
      return convert(chunk, issue, all ? nullptr : &rows_, first, view.first_row, cols);
    }
  }

  // `issue` holds the issue times of every row of the chunk.
  Batch convert(ChunkColumns& chunk, FixedColumn<int64_t>& issue, const std::vector<uint32_t>* rows, uint64_t first,
                uint32_t first_row, const std::vector<int>& cols) {
    bool want[kColCount] = {};
    for (int c : cols) want[c] = true;
    const uint32_t n = chunk.size();
    const size_t kept = rows ? rows->size() : n;

    FixedColumn<int64_t> index, offset, length, queue, complete, cgroup, source;
    FixedColumn<int32_t> device, device_name, flags, status, pid, comm, cpu;
    FixedColumn<int8_t> op;
    // Every column but index is decoded for the whole chunk, then cut to the kept rows.
    // (Issue times were decoded before, by read.)
    auto decode = [&](Col c, auto& column, auto&& decoder) {
      if (!want[c]) return;
      column.start(n);
      decoder(column.put());
      if (rows) column.keep(*rows);
    };
    const int64_t* issue_ns = issue.values;
    auto issue_at = [issue_ns](uint32_t i) { return issue_ns[i]; };
    if (want[kIndex]) {
      index.start(kept);
      if (rows)
        for (size_t r = 0; r < kept; ++r) index.values[r] = static_cast<int64_t>(first + (*rows)[r] - first_row);
      else
        for (size_t r = 0; r < kept; ++r) index.values[r] = static_cast<int64_t>(first + r);
    }
    decode(kQueue, queue, [&](auto put) { chunk.queue_ns(0, n, issue_at, put); });
    decode(kComplete, complete, [&](auto put) { chunk.complete_ns(0, n, issue_at, put); });
    decode(kDevice, device, [&](auto put) { chunk.device(0, n, put); });
    decode(kDeviceName, device_name, [&](auto put) { chunk.device(0, n, put); });
    decode(kOp, op, [&](auto put) { chunk.op(0, n, put); });
    decode(kFlags, flags, [&](auto put) { chunk.flags(0, n, put); });
    decode(kOffset, offset, [&](auto put) { chunk.offset(0, n, put); });
    decode(kLength, length, [&](auto put) { chunk.length(0, n, put); });
    decode(kStatus, status, [&](auto put) { chunk.status(0, n, put); });
    decode(kPid, pid, [&](auto put) { chunk.pid(0, n, put); });
    decode(kComm, comm, [&](auto put) { chunk.comm(0, n, put); });
    decode(kCpu, cpu, [&](auto put) { chunk.cpu(0, n, put); });
    decode(kCgroup, cgroup, [&](auto put) { chunk.cgroup(0, n, put); });
    decode(kSourceIndex, source, [&](auto put) { chunk.source_index(0, n, put); });
    if (want[kIssue] && rows) issue.keep(*rows);  // last: the times above were relative to it
    if (want[kQueue]) queue.null_unless(kept, [](int64_t t) { return t != kNoTime; });
    if (want[kComplete]) complete.null_unless(kept, [](int64_t t) { return t != kNoTime; });
    if (want[kPid]) pid.null_unless(kept, [](int32_t p) { return p != 0; });
    if (want[kCpu]) cpu.null_unless(kept, [](int32_t c) { return c >= 0; });
    if (want[kCgroup]) cgroup.null_unless(kept, [](int64_t g) { return g != 0; });
    if (want[kSourceIndex]) source.null_unless(kept, [](int64_t s) { return s >= 0; });

    // Dictionaries: device names (distinct, since pandas categories must be)
    // by device index, and the chunk's process names. Codes are turned into
    // dictionary indexes in place; -1 is null.
    std::vector<std::string> device_names;
    if (want[kDeviceName]) {
      const auto& devices = reader_.header().devices();
      std::vector<int32_t> code(devices.size());
      std::unordered_map<std::string, int32_t> seen;
      for (int d = 0; d < devices.size(); ++d) {
        auto name = valid_utf8(devices[d].name());
        auto [it, added] = seen.emplace(name, static_cast<int32_t>(device_names.size()));
        if (added) device_names.push_back(name);
        code[d] = it->second;
      }
      for (size_t r = 0; r < kept; ++r) {
        const auto d = static_cast<uint32_t>(device_name.values[r]);
        device_name.values[r] = d < code.size() ? code[d] : -1;
      }
      device_name.null_unless(kept, [](int32_t c) { return c >= 0; });
    }
    std::vector<std::string> comm_names;
    if (want[kComm]) {
      std::vector<int32_t> code(chunk.comm_codes(), -1);
      std::unordered_map<std::string_view, int32_t> seen;
      for (uint32_t k = 1; k < code.size(); ++k) {
        auto [it, added] = seen.emplace(chunk.comm_name(k), static_cast<int32_t>(comm_names.size()));
        if (added) comm_names.push_back(valid_utf8(chunk.comm_name(k)));
        code[k] = it->second;
      }
      for (size_t r = 0; r < kept; ++r) comm.values[r] = code[static_cast<uint32_t>(comm.values[r])];
      comm.null_unless(kept, [](int32_t c) { return c >= 0; });
    }
    // Names that differ only in invalid bytes may collide after U+FFFD
    // replacement; pandas needs distinct categories, so make them so.
    for (auto* names : {&device_names, &comm_names}) {
      std::unordered_map<std::string, int> count;
      for (auto& s : *names)
        if (int k = count[s]++; k) s += "#" + std::to_string(k);
    }

    std::vector<ArrowArray*> arrays;
    std::vector<ArrowSchema*> schemas;
    for (int c : cols) {
      ArrowArray* a = nullptr;
      ArrowSchema* s = nullptr;
      const char* name = kColNames[c];
      switch (c) {
        case kIndex: a = index.finish(kept); s = new_schema("l", name, false); break;
        case kDevice: a = device.finish(kept); s = new_schema("i", name, false); break;
        case kDeviceName:
          a = device_name.finish(kept, string_array(device_names));
          s = new_schema("i", name, true, new_schema("u", "", false));
          break;
        case kOp: {
          std::vector<std::string> ops;
          for (int k = 0; k < kOpCount; ++k) ops.emplace_back(op_name(static_cast<Op>(k)));
          a = op.finish(kept, string_array(ops));
          s = new_schema("c", name, false, new_schema("u", "", false));
          break;
        }
        case kFlags: a = flags.finish(kept); s = new_schema("i", name, false); break;
        case kOffset: a = offset.finish(kept); s = new_schema("l", name, false); break;
        case kLength: a = length.finish(kept); s = new_schema("l", name, false); break;
        case kQueue: a = queue.finish(kept); s = new_schema("l", name, true); break;
        case kIssue: a = issue.finish(kept); s = new_schema("l", name, false); break;
        case kComplete: a = complete.finish(kept); s = new_schema("l", name, true); break;
        case kStatus: a = status.finish(kept); s = new_schema("i", name, false); break;
        case kPid: a = pid.finish(kept); s = new_schema("i", name, true); break;
        case kComm:
          a = comm.finish(kept, string_array(comm_names));
          s = new_schema("i", name, true, new_schema("u", "", false));
          break;
        case kCpu: a = cpu.finish(kept); s = new_schema("i", name, true); break;
        case kCgroup: a = cgroup.finish(kept); s = new_schema("l", name, true); break;
        case kSourceIndex: a = source.finish(kept); s = new_schema("l", name, true); break;
      }
      arrays.push_back(a);
      schemas.push_back(s);
    }
    return {new_struct_schema(std::move(schemas)), new_struct_array(static_cast<int64_t>(kept), std::move(arrays))};
  }

  TraceReader reader_;
  uint64_t index_ = 0;
  std::vector<uint32_t> rows_;  // the rows of the current chunk kept
};

// The C++ reader alone, for bench/python_bench.py: every chunk decoded into
// IOs (TraceReader::next_batch), nothing built. Returns the number of IOs.
uint64_t read_ios(const std::vector<std::string>& paths) {
  py::gil_scoped_release unlocked;
  TraceReader reader(paths);
  uint64_t n = 0;
  for (auto b = reader.next_batch(); !b.empty(); b = reader.next_batch()) n += b.size();
  if (reader.status().damaged) throw InputError(reader.status().message);
  return n;
}

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

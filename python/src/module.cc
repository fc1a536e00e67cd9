// iotape._ext: the trace reader and writer for Python. Chunks become Arrow
// record batches filled in C++, column by column, and handed to pyarrow
// through the Arrow C data interface (PyCapsules), so no Python code runs per
// IO. This file only binds: reader.h, writer.h and header_dict.h hold the
// work. Use the iotape package (python/iotape), not this module.
//
// Errors cross as: IoError -> OSError(errno, message); UsageError ->
// ValueError; any other TraceError -> iotape.TraceError (a ValueError).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "columns.h"
#include "format/error.h"
#include "format/io.h"
#include "format/version.h"
#include "reader.h"
#include "writer.h"

namespace py = pybind11;

PYBIND11_MODULE(_ext, m) {
  using namespace iotape::python;
  m.doc() = "iotape's trace reader and writer (use the iotape package, not this module)";

  static py::exception<iotape::format::TraceError> trace_error(m, "TraceError", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const iotape::format::IoError& e) {
      PyErr_SetObject(PyExc_OSError, py::make_tuple(e.errno_value(), e.what()).ptr());
    } catch (const iotape::format::UsageError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const iotape::format::TraceError& e) {
      trace_error(e.what());
    }
  });

  py::list names;
  for (const char* c : kColNames) names.append(c);
  m.attr("COLUMNS") = names;
  m.attr("VERSION") = iotape::format::kVersion;
  m.attr("NO_TIME") = iotape::format::kNoTime;

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

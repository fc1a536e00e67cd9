// Trace headers to and from Python dicts (header_dict.h).
#include "header_dict.h"

#include <array>
#include <string>

#include "format/version.h"

namespace py = pybind11;

namespace iotape::python {
namespace {

constexpr std::array<const char*, 6> kSourceNames = {"unknown", "ebpf", "blktrace", "import", "replay", "synth"};
constexpr std::array<const char*, 5> kClockNames = {"unknown", "monotonic", "boottime", "realtime", "relative"};

py::str bytes_to_str(const std::string& s) {
  PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "surrogateescape");
  if (!o) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(o);
}

std::string str_to_bytes(const py::handle& h) {
  if (py::isinstance<py::bytes>(h)) return h.cast<std::string>();
  PyObject* b = PyUnicode_AsEncodedString(py::str(h).ptr(), "utf-8", "surrogateescape");
  if (!b) throw py::error_already_set();
  auto bytes = py::reinterpret_steal<py::bytes>(b);
  return bytes.cast<std::string>();
}

template <size_t N>
size_t name_index(const std::array<const char*, N>& names, const std::string& name, const char* what) {
  for (size_t i = 0; i < N; ++i)
    if (name == names[i]) return i;
  throw py::value_error(std::string("unknown ") + what + " '" + name + "'");
}

py::dict device_to_dict(const v1::Device& d) {
  py::dict o;
  o["name"] = bytes_to_str(d.name());
  o["major"] = d.major();
  o["minor"] = d.minor();
  o["model"] = bytes_to_str(d.model());
  o["serial"] = bytes_to_str(d.serial());
  o["size_bytes"] = d.size_bytes();
  o["logical_block_size"] = d.logical_block_size();
  o["physical_block_size"] = d.physical_block_size();
  o["rotational"] = d.rotational();
  return o;
}

}  // namespace

v1::Device device_from_dict(const py::dict& o) {
  v1::Device d;
  for (auto [k, v] : o) {
    auto key = k.cast<std::string>();
    if (key == "name") d.set_name(str_to_bytes(v));
    else if (key == "major") d.set_major(v.cast<uint32_t>());
    else if (key == "minor") d.set_minor(v.cast<uint32_t>());
    else if (key == "model") d.set_model(str_to_bytes(v));
    else if (key == "serial") d.set_serial(str_to_bytes(v));
    else if (key == "size_bytes") d.set_size_bytes(v.cast<uint64_t>());
    else if (key == "logical_block_size") d.set_logical_block_size(v.cast<uint32_t>());
    else if (key == "physical_block_size") d.set_physical_block_size(v.cast<uint32_t>());
    else if (key == "rotational") d.set_rotational(v.cast<bool>());
    else throw py::value_error("unknown device field '" + key + "'");
  }
  return d;
}

py::dict header_to_dict(const v1::TraceHeader& h, const std::map<std::string, std::string>& metadata) {
  py::dict o;
  o["format_version"] = h.format_version();
  o["creator"] = h.creator();
  o["creator_version"] = h.creator_version();
  o["source"] = static_cast<size_t>(h.source()) < kSourceNames.size() ? kSourceNames[h.source()] : "unknown";
  o["source_detail"] = h.source_detail();
  o["host"] = bytes_to_str(h.host());
  o["kernel"] = bytes_to_str(h.kernel());
  o["clock"] = static_cast<size_t>(h.clock()) < kClockNames.size() ? kClockNames[h.clock()] : "unknown";
  o["anchor_trace_ns"] = h.anchor_trace_ns();
  o["anchor_unix_ns"] = h.anchor_unix_ns();
  py::list devs;
  for (const auto& d : h.devices()) devs.append(device_to_dict(d));
  o["devices"] = devs;
  py::dict meta;
  for (const auto& [k, v] : metadata) meta[py::str(k)] = bytes_to_str(v);
  o["metadata"] = meta;
  o["trace_id"] = h.trace_id();
  o["part"] = h.part();
  return o;
}

v1::TraceHeader header_from_dict(const py::dict& o) {
  v1::TraceHeader h;
  h.set_source(v1::SOURCE_UNKNOWN);
  h.set_source_detail("python");
  for (auto [k, v] : o) {
    auto key = k.cast<std::string>();
    if (key == "format_version" || key == "creator" || key == "creator_version") continue;  // the writer's own
    if (key == "source") h.set_source(static_cast<v1::Source>(name_index(kSourceNames, v.cast<std::string>(), "source")));
    else if (key == "source_detail") h.set_source_detail(v.cast<std::string>());
    else if (key == "host") h.set_host(str_to_bytes(v));
    else if (key == "kernel") h.set_kernel(str_to_bytes(v));
    else if (key == "clock") h.set_clock(static_cast<v1::ClockDomain>(name_index(kClockNames, v.cast<std::string>(), "clock")));
    else if (key == "anchor_trace_ns") h.set_anchor_trace_ns(v.cast<int64_t>());
    else if (key == "anchor_unix_ns") h.set_anchor_unix_ns(v.cast<int64_t>());
    else if (key == "devices") {
      for (auto d : v) *h.add_devices() = device_from_dict(d.cast<py::dict>());
    } else if (key == "metadata") {
      for (auto [mk, mv] : v.cast<py::dict>()) (*h.mutable_metadata())[mk.cast<std::string>()] = str_to_bytes(mv);
    } else if (key == "trace_id") h.set_trace_id(v.cast<std::string>());
    else if (key == "part") h.set_part(v.cast<uint32_t>());
    else throw py::value_error("unknown header field '" + key + "'");
  }
  h.set_format_version(format::kFormatVersion);
  h.set_creator("iotape");
  h.set_creator_version(format::kVersion);
  return h;
}

}  // namespace iotape::python

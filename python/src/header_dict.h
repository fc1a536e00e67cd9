// A trace's header as the Python dict Trace.header returns and write() takes:
// format_version, creator, creator_version, source, source_detail, host,
// kernel, clock, anchor_trace_ns, anchor_unix_ns, devices (a list of dicts:
// name, major, minor, model, serial, size_bytes, logical_block_size,
// physical_block_size, rotational), metadata (a dict), trace_id and part.
//
// Names that are bytes in the format (host, kernel, device names, model and
// serial, metadata values) are str decoded with surrogateescape, so bytes that
// are not UTF-8 come back byte for byte; bytes objects are taken as they are.
// Source and clock are names ("import", "realtime", ...).
//
// Thread safety: every function here makes or reads Python objects.
// REQUIRES: the GIL.
#pragma once

#include <pybind11/pybind11.h>

#include <map>
#include <string>

#include "iotape/v1/trace.pb.h"

namespace iotape::python {

// The header's dict, as TraceReader::header gives it (with the final device
// table: importers add devices as they go). Its metadata is `metadata`: the
// trace's, with the keys written at its end.
pybind11::dict header_to_dict(const v1::TraceHeader& header, const std::map<std::string, std::string>& metadata);

// The header a dict of header_to_dict's shape describes; absent fields are
// unknown (source_detail "python"). format_version, creator and
// creator_version are ignored: they are the writer's own. Throws ValueError
// (pybind11::value_error) for an unknown field, source or clock, and
// pybind11::cast_error for a value of the wrong type.
v1::TraceHeader header_from_dict(const pybind11::dict& header);

// A device table entry from a dict of the shape of header_to_dict's devices;
// throws as header_from_dict.
v1::Device device_from_dict(const pybind11::dict& device);

}  // namespace iotape::python

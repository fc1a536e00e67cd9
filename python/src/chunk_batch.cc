// A chunk's columns decoded into Arrow arrays (chunk_batch.h).
#include "chunk_batch.h"

#include <array>
#include <string>
#include <string_view>
#include <unordered_map>

#include "columns.h"
#include "format/io.h"

namespace iotape::python {
namespace {

using Want = std::array<bool, kColCount>;

// The batch's columns (but issue times, which the caller holds) as they are
// decoded, and the values of the name columns' dictionaries.
struct Columns {
  FixedColumn<int64_t> index, offset, length, queue, complete, cgroup, source;
  FixedColumn<int32_t> device, device_name, flags, status, pid, comm, cpu;
  FixedColumn<int8_t> op;
  std::vector<std::string> device_names, comm_names;
};

// Every wanted column but index is decoded for the whole chunk, then cut to
// the kept rows; issue times, decoded before, are cut last, since the times
// decoded here are relative to them.
void decode_columns(format::ChunkColumns& chunk, FixedColumn<int64_t>& issue, const ChunkRows& rows, const Want& want,
                    Columns& out) {
  const uint32_t n = chunk.size();
  const std::vector<uint32_t>* kept = rows.kept;
  auto decode = [&](Col c, auto& column, auto&& decoder) {
    if (!want[c]) return;
    column.start(n);
    decoder(column.put());
    if (kept) column.keep(*kept);
  };
  const int64_t* issue_ns = issue.values;
  auto issue_at = [issue_ns](uint32_t i) { return issue_ns[i]; };
  if (want[kIndex]) {
    const size_t size = kept ? kept->size() : n;
    out.index.start(size);
    if (kept)
      for (size_t r = 0; r < size; ++r) out.index.values[r] = static_cast<int64_t>(rows.first + (*kept)[r] - rows.first_row);
    else
      for (size_t r = 0; r < size; ++r) out.index.values[r] = static_cast<int64_t>(rows.first + r);
  }
  decode(kQueue, out.queue, [&](auto put) { chunk.queue_ns(0, n, issue_at, put); });
  decode(kComplete, out.complete, [&](auto put) { chunk.complete_ns(0, n, issue_at, put); });
  decode(kDevice, out.device, [&](auto put) { chunk.device(0, n, put); });
  decode(kDeviceName, out.device_name, [&](auto put) { chunk.device(0, n, put); });
  decode(kOp, out.op, [&](auto put) { chunk.op(0, n, put); });
  decode(kFlags, out.flags, [&](auto put) { chunk.flags(0, n, put); });
  decode(kOffset, out.offset, [&](auto put) { chunk.offset(0, n, put); });
  decode(kLength, out.length, [&](auto put) { chunk.length(0, n, put); });
  decode(kStatus, out.status, [&](auto put) { chunk.status(0, n, put); });
  decode(kPid, out.pid, [&](auto put) { chunk.pid(0, n, put); });
  decode(kComm, out.comm, [&](auto put) { chunk.comm(0, n, put); });
  decode(kCpu, out.cpu, [&](auto put) { chunk.cpu(0, n, put); });
  decode(kCgroup, out.cgroup, [&](auto put) { chunk.cgroup(0, n, put); });
  decode(kSourceIndex, out.source, [&](auto put) { chunk.source_index(0, n, put); });
  if (want[kIssue] && kept) issue.keep(*kept);
}

// The stored values that mean unknown become nulls.
void null_unknowns(const Want& want, size_t kept, Columns& c) {
  if (want[kQueue]) c.queue.null_unless(kept, [](int64_t t) { return t != format::kNoTime; });
  if (want[kComplete]) c.complete.null_unless(kept, [](int64_t t) { return t != format::kNoTime; });
  if (want[kPid]) c.pid.null_unless(kept, [](int32_t p) { return p != 0; });
  if (want[kCpu]) c.cpu.null_unless(kept, [](int32_t cpu) { return cpu >= 0; });
  if (want[kCgroup]) c.cgroup.null_unless(kept, [](int64_t g) { return g != 0; });
  if (want[kSourceIndex]) c.source.null_unless(kept, [](int64_t s) { return s >= 0; });
}

// Device names, distinct (pandas categories must be), by device index: the
// column's device indexes become dictionary indexes in place; -1 is null.
void device_dictionary(const v1::TraceHeader& header, size_t kept, Columns& c) {
  const auto& devices = header.devices();
  std::vector<int32_t> code(devices.size());
  std::unordered_map<std::string, int32_t> seen;
  for (int d = 0; d < devices.size(); ++d) {
    auto name = valid_utf8(devices[d].name());
    auto [it, added] = seen.emplace(name, static_cast<int32_t>(c.device_names.size()));
    if (added) c.device_names.push_back(name);
    code[d] = it->second;
  }
  for (size_t r = 0; r < kept; ++r) {
    const auto d = static_cast<uint32_t>(c.device_name.values[r]);
    c.device_name.values[r] = d < code.size() ? code[d] : -1;
  }
  c.device_name.null_unless(kept, [](int32_t k) { return k >= 0; });
}

// The chunk's process names: comm codes become dictionary indexes in place;
// code 0 (no name) is null.
void comm_dictionary(format::ChunkColumns& chunk, size_t kept, Columns& c) {
  std::vector<int32_t> code(chunk.comm_codes(), -1);
  std::unordered_map<std::string_view, int32_t> seen;
  for (uint32_t k = 1; k < code.size(); ++k) {
    auto [it, added] = seen.emplace(chunk.comm_name(k), static_cast<int32_t>(c.comm_names.size()));
    if (added) c.comm_names.push_back(valid_utf8(chunk.comm_name(k)));
    code[k] = it->second;
  }
  for (size_t r = 0; r < kept; ++r) c.comm.values[r] = code[static_cast<uint32_t>(c.comm.values[r])];
  c.comm.null_unless(kept, [](int32_t k) { return k >= 0; });
}

// Names that differ only in invalid bytes may collide after U+FFFD
// replacement; pandas needs distinct categories, so make them so.
void make_distinct(std::vector<std::string>& names) {
  std::unordered_map<std::string, int> count;
  for (auto& s : names)
    if (int k = count[s]++; k) s += "#" + std::to_string(k);
}

// A dictionary-encoded utf8 column's schema.
ArrowSchema* names_schema(const char* name, const char* index_format, bool nullable) {
  return new_schema(index_format, name, nullable, new_schema("u", "", false));
}

ArrowArray* op_names() {
  std::vector<std::string> ops;
  for (int k = 0; k < format::kOpCount; ++k) ops.emplace_back(format::op_name(static_cast<format::Op>(k)));
  return string_array(ops);
}

// Column c's array and schema, finishing its column.
std::pair<ArrowArray*, ArrowSchema*> finish(int c, size_t kept, Columns& d, FixedColumn<int64_t>& issue) {
  const char* name = kColNames[c];
  switch (c) {
    case kIndex: return {d.index.finish(kept), new_schema("l", name, false)};
    case kDevice: return {d.device.finish(kept), new_schema("i", name, false)};
    case kDeviceName: return {d.device_name.finish(kept, string_array(d.device_names)), names_schema(name, "i", true)};
    case kOp: return {d.op.finish(kept, op_names()), names_schema(name, "c", false)};
    case kFlags: return {d.flags.finish(kept), new_schema("i", name, false)};
    case kOffset: return {d.offset.finish(kept), new_schema("l", name, false)};
    case kLength: return {d.length.finish(kept), new_schema("l", name, false)};
    case kQueue: return {d.queue.finish(kept), new_schema("l", name, true)};
    case kIssue: return {issue.finish(kept), new_schema("l", name, false)};
    case kComplete: return {d.complete.finish(kept), new_schema("l", name, true)};
    case kStatus: return {d.status.finish(kept), new_schema("i", name, false)};
    case kPid: return {d.pid.finish(kept), new_schema("i", name, true)};
    case kComm: return {d.comm.finish(kept, string_array(d.comm_names)), names_schema(name, "i", true)};
    case kCpu: return {d.cpu.finish(kept), new_schema("i", name, true)};
    case kCgroup: return {d.cgroup.finish(kept), new_schema("l", name, true)};
    case kSourceIndex: return {d.source.finish(kept), new_schema("l", name, true)};
  }
  return {nullptr, nullptr};
}

}  // namespace

Batch chunk_batch(format::ChunkColumns& chunk, FixedColumn<int64_t>& issue, const ChunkRows& rows,
                  const std::vector<int>& cols, const v1::TraceHeader& header) {
  Want want = {};
  for (int c : cols) want[c] = true;
  const size_t kept = rows.kept ? rows.kept->size() : chunk.size();
  Columns columns;
  decode_columns(chunk, issue, rows, want, columns);
  null_unknowns(want, kept, columns);
  if (want[kDeviceName]) device_dictionary(header, kept, columns);
  if (want[kComm]) comm_dictionary(chunk, kept, columns);
  make_distinct(columns.device_names);
  make_distinct(columns.comm_names);

  std::vector<ArrowArray*> arrays;
  std::vector<ArrowSchema*> schemas;
  for (int c : cols) {
    auto [a, s] = finish(c, kept, columns, issue);
    arrays.push_back(a);
    schemas.push_back(s);
  }
  return {new_struct_schema(std::move(schemas)), new_struct_array(static_cast<int64_t>(kept), std::move(arrays))};
}

}  // namespace iotape::python

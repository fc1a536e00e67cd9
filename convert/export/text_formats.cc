#include "convert/export/text_formats.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace iotape::convert {
namespace {

std::string time_or_empty(int64_t t) { return t == format::kNoTime ? std::string() : std::to_string(t); }

// Names may hold commas or quotes: quoted the CSV way, empty when unknown.
std::string csv_quoted(std::string_view name) {
  if (name.empty()) return {};
  std::string s = "\"";
  for (char c : name) s += c == '"' ? std::string("\"\"") : std::string(1, c);
  return s + '"';
}

}  // namespace

std::string rwbs(const format::Io& io) {
  static constexpr char kOpLetter[] = {'R', 'W', 'F', 'D', 'Z', 'N'};
  std::string s;
  if (io.flags & format::flag::kPreflush && io.op != format::Op::kFlush) s += 'F';
  s += kOpLetter[static_cast<int>(io.op)];
  if (io.flags & format::flag::kFua) s += 'F';
  if (io.flags & format::flag::kReadahead) s += 'A';
  if (io.flags & format::flag::kSync) s += 'S';
  if (io.flags & format::flag::kMeta) s += 'M';
  return s;
}

std::string format_text(const format::Io& io, uint64_t index, const v1::Device* dev, int64_t t0) {
  // dev  index  issue-time(s)  pid  RWBS  sector + sectors  q2d(us) d2c(us)  status  [comm]
  std::string q2d = io.has_queue() ? fmt::format("{:.1f}", (io.issue_ns - io.queue_ns) / 1e3) : "-";
  std::string d2c = io.has_complete() ? fmt::format("{:.1f}", (io.complete_ns - io.issue_ns) / 1e3) : "-";
  return fmt::format("{:>3},{:<3} {:>9} {:>14.9f} {:>7} {:<4} {} + {} q2d={} d2c={}{} [{}]", dev ? dev->major() : 0,
                     dev ? dev->minor() : io.device, index, (io.issue_ns - t0) / 1e9, io.pid, rwbs(io),
                     io.offset / 512, io.length / 512, q2d, d2c,
                     io.status ? fmt::format(" err={}", io.status) : "", io.comm.empty() ? "-" : io.comm);
}

std::string csv_header() {
  return "index,device,major,minor,op,flags,offset,length,queue_ns,issue_ns,complete_ns,status,pid,comm,"
         "cgroup,cpu,source_index,flag_bits,device_name";
}

std::string format_csv(const format::Io& io, uint64_t index, const v1::Device* dev) {
  return fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}", index, io.device,
                     dev ? dev->major() : 0, dev ? dev->minor() : 0, format::op_name(io.op), rwbs(io), io.offset,
                     io.length, time_or_empty(io.queue_ns), io.issue_ns, time_or_empty(io.complete_ns), io.status,
                     io.pid, csv_quoted(io.comm), io.cgroup, io.cpu, io.source_index, io.flags,
                     csv_quoted(dev ? dev->name() : ""));
}

std::string format_jsonl(const format::Io& io, uint64_t index, const v1::Device* dev) {
  nlohmann::ordered_json j;
  j["index"] = index;
  j["device"] = io.device;
  if (dev) {
    j["dev"] = fmt::format("{}:{}", dev->major(), dev->minor());
    j["device_name"] = dev->name();
  }
  j["op"] = format::op_name(io.op);
  j["flags"] = io.flags;
  j["offset"] = io.offset;
  j["length"] = io.length;
  if (io.has_queue()) j["queue_ns"] = io.queue_ns;
  j["issue_ns"] = io.issue_ns;
  if (io.has_complete()) j["complete_ns"] = io.complete_ns;
  if (io.status) j["status"] = io.status;
  if (io.pid) j["pid"] = io.pid;
  if (!io.comm.empty()) j["comm"] = std::string(io.comm);
  if (io.cgroup) j["cgroup"] = io.cgroup;
  if (io.cpu >= 0) j["cpu"] = io.cpu;
  if (io.source_index >= 0) j["source_index"] = io.source_index;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace iotape::convert

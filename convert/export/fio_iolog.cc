// fio iolog version 3: "TIME FILE add|open|close" and
// "TIME FILE read|write|trim|sync OFFSET LENGTH", TIME in microseconds since
// the first IO. fio wants every file added and opened before its first IO.
#include <fmt/format.h>

#include <vector>

#include "convert/export/formats.h"

namespace iotape::convert {
namespace {

std::string file_name(const v1::Device& d, uint32_t index) {
  return d.name().empty() || d.name().find_first_of(" \t/") != std::string::npos
             ? fmt::format("dev{}", index)
             : "/dev/" + d.name();
}

}  // namespace

ExportReport export_fio_iolog(format::TraceReader& in, std::FILE* out) {
  ExportReport r;
  fmt::print(out, "fio version 3 iolog\n");
  std::vector<std::string> names;  // per device index, set once the device is opened
  int64_t t0 = format::kNoTime;
  int64_t last_us = 0;
  uint64_t zeroes = 0, other = 0;
  for (auto batch = in.next_batch(); !batch.empty(); batch = in.next_batch()) {
    const auto& devices = in.header().devices();
    for (const format::Io& io : batch) {
      if (t0 == format::kNoTime) t0 = io.issue_ns;
      const int64_t us = std::max<int64_t>(0, (io.issue_ns - t0) / 1000);
      last_us = std::max(last_us, us);
      if (names.size() <= io.device) names.resize(io.device + 1);
      std::string& name = names[io.device];
      if (name.empty()) {
        name = io.device < static_cast<uint32_t>(devices.size()) ? file_name(devices[io.device], io.device)
                                                                 : fmt::format("dev{}", io.device);
        fmt::print(out, "{} {} add\n{} {} open\n", us, name, us, name);
      }
      const char* action = nullptr;
      switch (io.op) {
        case format::Op::kRead:
          action = "read";
          break;
        case format::Op::kWrite:
          action = "write";
          break;
        case format::Op::kWriteZeroes:
          action = "write";
          ++zeroes;
          break;
        case format::Op::kDiscard:
          action = "trim";
          break;
        case format::Op::kFlush:
          action = "sync";
          break;
        case format::Op::kOther:
          ++other;
          break;
      }
      if (!action) {
        ++r.skipped;
        continue;
      }
      // fio's sync lines still carry an offset and length; it ignores them.
      fmt::print(out, "{} {} {} {} {}\n", us, name, action, io.offset, io.length);
      ++r.ios;
    }
  }
  for (const auto& name : names)
    if (!name.empty()) fmt::print(out, "{} {} close\n", last_us, name);
  if (zeroes) r.notes.push_back(fmt::format("{} write-zeroes IOs written as writes", zeroes));
  if (other) r.notes.push_back(fmt::format("{} IOs of operation 'other' left out", other));
  return r;
}

}  // namespace iotape::convert

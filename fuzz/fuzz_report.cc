// libFuzzer target: arbitrary IOs through `iotape report --html`'s pass (the
// report's accumulators, the page's timeline, offset map and window grid,
// the page itself). The input is read as IO records, written as a trace and
// read back, so every value an IO can hold reaches the analysis, which must
// end in a report or a TraceError: never a crash, a hang, or memory that
// grows with the values rather than the IOs.
//
// Each record: 8 bytes issue, 4 queue-before-issue, 8 completion, 8 offset,
// 4 length, 1 op, 1 device, 1 flags, all little-endian; a completion or
// queue field of all ones is none.
#include <google/protobuf/stubs/logging.h>

#include <cstdint>
#include <cstring>
#include <utility>

#include "analysis/offset_map.h"
#include "analysis/report.h"
#include "analysis/report_output.h"
#include "analysis/timeline.h"
#include "analysis/week_page.h"
#include "format/error.h"
#include "format/reader.h"
#include "format/writer.h"
#include "fuzz/memory_file.h"
#include "workloads/cut.h"

namespace {

using namespace iotape;

template <typename T>
T take(const uint8_t*& p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  p += sizeof v;
  return v;
}

constexpr size_t kRecord = 8 + 4 + 8 + 8 + 4 + 1 + 1 + 1;

std::vector<format::Io> ios_of(const uint8_t* data, size_t size) {
  std::vector<format::Io> out;
  for (const uint8_t* p = data; p + kRecord <= data + size;) {
    format::Io io;
    io.issue_ns = take<int64_t>(p);
    const auto queued = take<uint32_t>(p);
    if (queued != UINT32_MAX && io.issue_ns >= INT64_MIN + queued) io.queue_ns = io.issue_ns - queued;
    const auto complete = take<int64_t>(p);
    if (complete != -1) io.complete_ns = complete;
    io.offset = take<uint64_t>(p);
    io.length = take<uint32_t>(p);
    io.op = static_cast<format::Op>(take<uint8_t>(p) % format::kOpCount);
    io.device = take<uint8_t>(p) % 3;
    io.flags = take<uint8_t>(p);
    io.pid = static_cast<uint32_t>(out.size() % 5);
    io.comm = io.pid % 2 ? "fio" : "kworker";
    out.push_back(io);
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::MemoryFile file("iotape-fuzz-report");
  const auto ios = ios_of(data, size);
  {
    v1::TraceHeader header;
    for (uint32_t d = 0; d < 3; ++d) {
      auto* dev = header.add_devices();
      dev->set_major(8);
      dev->set_minor(d * 16);
      if (d == 1) dev->set_size_bytes(uint64_t{1} << 30);
    }
    format::WriterOptions wo;
    wo.chunk_ios = 7;  // several chunks, and batches of them
    format::TraceWriter w(file.path(), header, wo);
    for (const format::Io& io : ios) w.append(io);
    w.close();
  }
  try {
    // As `iotape report --html` measures: cut's windows and the offset map on
    // the reader's thread (here of every IO, self-flagged ones too), the
    // timeline in the report's pass.
    workloads::WindowMeter meter({}, 60'000'000'000);
    analysis::OffsetMap offsets;
    bool origin_known = false;
    format::TraceReader reader(file.path(),
                               {.decode_ahead = format::kToolDecodeAhead,
                                .each_batch = [&](std::span<const format::Io> ios, const v1::TraceHeader& h) {
                                  for (const format::Io& io : ios) {
                                    if (!std::exchange(origin_known, true)) offsets.set_origin(io.issue_ns);
                                    meter.add(io, h);
                                    offsets.add(io, h);
                                  }
                                }});
    analysis::Timeline timeline(reader.header());
    analysis::ReportOptions ro;
    ro.timeline = &timeline;
    const analysis::Report r = analysis::analyse(reader, ro);
    timeline.finish();
    analysis::WeekPage page;
    page.traces = {file.path()};
    page.report = &r;
    page.header = &reader.header();
    const auto json = analysis::report_json(r, reader.header(), {page.traces, true, 10, false});
    page.json = &json;
    page.timeline = &timeline;
    page.offsets = &offsets;
    try {
      const auto activity = meter.finish();
      (void)workloads::pick_heavy(activity, 1);
      (void)workloads::pick_light(activity, 1);
    } catch (const format::UsageError&) {
    }
    volatile size_t sink = analysis::week_page_html(page).size() + analysis::report_text(r, reader.header(), {}).size();
    (void)sink;
  } catch (const format::TraceError&) {
  }
  return 0;
}

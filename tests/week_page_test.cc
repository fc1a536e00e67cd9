// The week page's accumulators: the timeline's bins and hours, the offset
// map, checked against hand-computed values.
#include <catch2/catch.hpp>

#include "analysis/offset_map.h"
#include "analysis/timeline.h"

using namespace iotape;

namespace {

constexpr int64_t kSec = 1'000'000'000;
constexpr int64_t kHour = 3600 * kSec;

format::Io io_at(int64_t issue, int64_t complete, uint64_t offset = 0, uint32_t device = 0,
                 format::Op op = format::Op::kRead) {
  format::Io io;
  io.issue_ns = issue;
  io.complete_ns = complete;
  io.offset = offset;
  io.length = 4096;
  io.device = device;
  io.op = op;
  return io;
}

}  // namespace

TEST_CASE("coarse histogram percentiles are within 12% of the exact value") {
  analysis::CoarseHistogram h;
  for (uint64_t v = 1; v <= 100'000; ++v) h.add(v * 10);  // 10 .. 1,000,000
  CHECK(h.count() == 100'000);
  CHECK(h.percentile(50) == Approx(500'000).epsilon(0.12));
  CHECK(h.percentile(99) == Approx(990'000).epsilon(0.12));
  CHECK(analysis::CoarseHistogram::lowest_in(analysis::CoarseHistogram::bucket_of(1000)) <= 1000);
  CHECK(analysis::CoarseHistogram::lowest_in(analysis::CoarseHistogram::bucket_of(1000) + 1) > 1000);
  analysis::CoarseHistogram empty;
  CHECK(empty.percentile(50) == 0);
}

TEST_CASE("timeline: busy time per device and bin, in flight, hours; bins double past their bound") {
  v1::TraceHeader header;  // no wall clock: hours count from the first IO
  analysis::Timeline t(header, 4);
  t.set_origin(0);
  // Device 0: [0.5 s, 1.5 s) and [1 s, 2 s) overlap: busy 1.5 s over bins 0
  // and 1.
  t.add(io_at(kSec / 2, kSec + kSec / 2), kSec + kSec / 2);
  t.add(io_at(kSec, 2 * kSec), 2 * kSec);
  // Device 1: [2.5 s, 3 s).
  t.add(io_at(2 * kSec + kSec / 2, 3 * kSec, 0, 1), 3 * kSec);
  t.finish();
  REQUIRE(t.bin_ns() == kSec);
  REQUIRE(t.bins().size() == 3);
  CHECK(t.bins()[0].busy_ns[0] == kSec / 2);
  CHECK(t.bins()[1].busy_ns[0] == kSec);
  CHECK(t.bins()[2].busy_ns.at(1) == kSec / 2);
  CHECK(t.bins()[1].busy_all_ns == kSec);
  CHECK(t.bins()[1].in_flight_ns == Approx(1.5e9));  // two IOs in flight over half of it
  CHECK(t.bins()[0].latency.count() == 1);
  REQUIRE(t.hours().size() == 1);
  CHECK(t.hours()[0][0] == 2 * kSec);  // the union of all devices: [0.5, 2) and [2.5, 3)

  // An IO at 9 s does not fit 4 bins of 1 s: bins become 4 s wide, merged.
  analysis::Timeline u(header, 4);
  u.set_origin(0);
  u.add(io_at(kSec / 2, kSec), kSec);
  u.add(io_at(9 * kSec, 9 * kSec + kSec / 4), 9 * kSec + kSec / 4);
  u.finish();
  CHECK(u.bin_ns() == 4 * kSec);
  REQUIRE(u.bins().size() == 3);
  CHECK(u.bins()[0].busy_all_ns == kSec / 2);
  CHECK(u.bins()[2].busy_all_ns == kSec / 4);
  CHECK(u.bins()[2].latency.count() == 1);
}

TEST_CASE("timeline: with a wall clock, hours are UTC hours of the day from midnight") {
  v1::TraceHeader header;
  header.set_anchor_trace_ns(0);
  header.set_anchor_unix_ns(1'700'000'000LL * kSec);  // 2023-11-14 22:13:20 UTC
  analysis::Timeline t(header);
  t.set_origin(0);
  // 22:13:20 + 50 min = 23:03:20: an IO of 10 min spans 23:03:20 .. 23:13:20;
  // one at +2 h is the next day, 00:13.
  t.add(io_at(50 * 60 * kSec, 60 * 60 * kSec), 60 * 60 * kSec);
  t.add(io_at(2 * kHour, 2 * kHour + kSec), 2 * kHour + kSec);
  t.finish();
  REQUIRE(t.wall_clock());
  REQUIRE(t.hours().size() == 2);
  CHECK(t.hours()[0][23] == 10 * 60 * kSec);
  CHECK(t.hours()[1][0] == kSec);
  CHECK(t.first_day_unix_ns() == 1'699'920'000LL * kSec);  // 2023-11-14 00:00 UTC
}

TEST_CASE("offset map: rows over the device's size, or over a range that doubles") {
  v1::TraceHeader header;
  auto* d = header.add_devices();
  d->set_size_bytes(64ULL << 30);
  analysis::OffsetMap m(4, 8);  // 4 columns, 8 rows
  m.set_origin(0);
  m.add(io_at(0, 1, 0), header);
  m.add(io_at(kSec, kSec + 1, 63ULL << 30), header);  // the top row
  m.add(io_at(0, 1, 3ULL << 30, 1),
        header);  // device 1: no size, 1 GiB doubles to 4 GiB
  m.add(io_at(9 * kSec, 9 * kSec + 1, 0),
        header);  // column 9 of 1 s: columns become 4 s
  REQUIRE(m.devices().size() == 2);
  CHECK(m.column_ns() == 4 * kSec);
  const auto& dev0 = m.devices()[0];
  CHECK(dev0.span_bytes == 64ULL << 30);
  CHECK(dev0.counts[0 * 8 + 0] == 1);
  CHECK(dev0.counts[0 * 8 + 7] == 1);
  CHECK(dev0.counts[2 * 8 + 0] == 1);
  const auto& dev1 = m.devices()[1];
  CHECK(dev1.span_bytes == 4ULL << 30);
  CHECK(dev1.counts[0 * 8 + 6] == 1);  // 3 GiB of 4 GiB: row 6 of 8
}

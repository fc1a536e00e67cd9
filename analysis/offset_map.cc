#include "analysis/offset_map.h"

#include <algorithm>

namespace iotape::analysis {

namespace {
constexpr uint64_t kFirstSpan = uint64_t{1} << 30;  // 1 GiB before any offset is seen, without a size
constexpr uint64_t kMaxSpan = uint64_t{1} << 63;
}

void OffsetMap::coarsen_time() {
  for (Device& d : devices_) {
    if (d.counts.empty()) continue;
    std::vector<uint64_t> merged(columns_ * rows_, 0);
    for (size_t c = 0; c < columns_; ++c)
      for (size_t r = 0; r < rows_; ++r) merged[(c / 2) * rows_ + r] += d.counts[c * rows_ + r];
    d.counts = std::move(merged);
  }
  column_ns_ *= 2;
  last_.forget();
}

void OffsetMap::widen(Device& d, uint64_t offset) {
  // Not past 2^63 bytes, which would overflow: an offset beyond (a made-up
  // trace's) goes to the top row.
  while (offset >= d.span_bytes && d.span_bytes <= kMaxSpan / 2) {
    std::vector<uint64_t> merged(columns_ * rows_, 0);
    for (size_t c = 0; c < columns_; ++c)
      for (size_t r = 0; r < rows_; ++r) merged[c * rows_ + r / 2] += d.counts[c * rows_ + r];
    d.counts = std::move(merged);
    d.span_bytes *= 2;
  }
  d.rows_per_byte = static_cast<double>(rows_) / static_cast<double>(d.span_bytes);
}

void OffsetMap::add(const format::Io& io, const v1::TraceHeader& header) {
  if (devices_.size() <= io.device) devices_.resize(io.device + 1);
  Device& d = devices_[io.device];
  if (d.counts.empty()) {
    d.counts.assign(columns_ * rows_, 0);
    const bool known = io.device < static_cast<uint32_t>(header.devices_size()) &&
                       header.devices(static_cast<int>(io.device)).size_bytes() > 0;
    d.span_bytes = known ? header.devices(static_cast<int>(io.device)).size_bytes() : kFirstSpan;
    widen(d, 0);
  }
  if (io.offset >= d.span_bytes) widen(d, io.offset);  // an IO past a size the header gave widens too
  const int64_t rel = std::max<int64_t>(0, io.issue_ns - origin_ns_);
  if (!last_.holds(rel))
    while (static_cast<uint64_t>(rel / column_ns_) >= columns_) coarsen_time();
  const size_t column = last_.find(rel, column_ns_);
  // A multiplication, and conversions from and to signed integers: cheaper
  // than a division and unsigned ones, for every IO.
  const auto offset = static_cast<int64_t>(std::min<uint64_t>(io.offset, INT64_MAX));
  const auto row = static_cast<int64_t>(static_cast<double>(offset) * d.rows_per_byte);
  ++d.counts[column * rows_ + std::min(static_cast<size_t>(row), rows_ - 1)];
}

}  // namespace iotape::analysis

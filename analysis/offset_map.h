// OffsetMap: where on each device the IOs went over time, as iowatcher's IO
// graph shows it, but as a density: a grid of IO counts per device, columns
// of trace time by issue, rows of offset. Bounded whatever the trace: a fixed
// number of columns that double in width as the trace grows (neighbours
// merge), and a fixed number of rows over the device's size (from the
// header), or, when the header does not know it, over a range that doubles
// to hold the highest offset seen.
#pragma once

#include <cstdint>
#include <vector>

#include "analysis/last_bin.h"
#include "format/io.h"
#include "iotape/v1/trace.pb.h"

namespace iotape::analysis {

class OffsetMap {
 public:
  struct Device {
    uint64_t span_bytes = 0;       // rows cover [0, span_bytes) evenly
    std::vector<uint64_t> counts;  // [column * rows + row]
    double rows_per_byte = 0;      // rows / span_bytes
  };
  OffsetMap(size_t columns = 240, size_t rows = 64) : columns_(columns), rows_(rows) {}
  void set_origin(int64_t origin_ns) {
    origin_ns_ = origin_ns;
    last_.forget();
  }
  void add(const format::Io& io, const v1::TraceHeader& header);

  size_t columns() const { return columns_; }
  size_t rows() const { return rows_; }
  int64_t column_ns() const { return column_ns_; }
  // Indexed like the header's devices; a device without IOs has no counts.
  const std::vector<Device>& devices() const { return devices_; }

 private:
  void coarsen_time();
  void widen(Device& d, uint64_t offset);

  size_t columns_, rows_;
  int64_t origin_ns_ = 0;
  int64_t column_ns_ = 1'000'000'000;
  LastBin last_;  // the column the last IO went to
  std::vector<Device> devices_;
};

}  // namespace iotape::analysis

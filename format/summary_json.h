// The keys of IoTotals that `iotape info --json` and `iotape report --json`
// share, written the same way for both.
#pragma once

#include <nlohmann/json.hpp>

#include "format/summary.h"

namespace iotape::format {

// ios, reads, writes, flushes, discards, write_zeroes, other, bytes_read,
// bytes_written, bytes_discarded, bytes_write_zeroes.
void put_op_counts(nlohmann::ordered_json& j, const IoTotals& t);
// first_ns and last_ns (null without IOs), duration_ns.
void put_time_span(nlohmann::ordered_json& j, const IoTotals& t);

}  // namespace iotape::format

#include "format/summary_json.h"

namespace iotape::format {

using nlohmann::ordered_json;

void put_op_counts(ordered_json& j, const IoTotals& t) {
  j["ios"] = t.ios;
  j["reads"] = t.op(Op::kRead).ios;
  j["writes"] = t.op(Op::kWrite).ios;
  j["flushes"] = t.op(Op::kFlush).ios;
  j["discards"] = t.op(Op::kDiscard).ios;
  j["write_zeroes"] = t.op(Op::kWriteZeroes).ios;
  j["other"] = t.op(Op::kOther).ios;
  j["bytes_read"] = t.op(Op::kRead).bytes;
  j["bytes_written"] = t.op(Op::kWrite).bytes;
  j["bytes_discarded"] = t.op(Op::kDiscard).bytes;
  j["bytes_write_zeroes"] = t.op(Op::kWriteZeroes).bytes;
}

void put_time_span(ordered_json& j, const IoTotals& t) {
  j["first_ns"] = t.first_ns == kNoTime ? ordered_json() : ordered_json(t.first_ns);
  j["last_ns"] = t.last_ns == kNoTime ? ordered_json() : ordered_json(t.last_ns);
  j["duration_ns"] = t.duration_ns();
}

}  // namespace iotape::format

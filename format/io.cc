#include "format/io.h"

namespace iotape::format {

std::string_view op_name(Op op) {
  switch (op) {
    case Op::kRead: return "read";
    case Op::kWrite: return "write";
    case Op::kFlush: return "flush";
    case Op::kDiscard: return "discard";
    case Op::kWriteZeroes: return "write-zeroes";
    case Op::kOther: return "other";
  }
  return "other";
}

std::optional<Op> op_from_name(std::string_view name) {
  for (int i = 0; i < kOpCount; ++i)
    if (op_name(static_cast<Op>(i)) == name) return static_cast<Op>(i);
  return std::nullopt;
}

}  // namespace iotape::format

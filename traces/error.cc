#include "traces/error.h"

#include <cstring>

namespace iotape {

TraceError error_at_byte(const std::string& file, uint64_t offset, const std::string& what) {
  return TraceError(file + ": byte " + std::to_string(offset) + ": " + what);
}

TraceError error_at_line(const std::string& file, uint64_t line, const std::string& what) {
  return TraceError(file + ":" + std::to_string(line) + ": " + what);
}

TraceError error_errno(const std::string& file, const std::string& what, int err) {
  return TraceError(file + ": " + what + ": " + std::strerror(err));
}

}  // namespace iotape

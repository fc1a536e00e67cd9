#include "format/error.h"

#include <cstring>

namespace iotape::format {

InputError error_at_byte(const std::string& file, uint64_t offset, const std::string& what) {
  return InputError(file + ": byte " + std::to_string(offset) + ": " + what);
}

InputError error_at_line(const std::string& file, uint64_t line, const std::string& what) {
  return InputError(file + ":" + std::to_string(line) + ": " + what);
}

IoError error_errno(const std::string& file, const std::string& what, int err) {
  return IoError(file + ": " + what + ": " + std::strerror(err), err);
}

}  // namespace iotape::format

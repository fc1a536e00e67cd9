// Errors of the trace library: what went wrong, in which file, at which place.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace iotape {

// Thrown for bad input and failed I/O. what() is a one-line message that
// already names the file and, where one applies, the byte offset or line.
class TraceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "FILE: byte OFFSET: WHAT"
TraceError error_at_byte(const std::string& file, uint64_t offset, const std::string& what);
// "FILE:LINE: WHAT"
TraceError error_at_line(const std::string& file, uint64_t line, const std::string& what);
// "FILE: WHAT: strerror(errno)"
TraceError error_errno(const std::string& file, const std::string& what, int err);

}  // namespace iotape

// Errors of iotape's libraries: what went wrong, where, and of which kind.
//
// Every error is a TraceError whose what() is one line that already names the
// file and, where one applies, the byte offset or line. The subclasses say
// what kind of failure it is, so that the command line maps each kind to its
// own exit status in one place (cli/exit_status.h) and a library can tell a
// failed write from bad input:
//   UsageError     a bad option or argument value, before anything is done
//   InputError     input that is not what it should be (a damaged trace, a bad line)
//   IoError        a system call failed; errno() keeps its error number
//   DeviceRefused  a device iotape will not write to (mounted, swap, held)
// A plain TraceError is any other failure.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace iotape::format {

class TraceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class UsageError : public TraceError {
 public:
  using TraceError::TraceError;
};

class InputError : public TraceError {
 public:
  using TraceError::TraceError;
};

class IoError : public TraceError {
 public:
  IoError(const std::string& what, int err) : TraceError(what), errno_(err) {}
  int errno_value() const { return errno_; }

 private:
  int errno_;
};

class DeviceRefused : public TraceError {
 public:
  using TraceError::TraceError;
};

// "FILE: byte OFFSET: WHAT"
InputError error_at_byte(const std::string& file, uint64_t offset, const std::string& what);
// "FILE:LINE: WHAT"
InputError error_at_line(const std::string& file, uint64_t line, const std::string& what);
// "FILE: WHAT: strerror(errno)"
IoError error_errno(const std::string& file, const std::string& what, int err);

}  // namespace iotape::format

// Reading line-based trace formats: lines with their numbers, fields split at
// a separator, and numbers parsed strictly, every error naming file and line.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "convert/import/input.h"
#include "format/error.h"

namespace iotape::convert {

// A field for an error message, cut short: the line may be binary junk.
std::string quote_field(std::string_view field);

// `s` with every byte that is not printable ASCII replaced by '?': names
// stored in a trace must be UTF-8, and input bytes need not be.
std::string printable(std::string_view s);

// Without leading and trailing blanks (and the CR of CRLF line ends).
std::string_view trim_field(std::string_view s);

// Splits `line` at `separator` (' ' means runs of blanks and tabs) into `out`,
// trimming each field. Returns the number of fields, or out.size() + 1 when
// there are more than fit.
size_t split_fields(std::string_view line, char separator, std::span<std::string_view> out);

// The lines of one input, without their line ends. A line longer than
// `max_line` bytes means the input is not of the expected `format`.
class LineReader {
 public:
  LineReader(const Input& in, std::string_view format, size_t max_line = 4096);

  // The next line; false at the end of the input.
  bool next(std::string_view& line);
  uint64_t line() const { return line_; }
  const std::string& file() const { return in_.name; }

 private:
  Input in_;
  std::string format_;
  std::vector<char> buf_;
  uint64_t line_ = 0;
};

// Parses the fields of one line; every error names the input and line.
class FieldParser {
 public:
  FieldParser(const std::string& file, uint64_t line) : file_(file), line_(line) {}

  [[noreturn]] void fail(const std::string& why) const;

  // Splits `line` at `separator` (',' or ' ', as split_fields does) into
  // exactly out.size() fields; any other count fails with "expected N
  // comma-separated fields (COLUMNS), found M: not WHAT".
  void split_exactly(std::string_view line, char separator, std::span<std::string_view> out, std::string_view columns,
                     std::string_view what) const;

  // A decimal unsigned integer, nothing else in the field.
  uint64_t number(std::string_view field, const char* what) const;
  // The same with an optional leading '-'.
  int64_t signed_number(std::string_view field, const char* what) const;
  // A non-negative decimal like "1450535590.151316" (or "1.5e-05") in units
  // of `unit_ns` nanoseconds (1e9 for seconds), to the nanosecond, truncated.
  int64_t decimal_ns(std::string_view field, int64_t unit_ns, const char* what) const;
  // a + b, failing with `what` on overflow.
  int64_t add(int64_t a, int64_t b, const char* what) const;
  // value * factor, failing with `what` on overflow.
  uint64_t scale(uint64_t value, uint64_t factor, const char* what) const;

 private:
  const std::string& file_;
  uint64_t line_;
};

}  // namespace iotape::convert

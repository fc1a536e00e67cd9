#include "convert/import/text_lines.h"

#include <charconv>
#include <cmath>

namespace iotape::convert {

std::string quote_field(std::string_view field) {
  return "'" + std::string(field.substr(0, 40)) + (field.size() > 40 ? "...'" : "'");
}

std::string printable(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c < 0x20 || c > 0x7e) c = '?';
  return out;
}

std::string_view trim_field(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

size_t split_fields(std::string_view line, char separator, std::span<std::string_view> out) {
  size_t n = 0;
  if (separator == ' ') {
    for (size_t at = 0;;) {
      at = line.find_first_not_of(" \t\r", at);
      if (at == std::string_view::npos) return n;
      if (n == out.size()) return n + 1;
      const size_t end = std::min(line.find_first_of(" \t\r", at), line.size());
      out[n++] = line.substr(at, end - at);
      at = end;
    }
  }
  for (size_t start = 0;;) {
    if (n == out.size()) return n + 1;
    const size_t sep = line.find(separator, start);
    const size_t end = sep == std::string_view::npos ? line.size() : sep;
    out[n++] = trim_field(line.substr(start, end - start));
    if (sep == std::string_view::npos) return n;
    start = sep + 1;
  }
}

LineReader::LineReader(const Input& in, std::string_view format, size_t max_line)
    : in_(in), format_(format), buf_(max_line + 1) {}

bool LineReader::next(std::string_view& line) {
  std::istream& s = *in_.stream;
  s.getline(buf_.data(), static_cast<std::streamsize>(buf_.size()));
  const auto got = static_cast<size_t>(s.gcount());
  if (s.bad()) throw format::error_at_line(in_.name, line_ + 1, "read error");
  if (s.eof() && got == 0) return false;
  ++line_;
  if (s.fail() && !s.eof())
    throw format::error_at_line(in_.name, line_,
                                "line longer than " + std::to_string(buf_.size() - 1) + " bytes: not " + format_);
  const size_t len = s.eof() ? got : got - 1;  // without the newline
  if (len > 0 && buf_[len - 1] == '\r')
    line = {buf_.data(), len - 1};
  else
    line = {buf_.data(), len};
  return true;
}

void FieldParser::fail(const std::string& why) const { throw format::error_at_line(file_, line_, why); }

void FieldParser::split_exactly(std::string_view line, char separator, std::span<std::string_view> out,
                                std::string_view columns, std::string_view what) const {
  const size_t n = split_fields(line, separator, out);
  if (n == out.size()) return;
  fail("expected " + std::to_string(out.size()) + (separator == ' ' ? " blank" : " comma") + "-separated fields (" +
       std::string(columns) + "), found " + (n > out.size() ? std::string("more") : std::to_string(n)) + ": not " +
       std::string(what));
}

uint64_t FieldParser::number(std::string_view field, const char* what) const {
  if (!field.empty() && field.front() == '-') fail(std::string(what) + " is negative: " + quote_field(field));
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
  if (ec == std::errc::result_out_of_range) fail(std::string(what) + " out of range: " + quote_field(field));
  if (ec != std::errc() || end != field.data() + field.size() || field.empty())
    fail(std::string(what) + " is not a number: " + quote_field(field));
  return v;
}

int64_t FieldParser::signed_number(std::string_view field, const char* what) const {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
  if (ec == std::errc::result_out_of_range) fail(std::string(what) + " out of range: " + quote_field(field));
  if (ec != std::errc() || end != field.data() + field.size() || field.empty())
    fail(std::string(what) + " is not a number: " + quote_field(field));
  return v;
}

int64_t FieldParser::decimal_ns(std::string_view field, int64_t unit_ns, const char* what) const {
  if (!field.empty() && field.front() == '-') fail(std::string(what) + " is negative: " + quote_field(field));
  if (field.find_first_of("eE") != std::string_view::npos) {
    // Exponent notation, as some tools write small values: exact enough in a double.
    double v = 0;
    auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
    if (ec != std::errc() || end != field.data() + field.size() || !std::isfinite(v) || v < 0)
      fail(std::string(what) + " is not a number: " + quote_field(field));
    const double ns = v * static_cast<double>(unit_ns);
    if (ns >= 9.2e18) fail(std::string(what) + " out of range: " + quote_field(field));
    return static_cast<int64_t>(ns);
  }
  const size_t dot = field.find('.');
  const std::string_view whole = field.substr(0, dot);
  const std::string_view frac = dot == std::string_view::npos ? std::string_view() : field.substr(dot + 1);
  if (whole.empty() && frac.empty()) fail(std::string(what) + " is not a number: " + quote_field(field));
  uint64_t w = 0;
  if (!whole.empty()) w = number(whole, what);
  int64_t ns = 0;
  if (w > static_cast<uint64_t>(INT64_MAX) ||
      __builtin_mul_overflow(static_cast<int64_t>(w), unit_ns, &ns))
    fail(std::string(what) + " out of range: " + quote_field(field));
  // The fraction's digits, each worth a tenth of the one before.
  int64_t place = unit_ns;
  for (char c : frac) {
    if (c < '0' || c > '9') fail(std::string(what) + " is not a number: " + quote_field(field));
    place /= 10;  // digits below a nanosecond add nothing
    if (__builtin_add_overflow(ns, (c - '0') * place, &ns))
      fail(std::string(what) + " out of range: " + quote_field(field));
  }
  return ns;
}

int64_t FieldParser::add(int64_t a, int64_t b, const char* what) const {
  int64_t sum;
  if (__builtin_add_overflow(a, b, &sum)) fail(std::string(what) + " is out of range");
  return sum;
}

uint64_t FieldParser::scale(uint64_t value, uint64_t factor, const char* what) const {
  uint64_t product;
  if (__builtin_mul_overflow(value, factor, &product))
    fail(std::string(what) + " " + std::to_string(value) + " is out of range");
  return product;
}

}  // namespace iotape::convert

#include "convert/import/jsonl.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <utility>

#include <nlohmann/json.hpp>

#include "convert/import/exported_devices.h"
#include "convert/import/import_sink.h"

namespace iotape::convert {
namespace {

using nlohmann::json;

// The keys the export writes (format_jsonl); no other is accepted.
constexpr std::string_view kKeys[] = {
    "index", "device", "dev", "device_name", "op", "flags", "offset", "length", "queue_ns",
    "issue_ns", "complete_ns", "status", "pid", "comm", "cgroup", "cpu", "source_index"};

// nlohmann's message without its "[json.exception.KIND.N] " and "parse error
// at line 1, column C: " prefixes: the file and line are ours to name.
std::string reason(const json::exception& e) {
  std::string_view why = e.what();
  if (const size_t at = why.find("] "); at != std::string_view::npos) why.remove_prefix(at + 2);
  if (const size_t at = why.find(": "); why.starts_with("parse error at ") && at != std::string_view::npos)
    why.remove_prefix(at + 2);
  return printable(why);
}

// One line's object; its fields are read with their types and ranges
// checked, every error naming the line and the field.
class Fields {
 public:
  Fields(const FieldParser& p, std::string_view text) : p_(p) {
    try {
      j_ = json::parse(text.begin(), text.end());
    } catch (const json::parse_error& e) {
      p.fail("not JSON at column " + std::to_string(e.byte) + ": " + reason(e));
    } catch (const json::exception& e) {  // a number beyond a double's range, e.g. 1e999
      p.fail("not JSON: " + reason(e));
    }
    if (!j_.is_object()) p.fail("not a JSON object: " + quote_field(text));
    for (const auto& item : j_.items())
      if (std::find(std::begin(kKeys), std::end(kKeys), item.key()) == std::end(kKeys))
        p.fail("unknown field " + quote_field(printable(item.key())));
  }

  // An integer field of type T, at least `min`. A line without it gives
  // `absent`, or fails when there is none (a required field).
  template <typename T>
  T integer(const char* key, std::optional<T> absent = std::nullopt,
            T min = std::numeric_limits<T>::min()) const {
    const json* v = find(key, !absent);
    if (!v) return *absent;
    // is_number_integer() holds for signed and unsigned, not for 1.5 or 1e3.
    if (!v->is_number_integer()) p_.fail(std::string(key) + " is not an integer: " + quote_field(v->dump()));
    const bool fits =
        v->is_number_unsigned() ? std::in_range<T>(v->get<uint64_t>()) : std::in_range<T>(v->get<int64_t>());
    if (!fits || v->get<T>() < min) p_.fail(std::string(key) + " out of range: " + quote_field(v->dump()));
    return v->get<T>();
  }

  // A string field; nullopt when the line leaves it out and it is not required.
  std::optional<std::string_view> string(const char* key, bool required = false) const {
    const json* v = find(key, required);
    if (!v) return std::nullopt;
    if (!v->is_string()) p_.fail(std::string(key) + " is not a string: " + quote_field(v->dump()));
    return v->get_ref<const std::string&>();
  }

 private:
  const json* find(const char* key, bool required) const {
    const auto it = j_.find(key);
    if (it != j_.end()) return &*it;
    if (required) p_.fail(std::string("no \"") + key + "\" field");
    return nullptr;
  }

  const FieldParser& p_;
  json j_;
};

// "8:0" -> {8, 0}.
std::pair<uint32_t, uint32_t> major_minor(const FieldParser& p, std::string_view dev) {
  const size_t colon = dev.find(':');
  if (colon == std::string_view::npos || dev.find_first_not_of("0123456789:") != std::string_view::npos)
    p.fail("dev " + quote_field(printable(dev)) + " is not MAJOR:MINOR");
  const uint64_t major = p.number(dev.substr(0, colon), "major"), minor = p.number(dev.substr(colon + 1), "minor");
  if (major > UINT32_MAX || minor > UINT32_MAX) p.fail("major or minor out of range");
  return {static_cast<uint32_t>(major), static_cast<uint32_t>(minor)};
}

}  // namespace

blockevents::ImportReport import_jsonl(std::span<const Input> inputs, const blockevents::ImportOptions& options,
                                       format::TraceWriter& out) {
  ExportedDevices devices(out);
  auto parse_line = [&](const FieldParser& p, std::string_view text, ImportSink& sink) {
    const Fields f(p, text);
    f.integer<uint64_t>("index");
    const uint64_t device = f.integer<uint64_t>("device");
    const std::string_view op_name = *f.string("op", true);
    const std::optional<format::Op> op = format::op_from_name(op_name);
    if (!op) p.fail("unknown op " + quote_field(printable(op_name)));
    format::Io io;
    io.op = *op;
    io.flags = f.integer<uint32_t>("flags");
    io.offset = f.integer<uint64_t>("offset");
    io.length = f.integer<uint64_t>("length");
    // kNoTime means "unknown": a time given is any other value.
    io.queue_ns = f.integer<int64_t>("queue_ns", format::kNoTime, format::kNoTime + 1);
    io.issue_ns = f.integer<int64_t>("issue_ns", std::nullopt, format::kNoTime + 1);
    io.complete_ns = f.integer<int64_t>("complete_ns", format::kNoTime, format::kNoTime + 1);
    io.status = f.integer<int32_t>("status", 0);
    io.pid = f.integer<uint32_t>("pid", 0);
    io.comm = f.string("comm").value_or("");
    io.cgroup = f.integer<uint64_t>("cgroup", 0);
    io.cpu = f.integer<int32_t>("cpu", -1, -1);
    io.source_index = f.integer<int64_t>("source_index", -1, -1);
    const std::optional<std::string_view> dev = f.string("dev");
    const auto [major, minor] = dev ? major_minor(p, *dev) : std::pair<uint32_t, uint32_t>();
    const uint32_t index = devices.index(p, device, major, minor, f.string("device_name"));
    if (!sink.keeps(std::to_string(device))) return sink.skip("other-volume");
    io.device = index;
    sink.add(io);
  };
  return import_lines(inputs, options, out, "iotape JSON lines", parse_line, [&devices] { devices.add_devices(); });
}

}  // namespace iotape::convert

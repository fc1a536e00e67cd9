#include "convert/import/exported_devices.h"

namespace iotape::convert {
namespace {

constexpr uint32_t kMaxDevices = 1 << 16;  // indexes are kept, so each one below costs a device

std::string describe(uint32_t major, uint32_t minor, const std::optional<std::string>& name) {
  return std::to_string(major) + ":" + std::to_string(minor) + (name ? " named " + quote_field(printable(*name)) : "");
}

}  // namespace

ExportedDevices::ExportedDevices(format::TraceWriter& out) : out_(out), first_(out.device_count()) {}

uint32_t ExportedDevices::index(const FieldParser& p, uint64_t device, uint32_t major, uint32_t minor,
                                std::optional<std::string_view> name) {
  if (device >= kMaxDevices) p.fail("device index " + std::to_string(device) + " is out of range");
  if (seen_.size() <= device) seen_.resize(device + 1);
  std::optional<Seen>& seen = seen_[device];
  // Every line names its device: compared in place, copied only the first time.
  const auto owned = [&] { return name ? std::optional<std::string>(*name) : std::nullopt; };
  if (!seen)
    seen = Seen{major, minor, owned()};
  else if (seen->major != major || seen->minor != minor || seen->name.has_value() != name.has_value() ||
           (name && *seen->name != *name))
    p.fail("device " + std::to_string(device) + " is " + describe(major, minor, owned()) + " here but " +
           describe(seen->major, seen->minor, seen->name) + " before");
  return first_ + static_cast<uint32_t>(device);
}

void ExportedDevices::add_devices() {
  for (size_t i = 0; i < seen_.size(); ++i) {
    const std::optional<Seen>& s = seen_[i];
    v1::Device d;
    if (s) {
      d.set_major(s->major);
      d.set_minor(s->minor);
    }
    if (s && s->name)
      d.set_name(*s->name);
    else if (s && (s->major || s->minor))
      d.set_name(std::to_string(s->major) + "," + std::to_string(s->minor));
    else
      d.set_name("device " + std::to_string(i));
    out_.add_device(d);
  }
}

}  // namespace iotape::convert

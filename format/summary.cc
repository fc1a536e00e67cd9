#include "format/summary.h"

#include <algorithm>
#include <charconv>

#include "format/error.h"

namespace iotape::format {

DeviceFilter parse_device_filter(const std::string& text) {
  DeviceFilter f;
  const char* b = text.data();
  const char* e = b + text.size();
  auto r1 = std::from_chars(b, e, f.major);
  if (r1.ec != std::errc() || r1.ptr == e || *r1.ptr != ':')
    throw UsageError("device '" + text + "': expected MAJ:MIN");
  auto r2 = std::from_chars(r1.ptr + 1, e, f.minor);
  if (r2.ec != std::errc() || r2.ptr != e) throw UsageError("device '" + text + "': expected MAJ:MIN");
  return f;
}

TraceSummary summarize(TraceReader& reader, const std::optional<DeviceFilter>& only) {
  TraceSummary s;
  std::vector<bool> selected;
  for (auto batch = reader.next_batch(); !batch.empty(); batch = reader.next_batch()) {
    const auto& devices = reader.header().devices();
    if (selected.size() < static_cast<size_t>(devices.size())) {
      for (int d = static_cast<int>(selected.size()); d < devices.size(); ++d)
        selected.push_back(!only || (devices[d].major() == only->major && devices[d].minor() == only->minor));
      s.ios_per_device.resize(selected.size());
    }
    for (const Io& io : batch) {
      if (io.device < selected.size() ? !selected[io.device] : only.has_value()) continue;
      if (io.device < s.ios_per_device.size()) ++s.ios_per_device[io.device];
      s.add(io, io.has_complete() ? std::max(io.complete_ns, io.issue_ns) : io.issue_ns);
    }
  }
  s.ios_per_device.resize(reader.header().devices_size());
  s.dropped_events = reader.dropped_events();
  s.late_ios = reader.late_ios();
  s.status = reader.status();
  return s;
}

}  // namespace iotape::format

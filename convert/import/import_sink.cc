#include "convert/import/import_sink.h"

#include "convert/import/input.h"

namespace iotape::convert {

ImportSink::ImportSink(const blockevents::ImportOptions& options, format::TraceWriter& out)
    : out_(out),
      keep_(options.volumes.begin(), options.volumes.end()),
      sorted_(options.sort_run_ios, options.spill_dir) {}

std::optional<uint32_t> ImportSink::device(std::string_view id) {
  auto it = volumes_.find(id);
  if (it == volumes_.end()) {
    std::optional<uint32_t> index;
    if (keep_.empty() || keep_.contains(id)) {
      v1::Device d;
      d.set_name(printable(id));  // names in a trace must be UTF-8; input bytes need not be
      index = out_.add_device(d);
    }
    it = volumes_.emplace(std::string(id), index).first;
  }
  if (!it->second) skip("other-volume");
  return it->second;
}

bool ImportSink::keeps(std::string_view id) {
  if (keep_.empty()) return true;
  if (!keep_.contains(id)) return false;
  if (!kept_seen_.contains(id)) kept_seen_.emplace(id);
  return true;
}

void ImportSink::add(const format::Io& io) {
  ++report_.records;
  ++report_.ios;
  sorted_.add(io);
}

void ImportSink::add(format::Io io, std::string_view id) {
  const std::optional<uint32_t> index = device(id);
  if (!index) return;
  io.device = *index;
  add(io);
}

void ImportSink::skip(const std::string& reason) {
  ++report_.records;
  ++report_.skipped;
  ++report_.skipped_by_reason[reason];
}

blockevents::ImportReport ImportSink::finish() {
  if (sorted_.spilled_runs())
    report_.notes.push_back("sorted by issue time through " + std::to_string(sorted_.spilled_runs()) +
                            " spilled runs");
  sorted_.drain([this](const format::Io& io) { out_.append(io); });
  for (const auto& [reason, n] : report_.skipped_by_reason)
    report_.notes.push_back(std::to_string(n) + " records skipped: " + reason);
  for (const std::string& v : keep_)
    if (!volumes_.contains(v) && !kept_seen_.contains(v)) report_.notes.push_back("volume '" + v + "' does not occur in the input");
  return report_;
}

}  // namespace iotape::convert

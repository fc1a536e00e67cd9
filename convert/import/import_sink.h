// Where the line-based importers put what they parse: the volume table (each
// volume id becomes a device named after it, filtered by
// ImportOptions::volumes), a sort into issue-time order with bounded memory
// (the inputs need not be sorted), and the report's counts.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "blockevents/sorted_spill.h"
#include "convert/import/importer.h"
#include "convert/import/input.h"
#include "convert/import/text_lines.h"
#include "format/writer.h"

namespace iotape::convert {

class ImportSink {
 public:
  ImportSink(const blockevents::ImportOptions& options, format::TraceWriter& out);

  // The device index of volume `id`, added to the writer at first sight;
  // nullopt when the volume filter leaves it out (the record is then counted
  // as skipped, reason "other-volume").
  std::optional<uint32_t> device(std::string_view id);
  // Whether the volume filter keeps volume `id`, for importers whose device
  // table comes from the input itself instead of from device(); like device(),
  // notes that `id` occurs in the input.
  bool keeps(std::string_view id);
  // A record that made `io`.
  void add(const format::Io& io);
  // A record that made `io` on volume `id`: added with that volume's device,
  // or counted as skipped like device() does.
  void add(format::Io io, std::string_view id);
  // A record that made no IO, for `reason` ("blank-iotype"); volumes
  // filtered out are counted by the sink itself.
  void skip(const std::string& reason);
  // Counts a record that holds no IO and is no loss (a header line, a file
  // open/close line).
  void count_record() { ++report_.records; }
  const blockevents::ImportReport& report() const { return report_; }

  // Writes the IOs in issue-time order and returns the report.
  blockevents::ImportReport finish();

 private:
  format::TraceWriter& out_;
  std::set<std::string, std::less<>> keep_;
  std::map<std::string, std::optional<uint32_t>, std::less<>> volumes_;
  std::set<std::string, std::less<>> kept_seen_;  // volumes keeps() was asked about and kept
  blockevents::SortedSpill sorted_;
  blockevents::ImportReport report_;
};

// The body of a line-based importer: calls parse_line(parser, line, sink) for
// every non-blank line of every input, then before_drain() if given (the IOs
// are still held by the sink then). An input without records fails with
// "empty file: no FORMAT records" (or "no FORMAT records").
template <typename ParseLine>
blockevents::ImportReport import_lines(std::span<const Input> inputs, const blockevents::ImportOptions& options,
                                       format::TraceWriter& out, const std::string& format, ParseLine parse_line,
                                       const std::function<void()>& before_drain = {}) {
  ImportSink sink(options, out);
  for (const Input& in : inputs) {
    LineReader lines(in, format);
    const uint64_t before = sink.report().records;
    for (std::string_view text; lines.next(text);) {
      text = trim_field(text);
      if (!text.empty()) parse_line(FieldParser(in.name, lines.line()), text, sink);
    }
    if (sink.report().records == before)
      throw format::error_at_line(in.name, lines.line() + 1,
                                  (lines.line() == 0 ? "empty file: no " : "no ") + format + " records");
  }
  if (before_drain) before_drain();
  return sink.finish();
}

}  // namespace iotape::convert

// iotape import: other trace formats into iotape traces.
#include <unistd.h>

#include <fmt/format.h>

#include "cli/commands.h"
#include "convert/import/format_detect.h"
#include "convert/import/importer.h"
#include "format/error.h"

namespace iotape::cli {
namespace {

struct ImportOptions {
  std::string format;
  std::vector<std::string> inputs;
  std::string output;
  int zstd_level = 9;
  std::vector<std::string> volumes;
};

void run_import(const ImportOptions& o) {
  std::string format = o.format;
  if (format == "auto") {
    format = convert::detect_file_format(o.inputs.front());
    fmt::print(stderr, "import auto: {} looks like {}\n", o.inputs.front(), format);
  }
  const convert::Importer* imp = convert::find_importer(format);
  if (!imp) throw format::UsageError("unknown import format '" + format + "'");
  v1::TraceHeader header;
  header.set_source(v1::SOURCE_IMPORT);
  header.set_source_detail("import:" + format);
  header.set_clock(imp->clock);
  (*header.mutable_metadata())["import.inputs"] = fmt::format("{}", fmt::join(o.inputs, " "));
  format::WriterOptions wo;
  wo.zstd_level = o.zstd_level;
  // Published traces are sorted only roughly; a minute of window sorts them.
  wo.reorder_window_ns = imp->sorted_output ? 0 : 60'000'000'000;
  blockevents::ImportReport report;
  try {
    format::TraceWriter writer(o.output, header, wo);
    blockevents::ImportOptions options;
    options.volumes = o.volumes;
    report = imp->run(o.inputs, writer, options);
    writer.set_metadata("import.records", std::to_string(report.records));
    writer.set_metadata("import.skipped", std::to_string(report.skipped));
    for (const auto& [reason, n] : report.skipped_by_reason)
      writer.set_metadata("import.skipped." + reason, std::to_string(n));
    writer.close();
    fmt::print(stderr, "imported {} IOs from {} {} records into {} ({} bytes, {:.3f} B/IO)\n", report.ios,
               report.records, format, o.output, writer.stats().file_bytes,
               report.ios ? static_cast<double>(writer.stats().file_bytes) / static_cast<double>(report.ios) : 0.0);
  } catch (...) {
    ::unlink(o.output.c_str());  // no half-made trace that looks complete
    throw;
  }
  if (report.skipped) fmt::print(stderr, "skipped {} records\n", report.skipped);
  for (const auto& n : report.notes) fmt::print(stderr, "note: {}\n", n);
}

}  // namespace

void add_import_command(CLI::App& app) {
  auto o = std::make_shared<ImportOptions>();
  std::string formats;
  for (const convert::Importer& i : convert::importers()) formats += fmt::format("\n  {:<10} {}", i.name, i.summary);
  auto* sub = app.add_subcommand("import", "Convert a trace of another format into an iotape trace");
  formats += fmt::format("\n  {:<10} {}", "auto", "detect the format from the first input's first bytes");
  sub->add_option("FORMAT", o->format, "Input format:" + formats)->required();
  sub->add_option("INPUT", o->inputs, "Input file(s), e.g. every PREFIX.blktrace.N of one blktrace run")
      ->required()
      ->check(CLI::ExistingFile);
  sub->add_option("-o,--output", o->output, "The iotape trace to write")->required();
  sub->add_option("--volume", o->volumes,
                  "Import only this volume (LUN, VolumeID, device_id, ASU, devno, fio file, csv/jsonl device index); "
                  "repeatable");
  sub->add_option("--zstd-level", o->zstd_level, "zstd compression level of the chunks")->check(CLI::Range(1, 22));
  sub->callback([o] { run_import(*o); });
}

}  // namespace iotape::cli

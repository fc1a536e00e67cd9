// iotape import: other trace formats into iotape traces.
#include <unistd.h>

#include <fmt/format.h>

#include "cli/commands.h"
#include "traces/error.h"
#include "traces/import/importer.h"

namespace iotape::cli {
namespace {

struct ImportOptions {
  std::string format;
  std::vector<std::string> inputs;
  std::string output;
  int zstd_level = 9;
};

void run_import(const ImportOptions& o) {
  const Importer* imp = find_importer(o.format);
  if (!imp) throw TraceError("unknown import format '" + o.format + "'");
  v1::TraceHeader header;
  header.set_source(v1::SOURCE_IMPORT);
  header.set_source_detail("import:" + o.format);
  header.set_clock(imp->clock);
  (*header.mutable_metadata())["import.inputs"] = fmt::format("{}", fmt::join(o.inputs, " "));
  WriterOptions wo;
  wo.zstd_level = o.zstd_level;
  // Published traces are sorted only roughly; a minute of window sorts them.
  wo.reorder_window_ns = 60'000'000'000;
  ImportReport report;
  try {
    TraceWriter writer(o.output, header, wo);
    report = imp->run(o.inputs, writer);
    writer.set_metadata("import.records", std::to_string(report.records));
    writer.set_metadata("import.skipped", std::to_string(report.skipped));
    writer.close();
    fmt::print(stderr, "imported {} IOs from {} {} records into {} ({} bytes, {:.3f} B/IO)\n", report.ios,
               report.records, o.format, o.output, writer.stats().file_bytes,
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
  for (const Importer& i : importers()) formats += fmt::format("\n  {:<10} {}", i.name, i.summary);
  auto* sub = app.add_subcommand("import", "Convert a trace of another format into an iotape trace");
  sub->add_option("FORMAT", o->format, "Input format:" + formats)->required();
  sub->add_option("INPUT", o->inputs, "Input file(s), e.g. every PREFIX.blktrace.N of one blktrace run")
      ->required()
      ->check(CLI::ExistingFile);
  sub->add_option("-o,--output", o->output, "The iotape trace to write")->required();
  sub->add_option("--zstd-level", o->zstd_level, "zstd compression level of the chunks")->check(CLI::Range(1, 22));
  sub->callback([o] { run_import(*o); });
}

}  // namespace iotape::cli

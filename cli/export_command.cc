// iotape export: iotape traces into the formats of other tools.
#include <fmt/format.h>

#include <cerrno>
#include <cstdio>

#include "cli/commands.h"
#include "convert/export/exporter.h"
#include "format/error.h"

namespace iotape::cli {
namespace {

struct ExportOptions {
  std::string format;
  std::vector<std::string> traces;
  std::string output = "-";
};

void run_export(const ExportOptions& o) {
  const convert::Exporter* ex = convert::find_exporter(o.format);
  if (!ex) throw format::UsageError("unknown export format '" + o.format + "'");
  format::TraceReader reader(o.traces);
  const bool to_stdout = o.output == "-";
  std::FILE* out = to_stdout ? stdout : std::fopen(o.output.c_str(), "wb");
  if (!out) throw format::error_errno(o.output, "cannot create", errno);
  const convert::ExportReport r = ex->run(reader, out);
  const bool write_failed = std::ferror(out) || (to_stdout ? std::fflush(out) : std::fclose(out)) != 0;
  if (write_failed) throw format::error_errno(o.output, "write failed", errno);
  fmt::print(stderr, "exported {} IOs as {}{}\n", r.ios, o.format,
             r.skipped ? fmt::format(" ({} left out)", r.skipped) : "");
  for (const auto& n : r.notes) fmt::print(stderr, "note: {}\n", n);
  if (reader.status().damaged) {
    fmt::print(stderr, "iotape: warning: {} (export stops there)\n", reader.status().message);
    throw ExitCode{kExitDamaged};
  }
}

}  // namespace

void add_export_command(CLI::App& app) {
  auto o = std::make_shared<ExportOptions>();
  std::string formats;
  for (const convert::Exporter& e : convert::exporters())
    formats += fmt::format("\n  {:<10} {}\n  {:<10} (drops: {})", e.name, e.summary, "", e.drops);
  auto* sub = app.add_subcommand("export", "Write a trace in the format of another tool");
  sub->add_option("FORMAT", o->format, "Output format:" + formats)->required();
  sub->add_option("TRACE", o->traces, "Trace file(s); several are read as one trace")
      ->required()
      ->check(CLI::ExistingFile);
  sub->add_option("-o,--output", o->output, "Output file ('-' = standard output)");
  sub->callback([o] { run_export(*o); });
}

}  // namespace iotape::cli

// iotape cat: one line per IO.
#include <fmt/format.h>

#include "cli/commands.h"
#include "convert/export/text_formats.h"
#include "format/reader.h"

namespace iotape::cli {
namespace {

struct CatOptions {
  std::vector<std::string> traces;
  std::string format = "text";
  uint64_t limit = 0;
};

void run_cat(const CatOptions& o) {
  format::TraceReader reader(o.traces);
  uint64_t index = 0;
  int64_t t0 = format::kNoTime;
  std::string out;
  if (o.format == "csv") fmt::print("{}\n", convert::csv_header());
  for (auto batch = reader.next_batch(); !batch.empty(); batch = reader.next_batch()) {
    const auto& devices = reader.header().devices();
    out.clear();
    for (const format::Io& io : batch) {
      if (o.limit && index >= o.limit) break;
      const v1::Device* dev = io.device < static_cast<uint32_t>(devices.size()) ? &devices[io.device] : nullptr;
      if (t0 == format::kNoTime) t0 = io.issue_ns;
      if (o.format == "text")
        out += convert::format_text(io, index, dev, t0);
      else if (o.format == "csv")
        out += convert::format_csv(io, index, dev);
      else
        out += convert::format_jsonl(io, index, dev);
      out += '\n';
      ++index;
    }
    std::fwrite(out.data(), 1, out.size(), stdout);
    if (o.limit && index >= o.limit) return;
  }
  if (reader.status().damaged) {
    std::fflush(stdout);
    fmt::print(stderr, "iotape: warning: {} (output stops there)\n", reader.status().message);
    throw ExitCode{kExitDamaged};
  }
}

}  // namespace

void add_cat_command(CLI::App& app) {
  auto o = std::make_shared<CatOptions>();
  auto* sub = app.add_subcommand("cat", "Print one line per IO (text like blkparse, CSV or JSON lines)");
  sub->add_option("TRACE", o->traces, "Trace file(s); several are read as one trace (rotated parts)")
      ->required()
      ->check(CLI::ExistingFile);
  sub->add_option("--format", o->format,
                  "text: 'MAJ,MIN INDEX TIME(s) PID RWBS SECTOR + SECTORS q2d=us d2c=us [COMM]'; "
                  "csv: header line, then " +
                      convert::csv_header() + "; jsonl: one object per IO")
      ->check(CLI::IsMember({"text", "csv", "jsonl"}));
  sub->add_option("--limit", o->limit, "Stop after N IOs (0 = all)");
  sub->callback([o] { run_cat(*o); });
}

}  // namespace iotape::cli

// iotape synth: a workload profile played into a trace.
#include <fmt/format.h>

#include "cli/commands.h"
#include "format/error.h"
#include "units/units.h"
#include "workloads/profile.h"
#include "workloads/synth.h"

namespace iotape::cli {
namespace {

struct SynthArgs {
  std::string profile;
  std::string out;
  uint64_t seed = 1;
  std::string span;
  std::optional<uint64_t> ios;
  std::string duration;
  bool list = false;
};

void run_synth(const SynthArgs& a) {
  if (a.list) {
    for (const auto& b : workloads::builtin_profiles())
      fmt::print("{:<14} {}\n", b.name, workloads::parse_profile(nlohmann::json::parse(b.json), b.name).description);
    return;
  }
  if (a.profile.empty() || a.out.empty()) throw format::UsageError("give a PROFILE and -o OUT (or --list)");
  const workloads::Profile prof = workloads::load_profile(a.profile);
  workloads::SynthOptions o;
  o.seed = a.seed;
  if (!a.span.empty()) o.span = units::parse_size(a.span, "--span");
  o.ios = a.ios;
  if (!a.duration.empty()) o.duration_ns = units::parse_duration(a.duration, "--duration");
  const auto r = workloads::synthesize(prof, o, a.out);
  fmt::print("{}: {} IOs, {:.1f} s of trace time, {} phases, seed {}\n", a.out, r.ios, r.duration_ns / 1e9,
             prof.phases.size(), a.seed);
}

}  // namespace

void add_synth_command(CLI::App& app) {
  auto a = std::make_shared<SynthArgs>();
  auto* sub = app.add_subcommand("synth", "Generate a trace from a workload profile (built-in or a JSON file)");
  sub->add_option("PROFILE", a->profile, "A built-in profile name (see --list) or a profile file (docs/workloads.md)");
  sub->add_option("-o,--output", a->out, "Trace file to write");
  sub->add_option("--seed", a->seed, "Random seed: the same seed gives the same file")->capture_default_str();
  sub->add_option("--span", a->span, "Bytes the IOs may touch, e.g. 512M, 1GiB, 1GB (default: the profile's)");
  auto* ios = sub->add_option("--ios", a->ios, "Length in IOs (default: the profile's)");
  sub->add_option("--duration", a->duration, "Length in trace time, e.g. 90s, 5m, 1h (default: the profile's)")
      ->excludes(ios);
  sub->add_flag("--list", a->list, "List the built-in profiles");
  sub->footer(
      "Phases of a profile share its length by weight. Completion times come from the profile's nominal device "
      "model,\nso the queue depths `iotape report` measures are the profile's (see docs/workloads.md). The header "
      "lists the phases\nwith their parameters, which replay and cut keep: `iotape report --by phase` gives each "
      "one's figures.");
  sub->callback([a] { run_synth(*a); });
}

}  // namespace iotape::cli

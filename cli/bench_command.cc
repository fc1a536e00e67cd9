// iotape bench: drive-state tests (preconditioning, performance consistency,
// TRIM, fresh vs used) with result traces and a JSON summary.
#include <fmt/format.h>

#include "cli/commands.h"
#include "units/units.h"
#include "workloads/bench.h"

namespace iotape::cli {
namespace {

struct BenchArgs {
  std::string test;
  workloads::BenchOptions o;
  std::string duration = "60s", round = "1s", window;
};

}  // namespace

void add_bench_command(CLI::App& app) {
  auto a = std::make_shared<BenchArgs>();
  auto* sub = app.add_subcommand("bench", "Drive-state tests: precondition, consistency, trim, fresh-vs-used");
  sub->add_option("TEST", a->test, "precondition, consistency, trim or fresh-vs-used")
      ->required()
      ->check(CLI::IsMember({"precondition", "consistency", "trim", "fresh-vs-used"}));
  sub->add_option("--target", a->o.target, "Block device or file; its whole contents are overwritten")->required();
  sub->add_option("-o,--output", a->o.out_dir, "Directory for the result traces and summary.json")->required();
  sub->add_flag("--allow-write", a->o.allow_write, "Required: every test writes the target");
  sub->add_flag("--force", a->o.force, "Write even a device that is mounted or in use");
  sub->add_option("--fill-passes", a->o.fill_passes, "Sequential 128 KiB fill: 1 or 2 x capacity")
      ->check(CLI::Range(1, 2))
      ->capture_default_str();
  sub->add_option("--duration", a->duration,
                  "Random-write time, e.g. 90s, 30m (consistency, trim's dirtying); the limit of precondition's "
                  "steady-state rounds")
      ->capture_default_str();
  sub->add_option("--round", a->round, "precondition: length of one steady-state round, e.g. 500ms, 5s")
      ->capture_default_str();
  sub->add_option("--window", a->window,
                  "consistency: length of the final window for the steady-state figures, e.g. 5m (default: last fifth)");
  sub->add_option("--span-pct", a->o.span_pct, "consistency: share of the capacity written (75 = 25% over-provisioning)")
      ->check(CLI::Range(1.0, 100.0))
      ->capture_default_str();
  sub->add_option("--qd", a->o.qd, "Queue depth of the synthetic phases")->check(CLI::Range(1, 1024))->capture_default_str();
  sub->add_option("--threads", a->o.threads,
                  "Issue threads, each with a ring of its own and a share of --qd (default: one per 8 IOs in "
                  "flight, up to the CPUs iotape may use)")
      ->check(CLI::Range(1, 1024));
  sub->add_flag("--iopoll", a->o.ring.iopoll,
                "Polled completions (io_uring IOPOLL) for the closed-loop phases, onto a device with poll queues "
                "(queue/io_poll is 1), as `replay --iopoll`");
  sub->add_flag("--sqpoll", a->o.ring.sqpoll,
                "A kernel submission thread (io_uring SQPOLL) per issue thread of the closed-loop phases, as "
                "`replay --sqpoll`");
  sub->add_option("--seed", a->o.seed, "Seed of the random offsets and of a synthesized workload")->capture_default_str();
  sub->add_option("--workload", a->o.workload, "fresh-vs-used: a profile or a trace")->capture_default_str();
  sub->add_option("--workload-ios", a->o.workload_ios, "fresh-vs-used: IOs of a profile's trace")->capture_default_str();
  sub->footer(
      "precondition: fill, then 4 KiB random writes in rounds until SNIA PTS steady state (5 rounds: max-min <= 20%\n"
      "  of the mean, least-squares excursion <= 10%). consistency: fill, then 4 KiB random writes for --duration,\n"
      "  IOPS every second. trim: 128 KiB sequential write MB/s clean (after a discard of everything), dirty (after\n"
      "  --duration of random writes) and trimmed (after another discard). fresh-vs-used: the workload replayed\n"
      "  on the discarded target and on the filled one.");
  sub->callback([a] {
    a->o.duration_ns = units::parse_duration(a->duration, "--duration");
    a->o.round_ns = units::parse_duration(a->round, "--round");
    if (!a->window.empty()) a->o.window_ns = units::parse_duration(a->window, "--window");
    const auto summary = workloads::run_bench(a->test, a->o);
    fmt::print("{}\n", summary.dump(2));
  });
}

}  // namespace iotape::cli

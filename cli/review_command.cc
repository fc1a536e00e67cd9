// iotape review: the review suite on one drive, with progress on stderr.
#include <unistd.h>

#include <fmt/format.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <exception>
#include <mutex>
#include <thread>

#include "capture/recorder.h"
#include "cli/commands.h"
#include "cli/stop_signals.h"
#include "replay/target.h"
#include "workloads/review.h"

namespace iotape::cli {
namespace {

std::string clock(double s) {
  const int t = static_cast<int>(s + 0.5);
  return t >= 60 ? fmt::format("{}m{:02}s", t / 60, t % 60) : fmt::format("{}s", t);
}

// `iotape record` of one device on a thread of its own, from construction
// (once the probes are attached) to destruction.
class Recording : public workloads::Recording {
 public:
  Recording(const std::string& device, const std::string& trace) {
    capture::RecordOptions ro;
    ro.devices = {device};
    ro.output.path = trace;
    capture::RecordCallbacks cb;
    cb.note = [this](const std::string& note) {
      if (note.rfind("recording ", 0) != 0) return;
      std::lock_guard lock(m_);
      started_ = true;
      cv_.notify_all();
    };
    thread_ = std::thread([this, ro, cb] {
      try {
        capture::record(ro, stop_, cb);
      } catch (...) {
        std::lock_guard lock(m_);
        error_ = std::current_exception();
        cv_.notify_all();
      }
    });
    std::unique_lock lock(m_);
    cv_.wait(lock, [&] { return started_ || error_; });
    if (error_) {
      lock.unlock();
      thread_.join();
      std::rethrow_exception(error_);
    }
  }
  ~Recording() override {
    stop_ = true;
    thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::mutex m_;
  std::condition_variable cv_;
  bool started_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

void run(workloads::ReviewOptions& o, bool dry_run) {
  o.record = [](const std::string& device, const std::string& trace) -> std::unique_ptr<workloads::Recording> {
    return std::make_unique<Recording>(device, trace);
  };
  if (dry_run) {
    const replay::Target t = replay::open_target(o.target, false, true);
    fmt::print("{}", workloads::describe_review_plan(workloads::review_plan(o, t.size), o));
    return;
  }
  StopSignals signals;
  const bool tty = ::isatty(STDERR_FILENO);
  const auto show = [&](const workloads::ReviewProgress& p) {
    if (p.skipped) {
      fmt::print(stderr, "[{}/{}] {}: done in an earlier run, kept\n", p.index + 1, p.count, p.test);
    } else if (p.finished) {
      fmt::print(stderr, "[{}/{}] {}: done at {}; about {} left\n", p.index + 1, p.count, p.test, clock(p.elapsed_s),
                 clock(p.remaining_s));
    } else {
      fmt::print(stderr, "[{}/{}] {}: running ({} elapsed, ETA {}){}", p.index + 1, p.count, p.test,
                 clock(p.elapsed_s), clock(p.remaining_s), tty ? "\r" : "\n");
    }
    std::fflush(stderr);
  };
  const auto out = workloads::run_review(o, signals.flag(), show);
  fmt::print("review     {}/review.html, {}/review.json\n", o.out_dir, o.out_dir);
  fmt::print("tests      {} run, {} kept from an earlier run, in {}{}\n", out.run, out.skipped, clock(out.duration_s),
             out.interrupted ? "; interrupted: rerun the same command to finish" : "");
  if (out.interrupted) throw ExitCode{kExitInterrupted};
}

}  // namespace

void add_review_command(CLI::App& app) {
  auto o = std::make_shared<workloads::ReviewOptions>();
  auto dry_run = std::make_shared<bool>(false);
  auto* sub = app.add_subcommand("review", "Run the drive review suite on one target; write review.json and review.html");
  sub->add_option("--target", o->target, "Block device or file; its whole contents are overwritten")->required();
  sub->add_option("-o,--output", o->out_dir, "Directory for the results (resumable: finished tests are kept)")
      ->required();
  sub->add_flag("--allow-write", o->allow_write, "Required: the suite writes the whole target");
  sub->add_flag("--force", o->force, "Write even a device that is mounted or in use");
  sub->add_flag("--quick", o->quick, "The scaled-down suite: every test and chart, a few minutes on a 1 GiB device");
  sub->add_option("--tests", o->tests, "Only these tests, comma-separated (default: all; see below)")->delimiter(',');
  sub->add_option("--label", o->label, "The drive's name on the page (default: the device name)");
  sub->add_option("--seed", o->seed, "Seed of the random offsets and synthesized workloads")->capture_default_str();
  sub->add_option("--threads", o->threads,
                  "Issue threads of the closed-loop tests, each with a ring of its own and a share of the queue "
                  "depth (default: one per 8 IOs in flight, up to the CPUs iotape may use)")
      ->check(CLI::Range(1, 1024));
  sub->add_flag("--iopoll", o->ring.iopoll,
                "Polled completions (io_uring IOPOLL) for the closed-loop tests, onto a device with poll queues "
                "(queue/io_poll is 1), as `replay --iopoll`");
  sub->add_flag("--sqpoll", o->ring.sqpoll,
                "A kernel submission thread (io_uring SQPOLL) per issue thread of the closed-loop tests, as "
                "`replay --sqpoll`");
  sub->add_flag("--dry-run", *dry_run, "Print the plan with each test's estimated duration and the total; touch nothing");
  std::string names;
  for (const auto& n : workloads::review_test_names()) names += (names.empty() ? "" : ", ") + n;
  sub->footer(
      "Tests, in order: " + names +
      ".\nsecure-state discards everything, then fills the target sequentially (the read tests read written blocks).\n"
      "fresh-vs-used runs 4 KiB random, 128 KiB sequential, database and Storage Bench tests on the discarded\n"
      "target, then again after 4 KiB random writes to steady state; the page shows the drop in % per test.\n"
      "file-level repartitions the target (two ext4 partitions), mounts them under DIR and records each step's\n"
      "block IO with the eBPF recorder into DIR/tests/file-level; it runs fresh (target and partitions\n"
      "discarded) and used (target filled, mkfs -E nodiscard).\n"
      "Each finished test is kept in DIR/tests/NAME (result.json and its traces); a rerun with the same --target,\n"
      "--quick, --label and --seed skips it; other options are refused. DIR/review.html is one page with every\n"
      "chart; `iotape compare DIR1 DIR2 ...` puts several drives on one page.\n"
      "Exit status: 0 done, 130 interrupted (the test in progress is discarded; rerun to finish), 77 a target\n"
      "refused (mounted, swap, held; nothing written).");
  sub->callback([o, dry_run] { run(*o, *dry_run); });
}

}  // namespace iotape::cli

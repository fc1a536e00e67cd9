// The subcommands of `iotape`. Each module adds its own to the app; the
// callback it sets does the work and throws on failure (main prints the
// message and exits non-zero) or throws ExitCode for other exit statuses.
#pragma once

#include <CLI/CLI.hpp>

namespace iotape::cli {

struct ExitCode {
  int code;
};

void add_import_command(CLI::App& app);
void add_info_command(CLI::App& app);
void add_cat_command(CLI::App& app);
void add_export_command(CLI::App& app);
void add_record_command(CLI::App& app);   // capture/
void add_report_command(CLI::App& app);   // analysis/
void add_compare_command(CLI::App& app);  // analysis/
void add_replay_command(CLI::App& app);   // replay/
void add_synth_command(CLI::App& app);    // workloads/
void add_cut_command(CLI::App& app);      // workloads/
void add_bench_command(CLI::App& app);    // workloads/

}  // namespace iotape::cli

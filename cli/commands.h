// The subcommands of `iotape`. Each file in cli/ adds one to the app; the
// callback it sets does the work and throws on failure (main prints the
// message and exits with the status of the error's kind, cli/exit_status.h)
// or throws ExitCode for another status.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/exit_status.h"

namespace iotape::cli {

void add_import_command(CLI::App& app);
void add_info_command(CLI::App& app);
void add_cat_command(CLI::App& app);
void add_export_command(CLI::App& app);
void add_record_command(CLI::App& app);
void add_report_command(CLI::App& app);
void add_compare_command(CLI::App& app);
void add_replay_command(CLI::App& app);
void add_synth_command(CLI::App& app);
void add_cut_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_review_command(CLI::App& app);

}  // namespace iotape::cli

#include <google/protobuf/stubs/common.h>

#include <cstdio>
#include <exception>

#include "cli/commands.h"
#include "format/version.h"

int main(int argc, char** argv) {
  CLI::App app{"iotape: record, import, inspect, replay and analyse block-I/O traces"};
  app.set_version_flag("--version", std::string("iotape ") + iotape::format::kVersion);
  app.require_subcommand(1);
  app.footer(iotape::cli::kExitStatusHelp);
  iotape::cli::add_import_command(app);
  iotape::cli::add_info_command(app);
  iotape::cli::add_cat_command(app);
  iotape::cli::add_export_command(app);
  iotape::cli::add_record_command(app);
  iotape::cli::add_report_command(app);
  iotape::cli::add_compare_command(app);
  iotape::cli::add_replay_command(app);
  iotape::cli::add_synth_command(app);
  iotape::cli::add_cut_command(app);
  iotape::cli::add_bench_command(app);
  iotape::cli::add_review_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : iotape::cli::kExitUsage;
  } catch (const iotape::cli::ExitCode& e) {
    return e.code;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "iotape: %s\n", e.what());
    return iotape::cli::exit_status_of(e);
  }
  google::protobuf::ShutdownProtobufLibrary();
  return 0;
}

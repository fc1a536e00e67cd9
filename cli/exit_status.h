// iotape's exit statuses, in one place: what each means, and which error kind
// (format/error.h) ends a command with which. `iotape --help` prints the table.
#pragma once

#include <exception>

namespace iotape::cli {

enum ExitStatus : int {
  kExitOk = 0,
  kExitError = 1,        // any other failure
  kExitDamaged = 2,      // a trace is damaged: the output covers the IOs before the damage
  kExitStopped = 3,      // record: the output could not be written (disk full); replay: --stop-on-error
  kExitUsage = 64,       // a bad option or argument (UsageError, or the command line itself)
  kExitBadInput = 65,    // input that is not what it should be (InputError: file and offset or line)
  kExitIo = 74,          // a system call failed (IoError)
  kExitRefused = 77,     // a device iotape will not use without --force (DeviceRefused)
  kExitInterrupted = 130,  // SIGINT/SIGTERM (record stops cleanly with 0)
};

// Thrown by a command to end with a status other than the one its error kind maps to.
struct ExitCode {
  int code;
};

// The status for an exception a command threw.
int exit_status_of(const std::exception& e);

// The table for --help.
extern const char* const kExitStatusHelp;

}  // namespace iotape::cli

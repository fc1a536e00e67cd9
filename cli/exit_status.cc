#include "cli/exit_status.h"

#include "format/error.h"

namespace iotape::cli {

int exit_status_of(const std::exception& e) {
  if (dynamic_cast<const format::UsageError*>(&e)) return kExitUsage;
  if (dynamic_cast<const format::InputError*>(&e)) return kExitBadInput;
  if (dynamic_cast<const format::IoError*>(&e)) return kExitIo;
  if (dynamic_cast<const format::DeviceRefused*>(&e)) return kExitRefused;
  return kExitError;
}

const char* const kExitStatusHelp =
    "Exit status: 0 done; 1 error; 2 a trace is damaged (output up to the damage); 3 record: the output could\n"
    "not be written, replay: stopped by --stop-on-error; 64 bad option or argument; 65 bad input (the message\n"
    "names the file and offset or line); 74 a system call failed; 77 a device refused (mounted, swap, held,\n"
    "bio-based); 130 interrupted.";

}  // namespace iotape::cli

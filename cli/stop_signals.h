// SIGINT and SIGTERM as a stop flag for the long-running commands (record,
// replay). Installed without SA_RESTART, so a signal also cuts a blocking
// wait short; the previous handlers come back on destruction.
#pragma once

#include <signal.h>

#include <atomic>

namespace iotape::cli {

class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  const std::atomic<bool>& flag() const;
  bool stopped() const { return flag().load(); }

 private:
  struct sigaction old_int_ {}, old_term_ {};
};

}  // namespace iotape::cli

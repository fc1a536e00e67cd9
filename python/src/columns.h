// The columns the reader offers, in the order of iotape.SCHEMA
// (python/iotape/__init__.py), which checks that the names agree. Python names
// columns by their position here (Reader.next's `cols`).
#pragma once

#include <array>

namespace iotape::python {

enum Col : int {
  kIndex, kDevice, kDeviceName, kOp, kFlags, kOffset, kLength, kQueue, kIssue, kComplete,
  kStatus, kPid, kComm, kCpu, kCgroup, kSourceIndex, kColCount
};
inline constexpr std::array<const char*, kColCount> kColNames = {
    "index", "device", "device_name", "op", "flags", "offset", "length", "queue_ns", "issue_ns",
    "complete_ns", "status", "pid", "comm", "cpu", "cgroup", "source_index"};

}  // namespace iotape::python

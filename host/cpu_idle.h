// How this machine's idle CPUs wait, as a trace records it (metadata key
// `host.cpu_idle`). Deep idle states and vCPUs that halt at once add their
// exit latency to every wake-up on another CPU, which at queue depth 1 is
// most of a fast device's latency: a recording and its replay compare only
// under the same setting (README, "Low queue depth on a VM").
#pragma once

#include <filesystem>
#include <string>

namespace iotape::host {

// "driver D, governor G, states S1 + S2 (disabled) + ..., guest_halt_poll_ns N"
// from the cpuidle sysfs under `sys` (CPU 0's states; the haltpoll part only
// where that driver's parameters exist). Empty when there is no cpuidle.
std::string describe_cpu_idle(const std::filesystem::path& sys = "/sys");

}  // namespace iotape::host

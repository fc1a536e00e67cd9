// Versions of iotape and of the trace format it writes.
#pragma once

namespace iotape::format {
inline constexpr const char* kVersion = "0.1.0";
inline constexpr unsigned kFormatVersion = 1;  // major version of proto/iotape/v1
}  // namespace iotape::format

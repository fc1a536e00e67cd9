// The closing keys of a capture (capture.self_ios, capture.removed_parts,
// ...), as `iotape info` and `iotape report --html` show them.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "format/reader.h"

namespace iotape::cli {

// The last part's keys, header and end (a part that ended before its first
// chunk keeps them in its header); `reader` reads `traces` and answers for a
// trace of one file. A rotated capture's first header has the removals up to
// the second part only, hence the last part.
std::map<std::string, std::string> capture_end_keys(const std::vector<std::string>& traces,
                                                    const format::TraceReader& reader);

}  // namespace iotape::cli

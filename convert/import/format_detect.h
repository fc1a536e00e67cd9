// `iotape import auto`: which import format an input is in, judged from its
// first bytes (decompressed): magic numbers, header lines, and the field
// count and shape of the first lines.
#pragma once

#include <istream>
#include <string>

namespace iotape::convert {

// The importer name for the input read from `in` (`name` is cited in
// errors). Throws TraceError saying why when no format fits, or more than
// one does.
std::string detect_format(std::istream& in, const std::string& name);

// The same for a file, compressed or not.
std::string detect_file_format(const std::string& path);

}  // namespace iotape::convert

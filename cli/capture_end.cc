#include "cli/capture_end.h"

namespace iotape::cli {

std::map<std::string, std::string> capture_end_keys(const std::vector<std::string>& traces,
                                                    const format::TraceReader& reader) {
  if (traces.size() <= 1) return reader.metadata();
  format::TraceReader last_part(std::vector<std::string>{traces.back()});
  last_part.index();
  return last_part.metadata();
}

}  // namespace iotape::cli

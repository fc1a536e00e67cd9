// The device table of a trace read back from iotape's own per-IO exports
// (CSV, JSON lines), which name a device on every IO instead of in a table.
// Device indexes are kept: device N of the input is device N of the trace
// (after any the writer already had). Each is named as its IOs say, or, when
// the input has no name (older CSV), "MAJOR,MINOR"; a device no IO uses, or
// one with neither name nor major and minor, is "device N". The devices are
// added to the writer once every line is read (the ImportSink holds the IOs
// until then). The volume filter (ImportOptions::volumes, which names device
// indexes: "0", "1", ...) is the ImportSink's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "convert/import/importer.h"
#include "convert/import/text_lines.h"

namespace iotape::convert {

class ExportedDevices {
 public:
  explicit ExportedDevices(format::TraceWriter& out);

  // The trace's index of the input's device `device`, which this line says is
  // major:minor named `name` (nullopt: the line has no name). Fails when the
  // index is out of range or an earlier line said otherwise.
  uint32_t index(const FieldParser& p, uint64_t device, uint32_t major, uint32_t minor,
                 std::optional<std::string_view> name);

  // Adds every device up to the highest index seen to the writer.
  void add_devices();

 private:
  struct Seen {
    uint32_t major = 0, minor = 0;
    std::optional<std::string> name;
  };
  format::TraceWriter& out_;
  uint32_t first_;
  std::vector<std::optional<Seen>> seen_;  // by the input's device index
};

}  // namespace iotape::convert

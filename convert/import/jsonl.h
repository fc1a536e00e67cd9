// iotape's own JSON lines, as `iotape export jsonl` and `iotape cat --format
// jsonl` write them (text_formats.h): one object per line, one IO each,
//   {"index":0,"device":0,"dev":"8:0","device_name":"sda","op":"write",
//    "flags":1,"offset":4096,"length":4096,"queue_ns":990,"issue_ns":1000,
//    "complete_ns":1500,"status":-5,"pid":42,"comm":"fio","cgroup":7,"cpu":1,
//    "source_index":3}
// index, device, op, flags, offset, length and issue_ns must be there; the
// others are optional, as the export leaves out unknown values and defaults
// (Io's defaults then). flags are Io::flags. Any other key is an error, so a
// misspelt field is not silently lost. Importing an export gives the trace's
// IOs back field by field (index is ignored: IOs are sorted by issue time,
// ties kept in input order), and the device of every IO with its index,
// major, minor and name (exported_devices.h).
//
// Clock: whatever the trace exported had; the importer says RELATIVE.
// ImportOptions::volumes filters by device index ("0", "1", ...).
#pragma once

#include <span>

#include "convert/import/importer.h"
#include "convert/import/input.h"

namespace iotape::convert {

// Throws TraceError "FILE:LINE: why" on the first malformed line.
blockevents::ImportReport import_jsonl(std::span<const Input> inputs, const blockevents::ImportOptions& options,
                                       format::TraceWriter& out);

}  // namespace iotape::convert

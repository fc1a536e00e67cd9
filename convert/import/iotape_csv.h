// iotape's own CSV, as `iotape export csv` and `iotape cat --format csv`
// write it (text_formats.h): a header line, then
//   index,device,major,minor,op,flags,offset,length,queue_ns,issue_ns,
//   complete_ns,status,pid,comm,cgroup,cpu,source_index,flag_bits,device_name
// with flags as RWBS letters, flag_bits as Io::flags (the two must agree),
// empty queue_ns/complete_ns for unknown times and comm and device_name
// quoted the CSV way. Importing an export gives the trace's IOs back field by
// field (the index column is ignored: IOs are sorted by issue time, ties kept
// in input order), and the device of every IO with its index, major, minor
// and name (exported_devices.h). Older exports, without the last two
// columns, import too: without device names, and without the flags RWBS
// cannot show (background, no-merge, preflush of a flush).
//
// Clock: whatever the trace exported had; the importer says RELATIVE.
// ImportOptions::volumes filters by device index ("0", "1", ...).
#pragma once

#include <span>

#include "convert/import/importer.h"
#include "convert/import/input.h"

namespace iotape::convert {

// Throws TraceError "FILE:LINE: why" on the first malformed line.
blockevents::ImportReport import_iotape_csv(std::span<const Input> inputs, const blockevents::ImportOptions& options,
                                            format::TraceWriter& out);

}  // namespace iotape::convert

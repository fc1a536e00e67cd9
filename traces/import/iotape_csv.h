// iotape's own CSV, as `iotape export csv` and `iotape cat --format csv`
// write it (text_formats.h): a header line, then
//   index,device,major,minor,op,flags,offset,length,queue_ns,issue_ns,
//   complete_ns,status,pid,comm,cgroup,cpu,source_index
// with flags as RWBS letters, empty queue_ns/complete_ns for unknown times
// and comm quoted the CSV way. Importing an export gives the trace's IOs back
// field by field (the index column is ignored: IOs are sorted by issue time,
// ties kept in input order). Device indexes are kept: device N of the input
// is device N of the trace, named "MAJOR,MINOR" (or "device N" when its
// major and minor are 0 or it has no rows). The device name is not in the
// CSV; nor are the flags RWBS cannot show (background, no-merge).
//
// Clock: whatever the trace exported had; the importer says RELATIVE.
// ImportOptions::volumes filters by device index ("0", "1", ...).
#pragma once

#include <span>

#include "traces/import/importer.h"
#include "traces/import/input.h"

namespace iotape {

// Throws TraceError "FILE:LINE: why" on the first malformed line.
ImportReport import_iotape_csv(std::span<const Input> inputs, const ImportOptions& options, TraceWriter& out);

}  // namespace iotape

// fio iolog files (fio HOWTO "Trace file format"), version 2 or 3:
//   v2: "fio version 2 iolog", then "FILE add|open|close" and
//       "FILE read|write|sync|datasync|trim|wait OFFSET LENGTH"
//   v3: "fio version 3 iolog", then "TIME FILE add|open|close" and
//       "TIME FILE read|write|sync|datasync|trim OFFSET LENGTH"
// v3 TIME is microseconds since the log start. v2 has no times: its IOs are
// issued at the last `wait`, which waits until OFFSET milliseconds since the
// job start (fio's iolog.c, not what the HOWTO says), 0 before the first.
//
// Clock RELATIVE. Each added FILE becomes a device named after it; an IO on a
// file that was not added is an error (fio itself crashes on it). sync and
// datasync are flushes, trim a discard.
#pragma once

#include <span>

#include "convert/import/importer.h"
#include "convert/import/input.h"

namespace iotape::convert {

// Throws TraceError "FILE:LINE: why" on the first malformed line.
blockevents::ImportReport import_fio_iolog(std::span<const Input> inputs, const blockevents::ImportOptions& options,
                                           format::TraceWriter& out);

}  // namespace iotape::convert

// MSR Cambridge block traces (SNIA IOTTA): CSV lines without a header,
//   Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime
// with Timestamp a Windows FILETIME (100 ns ticks since 1601), Type Read or
// Write, Offset and Size in bytes and ResponseTime in 100 ns ticks.
//
// IOs get Unix-epoch issue times (clock REALTIME) and completion = issue +
// response. Every distinct (Hostname, DiskNumber) becomes a device named
// "HOST_DISK" (e.g. "hm_0"). Input is read line by line.
#pragma once

#include <span>

#include "convert/import/importer.h"
#include "convert/import/input.h"

namespace iotape::convert {

// Appends the IOs of the CSV inputs; throws TraceError "FILE:LINE: why" on the
// first malformed line.
blockevents::ImportReport import_msr(std::span<const Input> inputs, format::TraceWriter& out);

}  // namespace iotape::convert

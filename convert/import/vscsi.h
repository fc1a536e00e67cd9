// VMware vscsiStats / CloudPhysics block traces: fixed-size little-endian
// binary records, in one of two layouts (the version is ver >> 8):
//   v1, 32 B: u32 sn, u32 len, u32 nSG, u16 cmd, u16 ver, u64 lbn, u64 ts
//   v2, 40 B: u16 cmd, u16 ver, u32 sn, u32 len, u32 nSG, u64 lbn, u64 ts, u64 rt
// ts and rt (response time) are microseconds, lbn is in 512 B sectors, len in
// bytes and cmd a SCSI opcode.
//
// Clock RELATIVE: issue = ts; v2 also gives completion = ts + rt. Each input
// is one device, named after its file. The version is taken from the first
// record and every later record must agree.
#pragma once

#include <cstdint>
#include <span>

#include "convert/import/importer.h"
#include "convert/import/input.h"

namespace iotape::convert {

// READ/WRITE(6/10/12/16), SYNCHRONIZE CACHE and UNMAP; everything else, WRITE
// SAME included (whether it unmaps is in its CDB, which the trace lacks), is
// Op::kOther.
format::Op vscsi_op(uint16_t cmd);

// Appends the IOs of the inputs, each as a new device; throws TraceError
// "FILE: byte N: why" on the first malformed record.
blockevents::ImportReport import_vscsi(std::span<const Input> inputs, format::TraceWriter& out);

}  // namespace iotape::convert

// IOs as lines of text for people and other programs (iotape cat, iotape export).
#pragma once

#include <cstdint>
#include <string>

#include "format/io.h"
#include "iotape/v1/trace.pb.h"

namespace iotape::convert {

// iotape's RWBS letters: F (preflush, except on a flush), the op R/W/F/D/Z/N,
// then F (FUA), A (readahead), S (sync), M (meta).
std::string rwbs(const format::Io& io);

// One line, no newline. `t0` is subtracted from the times of the text format.
std::string format_text(const format::Io& io, uint64_t index, const v1::Device* dev, int64_t t0);
// CSV: the columns of csv_header(). flags are RWBS letters, for people;
// flag_bits is Io::flags (every flag:: bit, also those RWBS cannot show).
// Unknown queue and completion times are empty; comm and device_name are
// quoted the CSV way.
std::string csv_header();
std::string format_csv(const format::Io& io, uint64_t index, const v1::Device* dev);
// JSON lines: an object with index, device, dev ("MAJ:MIN"), device_name,
// op, flags (Io::flags), offset, length, queue_ns, issue_ns, complete_ns,
// status, pid, comm, cgroup, cpu and source_index, leaving out unknown
// values and defaults (dev and device_name when the device table has no
// such device). Name bytes that are not UTF-8 become U+FFFD.
std::string format_jsonl(const format::Io& io, uint64_t index, const v1::Device* dev);

}  // namespace iotape::convert

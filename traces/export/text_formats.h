// IOs as lines of text for people and other programs (iotape cat, iotape export).
#pragma once

#include <cstdint>
#include <string>

#include "iotape/v1/trace.pb.h"
#include "traces/io.h"

namespace iotape {

// blkparse-like RWBS letters: R/W/F/D/Z/N, then F (FUA), S (sync), M (meta), A (readahead).
std::string rwbs(const Io& io);

// One line, no newline. `t0` is subtracted from the times of the text format.
std::string format_text(const Io& io, uint64_t index, const v1::Device* dev, int64_t t0);
std::string csv_header();
std::string format_csv(const Io& io, uint64_t index, const v1::Device* dev);
std::string format_jsonl(const Io& io, uint64_t index, const v1::Device* dev);

}  // namespace iotape

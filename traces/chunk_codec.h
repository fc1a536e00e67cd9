// Turns a batch of IOs into the columns of a v1::Chunk and back.
// The column encodings are documented on message Chunk in proto/.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "iotape/v1/trace.pb.h"
#include "traces/io.h"

namespace iotape {

// Fills the columns and comm table of `out` (other fields are left alone).
// Columns whose every value encodes to 0 are left empty.
void encode_chunk(std::span<const Io> ios, uint64_t first_index, v1::Chunk* out);

// Decodes `chunk` into `out` (replacing its contents). The comm views point
// into chunk.comm_table(), so `chunk` must outlive them. Returns false and sets
// `why` if the chunk is inconsistent (column lengths, out-of-range values).
bool decode_chunk(const v1::Chunk& chunk, std::vector<Io>* out, std::string* why);

// The largest chunk a reader accepts, in IOs.
inline constexpr uint32_t kMaxChunkIos = 1u << 24;

}  // namespace iotape

// Parses a v1::Chunk's wire bytes as iotape's writers lay them out, faster
// than protobuf's generated parser: the packed columns are most of a chunk,
// and their varints are decoded 64 bytes at a time, without a branch on each
// varint's length.
//
// The fast path takes only what it knows: the Chunk's fields (v1 as of this
// file) with their proto3 wire types, tags of at most 2 bytes, lengths of at
// most 4 and other varints of at most 10. For any other input (an unknown
// field, a repeated scalar sent unpacked, a varint or length that runs past
// the end, a device that does not parse) it returns false, and the caller
// parses the bytes with protobuf, whose verdict stands. Where it returns
// true, *out equals what protobuf's ParseFromArray makes of the same bytes
// (fuzz/fuzz_chunk_wire.cc checks that on any bytes).
#pragma once

#include <string_view>

#include "iotape/v1/trace.pb.h"

namespace iotape::format {

// Clears *out and fills it from `wire`; false when `wire` is not for the fast
// path (*out is then in some state the caller must not use).
bool parse_chunk_fast(std::string_view wire, v1::Chunk* out);

}  // namespace iotape::format

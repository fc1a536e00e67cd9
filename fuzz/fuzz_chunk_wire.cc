// libFuzzer target: arbitrary bytes through the fast chunk parser. Where it
// takes them, protobuf must take them too and make the same chunk of them.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "format/chunk_wire.h"
#include "iotape/v1/trace.pb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view wire(reinterpret_cast<const char*>(data), size);
  iotape::v1::Chunk fast, slow;
  if (!iotape::format::parse_chunk_fast(wire, &fast)) return 0;
  if (!slow.ParseFromArray(data, static_cast<int>(size))) std::abort();
  if (fast.SerializeAsString() != slow.SerializeAsString()) std::abort();
  return 0;
}

// libFuzzer target: arbitrary bytes through the decompressing stream. Bytes
// without a compression magic must come out unchanged; anything else may be
// refused with TraceError, never crash or hang.
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>

#include "convert/import/decompress_stream.h"
#include "format/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  std::stringbuf source(bytes);
  try {
    iotape::convert::DecompressingStream in(&source, "input");
    std::string out;
    char buf[4096];
    // A small bound on the output: decompression bombs are not findings.
    while (out.size() < (64u << 20) && in.read(buf, sizeof buf).gcount() > 0) out.append(buf, static_cast<size_t>(in.gcount()));
    if (in.compression() == iotape::convert::Compression::kNone && out != bytes) std::abort();
  } catch (const iotape::format::TraceError&) {
  }
  return 0;
}

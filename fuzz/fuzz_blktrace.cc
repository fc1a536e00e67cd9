// libFuzzer target: arbitrary bytes as blktrace input, cut into two per-CPU files.
#include "convert/import/blktrace.h"
#include "fuzz/import_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return iotape::fuzz::import_bytes(iotape::convert::import_blktrace, {data, size}, true);
}

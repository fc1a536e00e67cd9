// libFuzzer target: arbitrary bytes as Tencent CBS CSV input.
#include "fuzz/import_fuzz.h"
#include "convert/import/tencent.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return iotape::fuzz::import_bytes_spilling(iotape::import_tencent, {data, size});
}

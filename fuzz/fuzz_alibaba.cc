// libFuzzer target: arbitrary bytes as Alibaba CSV input.
#include "convert/import/alibaba.h"
#include "fuzz/import_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return iotape::fuzz::import_bytes_spilling(iotape::convert::import_alibaba, {data, size});
}

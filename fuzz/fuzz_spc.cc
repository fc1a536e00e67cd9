// libFuzzer target: arbitrary bytes as SPC CSV input.
#include "convert/import/spc.h"
#include "fuzz/import_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return iotape::fuzz::import_bytes_spilling(iotape::convert::import_spc, {data, size});
}

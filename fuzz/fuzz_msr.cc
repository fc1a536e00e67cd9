// libFuzzer target: arbitrary bytes as msr input.
#include "convert/import/msr.h"
#include "fuzz/import_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return iotape::fuzz::import_bytes(iotape::convert::import_msr, {data, size});
}

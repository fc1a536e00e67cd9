// libFuzzer target: arbitrary bytes as SYSTOR CSV input.
#include "fuzz/import_fuzz.h"
#include "convert/import/systor.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return iotape::fuzz::import_bytes_spilling(iotape::import_systor, {data, size});
}

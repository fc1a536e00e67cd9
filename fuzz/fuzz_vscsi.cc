// libFuzzer target: arbitrary bytes as vscsi input.
#include "fuzz/import_fuzz.h"
#include "convert/import/vscsi.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return iotape::fuzz::import_bytes(iotape::import_vscsi, {data, size});
}

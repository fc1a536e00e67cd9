// libFuzzer target: arbitrary bytes as vscsi input.
#include "convert/import/vscsi.h"
#include "fuzz/import_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return iotape::fuzz::import_bytes(iotape::convert::import_vscsi, {data, size});
}

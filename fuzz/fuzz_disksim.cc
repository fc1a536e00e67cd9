// libFuzzer target: arbitrary bytes as DiskSim input.
#include "convert/import/disksim.h"
#include "fuzz/import_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return iotape::fuzz::import_bytes_spilling(iotape::convert::import_disksim, {data, size});
}

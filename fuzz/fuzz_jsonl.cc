// libFuzzer target: arbitrary bytes as iotape JSON lines input.
#include "convert/import/jsonl.h"
#include "fuzz/import_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return iotape::fuzz::import_bytes_spilling(iotape::convert::import_jsonl, {data, size});
}

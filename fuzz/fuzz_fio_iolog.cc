// libFuzzer target: arbitrary bytes as fio iolog input.
#include "fuzz/import_fuzz.h"
#include "convert/import/fio_iolog.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return iotape::fuzz::import_bytes_spilling(iotape::import_fio_iolog, {data, size});
}

// libFuzzer target: arbitrary bytes as fio iolog input.
#include "convert/import/fio_iolog.h"
#include "fuzz/import_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return iotape::fuzz::import_bytes_spilling(iotape::convert::import_fio_iolog, {data, size});
}

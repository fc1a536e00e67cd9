// libFuzzer target: arbitrary bytes as fio iolog input.
#include "fuzz/import_fuzz.h"
#include "traces/import/fio_iolog.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Small sort runs, so spilling and merging are fuzzed too.
  static constexpr auto import = [](std::span<const iotape::Input> in, iotape::TraceWriter& out) {
    iotape::ImportOptions options;
    options.sort_run_ios = 16;
    options.spill_dir = "/dev/shm";
    return iotape::import_fio_iolog(in, options, out);
  };
  return iotape::fuzz::import_bytes(import, {data, size});
}

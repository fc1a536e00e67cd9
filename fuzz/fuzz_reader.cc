// libFuzzer target: arbitrary bytes as an iotape trace file. Reading must end
// in IOs, a damage status or a TraceError; never a crash, an abort or a leak.
// An input starting with a 0 byte is a frames input (see frames_input.h).
#include <google/protobuf/stubs/logging.h>

#include <cstdint>
#include <cstring>

#include "format/chunk_codec.h"
#include "format/error.h"
#include "format/reader.h"
#include "fuzz/frames_input.h"
#include "fuzz/memory_file.h"

namespace {

// Touches every field, so a stale comm view is caught by the sanitizer.
uint64_t consume(iotape::format::TraceReader& reader) {
  uint64_t sum = 0;
  for (auto batch = reader.next_batch(); !batch.empty(); batch = reader.next_batch())
    for (const iotape::format::Io& io : batch) {
      sum += static_cast<uint64_t>(io.issue_ns) + io.offset + io.length + io.device + io.pid + io.flags;
      for (char c : io.comm) sum += static_cast<unsigned char>(c);
    }
  return sum;
}

// The chunks whole, as readers of columns take them (TraceReader::next_chunk).
uint64_t consume_chunks(iotape::format::TraceReader& reader) {
  uint64_t sum = 0;
  std::vector<iotape::format::Io> rows;
  for (auto view = reader.next_chunk(); view.chunk; view = reader.next_chunk()) {
    iotape::format::decode_chunk(*view.chunk, &rows);
    for (size_t i = view.first_row; i < rows.size(); ++i)
      sum += static_cast<uint64_t>(rows[i].complete_ns) + rows[i].offset + rows[i].comm.size();
  }
  return sum;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Strings that are not UTF-8 fail to parse, as they should; protobuf also logs each one.
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static iotape::fuzz::MemoryFile file("iotape-fuzz-reader");
  if (size > 0 && data[0] == 0) {
    const std::string built = iotape::fuzz::file_from_frames({data + 1, size - 1});
    file.assign({reinterpret_cast<const uint8_t*>(built.data()), built.size()});
  } else {
    file.assign({data, size});
  }
  volatile uint64_t sink = 0;
  for (bool skip_damaged : {false, true}) {
    try {
      iotape::format::TraceReader reader(file.path(), {.skip_damaged = skip_damaged});
      sink = sink + consume(reader) + reader.dropped_events() + reader.late_ios();
      // Seeking uses the index when there is one: to a time taken from the input.
      int64_t t = 0;
      if (size >= sizeof t) std::memcpy(&t, data + size - sizeof t, sizeof t);
      reader.seek_time(t);
      sink = sink + consume(reader);
      iotape::format::TraceReader chunks(file.path(), {.skip_damaged = skip_damaged});
      sink = sink + consume_chunks(chunks);
      chunks.seek_time(t);
      sink = sink + consume_chunks(chunks);
    } catch (const iotape::format::TraceError&) {
    }
  }
  return 0;
}

// blktrace's binary records (format/blktrace_layout.h) decoded into
// TraceEvents, from bytes in memory: the records of a blktrace file, or of
// the ftrace blk tracer's binary stream (options/bin), which has their form.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "blockevents/events.h"
#include "format/blktrace_layout.h"

namespace iotape::blockevents {

class RecordDecoder {
 public:
  // `name` names the input in errors.
  explicit RecordDecoder(std::string name) : name_(std::move(name)) {}

  // The size (header and payload) of the record whose header starts at
  // `header` (sizeof(blktrace::Record) bytes), at byte `at` of the input.
  // The first record (at 0) decides the byte order. Throws InputError on a
  // header that is not blktrace's.
  size_t record_size(const char* header, uint64_t at);

  // Decodes the whole record at `record` (record_size() bytes), at byte `at`
  // of the input. The event's comm points into the decoder until the next call.
  const TraceEvent& decode(const char* record, uint64_t at);

  const TraceEvent& event() const { return ev_; }  // the latest decoded
  const std::string& name() const { return name_; }

 private:
  format::blktrace::Record header(const char* p) const;
  void decode_payload(std::string_view payload, uint64_t at);

  std::string name_;
  bool swap_ = false;
  TraceEvent ev_;
  std::string comm_;
};

}  // namespace iotape::blockevents

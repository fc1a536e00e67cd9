#include "convert/import/blktrace.h"

#include <queue>
#include <string_view>

#include "blockevents/block_io_assembler.h"
#include "blockevents/record_decoder.h"
#include "format/blktrace_layout.h"
#include "format/error.h"

namespace iotape::convert {
namespace {

// The records of one input, in file order.
class EventStream {
 public:
  explicit EventStream(const Input& in) : in_(in), decoder_(in.name) {}

  // Reads the next event; false at the end of the input.
  bool next() {
    record_.resize(sizeof(format::blktrace::Record));
    const size_t got = read_bytes(*in_.stream, record_.data(), record_.size());
    if (got == 0) return false;
    if (got < record_.size())
      throw format::error_at_byte(
          in_.name, pos_,
          "truncated record: " + std::to_string(got) + " of " + std::to_string(record_.size()) + " bytes");
    const size_t size = decoder_.record_size(record_.data(), pos_);
    const size_t pdu_len = size - record_.size();
    record_.resize(size);
    if (read_bytes(*in_.stream, record_.data() + sizeof(format::blktrace::Record), pdu_len) < pdu_len)
      throw format::error_at_byte(in_.name, pos_,
                                  "truncated record: payload of " + std::to_string(pdu_len) + " bytes cut short");
    decoder_.decode(record_.data(), pos_);
    at_ = pos_;
    pos_ += size;
    return true;
  }

  const blockevents::TraceEvent& event() const { return decoder_.event(); }
  uint64_t at() const { return at_; }  // byte offset of the event's record
  const std::string& name() const { return in_.name; }

 private:
  Input in_;
  blockevents::RecordDecoder decoder_;
  uint64_t pos_ = 0;
  uint64_t at_ = 0;
  std::string record_;
};

}  // namespace

blockevents::ImportReport import_blktrace(std::span<const Input> inputs, format::TraceWriter& out) {
  if (inputs.empty()) throw format::UsageError("no blktrace inputs");
  std::vector<EventStream> streams(inputs.begin(), inputs.end());
  // Merge the inputs by event time; within one input, file order stands.
  auto later = [&streams](size_t a, size_t b) {
    const uint64_t ta = streams[a].event().time, tb = streams[b].event().time;
    return ta != tb ? ta > tb : a > b;
  };
  std::priority_queue<size_t, std::vector<size_t>, decltype(later)> heads(later);
  for (size_t i = 0; i < streams.size(); ++i)
    if (streams[i].next()) heads.push(i);
  if (heads.empty())
    throw format::error_at_byte(
        inputs[0].name, 0, inputs.size() == 1 ? "empty file: no blktrace events" : "no blktrace events in any input");

  blockevents::ImportReport report;
  blockevents::WriterOutput output(out);
  blockevents::BlockIoAssembler assembler(output, report);
  while (!heads.empty()) {
    const size_t i = heads.top();
    heads.pop();
    ++report.records;
    assembler.on_event(streams[i].event(), {&streams[i].name(), streams[i].at(), false});
    if (streams[i].next()) heads.push(i);
  }
  assembler.finish();
  return report;
}

}  // namespace iotape::convert

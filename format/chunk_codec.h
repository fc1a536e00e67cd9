// Turns a batch of IOs into the columns of a v1::Chunk and back.
// The column encodings are documented on message Chunk in proto/.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "format/io.h"
#include "iotape/v1/trace.pb.h"

namespace iotape::format {

// Fills the columns and comm table of `out` (other fields are left alone).
// Columns whose every value encodes to 0 are left empty.
void encode_chunk(std::span<const Io> ios, uint64_t first_index, v1::Chunk* out);

// Whether `chunk` can be decoded: its size, column lengths, offset_shift and
// the operations, process names and devices its IOs name (`devices`: the
// trace's device table with this chunk's additions; device 0 is allowed in a
// trace without devices). Sets `why` if not.
bool check_chunk(const v1::Chunk& chunk, uint32_t devices, std::string* why);

// Decodes `chunk` into `out` (replacing its contents). The comm views point
// into chunk.comm_table(), so `chunk` must outlive them.
// REQUIRES: check_chunk(chunk) passed.
void decode_chunk(const v1::Chunk& chunk, std::vector<Io>* out);
// The same, handing each slice of rows [begin, end) to `each_slice` as soon
// as it is decoded (slices of kDecodeSlice rows, in order), while the rows are
// still in the core's first-level cache: a chunk's rows (16,384 by default,
// 1.7 MB) and its columns outgrow even its second level.
inline constexpr uint32_t kDecodeSlice = 256;
void decode_chunk(const v1::Chunk& chunk, std::vector<Io>* out,
                  const std::function<void(uint32_t begin, uint32_t end)>& each_slice);

// The largest chunk a reader accepts, in IOs.
inline constexpr uint32_t kMaxChunkIos = 1u << 24;

namespace codec {
// Wrapping arithmetic: deltas of arbitrary int64/uint64 values round-trip exactly.
inline int64_t wrap_sub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
inline int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
inline int64_t wrap_mul(int64_t a, uint64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) * b); }
inline uint64_t zigzag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
inline int64_t unzigzag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }
}  // namespace codec

// The fields of a chunk's IOs, decoded column by column: the one statement of
// each column's encoding. decode_chunk builds rows of Io from it; readers that
// want columns (the Python package's Arrow batches) decode just the fields
// they need straight into their own buffers.
//
// Each decoder calls put(i, value) for the rows i of [b, e), in order, with
// the value of the Io field of the same name. A column is decoded in
// consecutive ranges from row 0 (issue, offset, pid and cgroup are running
// sums), and each column at most once.
//
// REQUIRES: check_chunk(chunk) passed; `chunk` outlives the ChunkColumns.
class ChunkColumns {
 public:
  explicit ChunkColumns(const v1::Chunk& chunk)
      : c_(chunk),
        q_(chunk.time_quantum_ns() == 0 ? 1 : chunk.time_quantum_ns()),
        shift_(static_cast<int>(chunk.offset_shift())),
        issue_(chunk.base_issue_ns()) {}

  uint32_t size() const { return c_.count(); }

  template <typename Put>
  void issue_ns(uint32_t b, uint32_t e, Put put) {
    int64_t t = issue_;
    const uint64_t q = q_;
    each(c_.issue_delta(), b, e, [&](uint32_t i, int64_t d) {
      t = codec::wrap_add(t, codec::wrap_mul(d, q));
      put(i, t);
    });
    issue_ = t;
  }
  // Queue and completion times are relative to the IO's issue time, which
  // issue(i) returns for the rows of [b, e) (decoded before). kNoTime: unknown.
  template <typename IssueAt, typename Put>
  void queue_ns(uint32_t b, uint32_t e, IssueAt issue, Put put) const {
    const uint64_t q = q_;
    each(c_.queue_to_issue(), b, e, [&](uint32_t i, uint64_t v) {
      put(i, v == 0 ? kNoTime : codec::wrap_sub(issue(i), codec::wrap_mul(codec::unzigzag(v - 1), q)));
    });
  }
  template <typename IssueAt, typename Put>
  void complete_ns(uint32_t b, uint32_t e, IssueAt issue, Put put) const {
    const uint64_t q = q_;
    each(c_.issue_to_complete(), b, e, [&](uint32_t i, uint64_t v) {
      put(i, v == 0 ? kNoTime : codec::wrap_add(issue(i), codec::wrap_mul(codec::unzigzag(v - 1), q)));
    });
  }
  template <typename Put>
  void device(uint32_t b, uint32_t e, Put put) const {
    each(c_.device(), b, e, put);
  }
  template <typename Put>
  void op(uint32_t b, uint32_t e, Put put) const {
    each(c_.op(), b, e, [&](uint32_t i, uint32_t v) { put(i, static_cast<Op>(v)); });
  }
  template <typename Put>
  void flags(uint32_t b, uint32_t e, Put put) const {
    each(c_.flags(), b, e, put);
  }
  // Offsets are distances from the end of the previous IO, so they read the
  // length column too.
  template <typename Put>
  void offset(uint32_t b, uint32_t e, Put put) {
    uint64_t end = prev_end_;
    const uint64_t* length = c_.length().empty() ? nullptr : c_.length().data();
    const int shift = shift_;
    each(c_.offset_delta(), b, e, [&](uint32_t i, int64_t d) {
      const uint64_t offset = end + bytes(static_cast<uint64_t>(d), shift);
      end = offset + (length ? bytes(length[i], shift) : 0);
      put(i, offset);
    });
    prev_end_ = end;
  }
  template <typename Put>
  void length(uint32_t b, uint32_t e, Put put) const {
    const int shift = shift_;
    each(c_.length(), b, e, [&](uint32_t i, uint64_t v) { put(i, bytes(v, shift)); });
  }
  template <typename Put>
  void status(uint32_t b, uint32_t e, Put put) const {
    each(c_.status(), b, e, put);
  }
  template <typename Put>
  void pid(uint32_t b, uint32_t e, Put put) {
    uint32_t pid = pid_;
    each(c_.pid_delta(), b, e, [&](uint32_t i, int64_t d) {
      pid = static_cast<uint32_t>(pid + d);
      put(i, pid);
    });
    pid_ = pid;
  }
  // Process names as codes: 0 unknown, k the name comm_name(k).
  template <typename Put>
  void comm(uint32_t b, uint32_t e, Put put) const {
    each(c_.comm(), b, e, put);
  }
  std::string_view comm_name(uint32_t code) const {
    return code == 0 ? std::string_view() : std::string_view(c_.comm_table(static_cast<int>(code - 1)));
  }
  uint32_t comm_codes() const { return static_cast<uint32_t>(c_.comm_table_size()) + 1; }
  template <typename Put>
  void cpu(uint32_t b, uint32_t e, Put put) const {
    each(c_.cpu(), b, e, [&](uint32_t i, uint32_t v) { put(i, v == 0 ? -1 : static_cast<int32_t>(v - 1)); });
  }
  template <typename Put>
  void cgroup(uint32_t b, uint32_t e, Put put) {
    uint64_t cgroup = cgroup_;
    each(c_.cgroup_delta(), b, e, [&](uint32_t i, int64_t d) {
      cgroup += static_cast<uint64_t>(d);
      put(i, cgroup);
    });
    cgroup_ = cgroup;
  }
  template <typename Put>
  void source_index(uint32_t b, uint32_t e, Put put) const {
    const uint64_t first = c_.first_index();
    each(c_.source_delta(), b, e, [&](uint32_t i, uint64_t v) {
      put(i, v == 0 ? int64_t{-1} : static_cast<int64_t>(first + i) + codec::unzigzag(v - 1));
    });
  }

 private:
  // fn(i, stored value) over [b, e); an empty column stores 0 for every IO.
  // (The decoders keep running sums and constants in locals: stores through
  // put may alias members, locals they cannot.)
  template <typename Field, typename Fn>
  static void each(const Field& f, uint32_t b, uint32_t e, Fn fn) {
    using T = std::remove_cvref_t<decltype(f.Get(0))>;
    if (f.empty()) {
      for (uint32_t i = b; i < e; ++i) fn(i, T{});
    } else {
      const T* v = f.data();
      for (uint32_t i = b; i < e; ++i) fn(i, v[i]);
    }
  }
  // Offsets and lengths are stored in units of 1 << offset_shift.
  static uint64_t bytes(uint64_t stored, int shift) { return stored << shift; }

  const v1::Chunk& c_;
  const uint64_t q_;
  const int shift_;
  int64_t issue_;
  uint64_t prev_end_ = 0;
  uint32_t pid_ = 0;
  uint64_t cgroup_ = 0;
};

}  // namespace iotape::format

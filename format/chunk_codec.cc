#include "format/chunk_codec.h"

#include <algorithm>
#include <bit>
#include <numeric>
#include <string_view>
#include <unordered_map>

namespace iotape::format {
namespace {

using codec::wrap_sub;
using codec::zigzag;

uint64_t uabs(int64_t v) { return v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v); }

template <typename Field>
void drop_if_zero(Field* f) {
  for (auto v : *f)
    if (v != 0) return;
  f->Clear();
}

template <typename Field>
bool column_ok(const Field& f, uint32_t count, const char* name, std::string* why) {
  if (f.empty() || static_cast<uint32_t>(f.size()) == count) return true;
  *why = std::string("column ") + name + " has " + std::to_string(f.size()) + " values for " +
         std::to_string(count) + " IOs";
  return false;
}

// The first IO whose stored value is at least `limit`, or -1. Eight values
// are compared at a time without a branch, which the compiler vectorizes.
template <typename Field>
int64_t first_at_least(const Field& f, uint32_t limit) {
  const uint32_t* v = f.data();
  const size_t n = static_cast<size_t>(f.size());
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    unsigned any = 0;
    for (size_t k = 0; k < 8; ++k) any |= v[i + k] >= limit;
    if (any) break;
  }
  for (; i < n; ++i)
    if (v[i] >= limit) return static_cast<int64_t>(i);
  return -1;
}

// A common time quantum (e.g. 1000 for microsecond sources) and offset unit
// shrink every varint of a chunk.
struct Scales {
  uint64_t time_quantum = 1;
  int offset_shift = 0;
};

Scales scales_of(std::span<const Io> ios) {
  uint64_t q = 0;
  uint64_t units = 0;
  int64_t prev_issue = ios[0].issue_ns;
  for (const Io& io : ios) {
    if (q != 1) {  // nanosecond sources reach 1 within a few IOs, and gcd(1, x) is 1
      q = std::gcd(q, uabs(wrap_sub(io.issue_ns, prev_issue)));
      if (io.has_queue()) q = std::gcd(q, uabs(wrap_sub(io.issue_ns, io.queue_ns)));
      if (io.has_complete()) q = std::gcd(q, uabs(wrap_sub(io.complete_ns, io.issue_ns)));
      prev_issue = io.issue_ns;
    }
    units |= io.offset | io.length;
  }
  if (q == 0 || q > static_cast<uint64_t>(INT64_MAX)) q = 1;
  return {q, units == 0 ? 0 : std::countr_zero(units)};
}

// Columns whose every value is 0 are written empty.
void drop_zero_columns(v1::Chunk* out) {
  drop_if_zero(out->mutable_issue_delta());
  drop_if_zero(out->mutable_queue_to_issue());
  drop_if_zero(out->mutable_issue_to_complete());
  drop_if_zero(out->mutable_device());
  drop_if_zero(out->mutable_op());
  drop_if_zero(out->mutable_flags());
  drop_if_zero(out->mutable_offset_delta());
  drop_if_zero(out->mutable_length());
  drop_if_zero(out->mutable_status());
  drop_if_zero(out->mutable_pid_delta());
  drop_if_zero(out->mutable_comm());
  drop_if_zero(out->mutable_cpu());
  drop_if_zero(out->mutable_cgroup_delta());
  drop_if_zero(out->mutable_source_delta());
}

}  // namespace

void encode_chunk(std::span<const Io> ios, uint64_t first_index, v1::Chunk* out) {
  const int n = static_cast<int>(ios.size());
  out->set_first_index(first_index);
  out->set_count(n);
  if (n == 0) return;
  const int64_t base = ios[0].issue_ns;
  out->set_base_issue_ns(base);
  const auto [q, shift] = scales_of(ios);
  if (q != 1) out->set_time_quantum_ns(q);
  if (shift != 0) out->set_offset_shift(shift);

  // Every column grows by n at once and is filled through a pointer, without
  // a capacity check per value.
  auto append = [n](auto* f) {
    f->Reserve(f->size() + n);
    return f->AddNAlreadyReserved(n);
  };
  auto* issue_delta = append(out->mutable_issue_delta());
  auto* queue_to_issue = append(out->mutable_queue_to_issue());
  auto* issue_to_complete = append(out->mutable_issue_to_complete());
  auto* device = append(out->mutable_device());
  auto* op = append(out->mutable_op());
  auto* flags = append(out->mutable_flags());
  auto* offset_delta = append(out->mutable_offset_delta());
  auto* length = append(out->mutable_length());
  auto* status = append(out->mutable_status());
  auto* pid_delta = append(out->mutable_pid_delta());
  auto* comm = append(out->mutable_comm());
  auto* cpu = append(out->mutable_cpu());
  auto* cgroup_delta = append(out->mutable_cgroup_delta());
  auto* source_delta = append(out->mutable_source_delta());

  // A 64-bit division costs tens of cycles; most chunks have no quantum.
  const int64_t q_signed = static_cast<int64_t>(q);
  auto scaled = [q_signed](int64_t d) { return q_signed == 1 ? d : d / q_signed; };
  std::unordered_map<std::string_view, uint32_t> comm_ids;
  // Names come interned (TraceWriter, IssueOrder) and in runs: the same view
  // as the previous IO's is the same name, found without hashing.
  std::string_view prev_comm;
  uint32_t prev_comm_id = 0;
  int64_t prev_issue = base;
  uint64_t prev_end = 0;
  uint32_t prev_pid = 0;
  uint64_t prev_cgroup = 0;
  for (int i = 0; i < n; ++i) {
    const Io& io = ios[i];
    issue_delta[i] = scaled(wrap_sub(io.issue_ns, prev_issue));
    queue_to_issue[i] = io.has_queue() ? zigzag(scaled(wrap_sub(io.issue_ns, io.queue_ns))) + 1 : 0;
    issue_to_complete[i] = io.has_complete() ? zigzag(scaled(wrap_sub(io.complete_ns, io.issue_ns))) + 1 : 0;
    device[i] = io.device;
    op[i] = static_cast<uint32_t>(io.op);
    flags[i] = io.flags;
    offset_delta[i] = static_cast<int64_t>(io.offset - prev_end) >> shift;
    length[i] = io.length >> shift;
    status[i] = io.status;
    pid_delta[i] = static_cast<int64_t>(io.pid) - static_cast<int64_t>(prev_pid);
    comm[i] = 0;
    if (!io.comm.empty()) {
      if (io.comm.data() != prev_comm.data() || io.comm.size() != prev_comm.size()) {
        auto [it, added] = comm_ids.try_emplace(io.comm, static_cast<uint32_t>(comm_ids.size()));
        if (added) out->add_comm_table(std::string(io.comm));
        prev_comm = io.comm;
        prev_comm_id = it->second + 1;
      }
      comm[i] = prev_comm_id;
    }
    cpu[i] = io.cpu < 0 ? 0 : static_cast<uint32_t>(io.cpu) + 1;
    cgroup_delta[i] = static_cast<int64_t>(io.cgroup - prev_cgroup);
    source_delta[i] = io.source_index < 0 ? 0 : zigzag(io.source_index - static_cast<int64_t>(first_index + i)) + 1;
    prev_issue = io.issue_ns;
    prev_end = io.offset + io.length;
    prev_pid = io.pid;
    prev_cgroup = io.cgroup;
  }
  drop_zero_columns(out);
}

bool check_chunk(const v1::Chunk& c, uint32_t devices, std::string* why) {
  const uint32_t n = c.count();
  if (n > kMaxChunkIos) {
    *why = "chunk claims " + std::to_string(n) + " IOs";
    return false;
  }
  if (!column_ok(c.issue_delta(), n, "issue_delta", why) ||
      !column_ok(c.queue_to_issue(), n, "queue_to_issue", why) ||
      !column_ok(c.issue_to_complete(), n, "issue_to_complete", why) ||
      !column_ok(c.device(), n, "device", why) || !column_ok(c.op(), n, "op", why) ||
      !column_ok(c.flags(), n, "flags", why) || !column_ok(c.offset_delta(), n, "offset_delta", why) ||
      !column_ok(c.length(), n, "length", why) || !column_ok(c.status(), n, "status", why) ||
      !column_ok(c.pid_delta(), n, "pid_delta", why) || !column_ok(c.comm(), n, "comm", why) ||
      !column_ok(c.cpu(), n, "cpu", why) || !column_ok(c.cgroup_delta(), n, "cgroup_delta", why) ||
      !column_ok(c.source_delta(), n, "source_delta", why))
    return false;
  if (c.offset_shift() > 63) {
    *why = "offset_shift " + std::to_string(c.offset_shift()) + " out of range";
    return false;
  }
  if (int64_t i = first_at_least(c.op(), kOpCount); i >= 0) {
    *why = "IO " + std::to_string(c.first_index() + i) + " has unknown operation " + std::to_string(c.op(i));
    return false;
  }
  const uint32_t ncomm = static_cast<uint32_t>(c.comm_table_size());
  if (int64_t i = first_at_least(c.comm(), ncomm + 1); i >= 0) {
    *why = "IO " + std::to_string(c.first_index() + i) + " names process " + std::to_string(c.comm(i)) + " of " +
           std::to_string(ncomm);
    return false;
  }
  if (int64_t i = first_at_least(c.device(), std::max(devices, 1u)); i >= 0) {
    *why = "IO " + std::to_string(c.first_index() + i) + " names device " + std::to_string(c.device(i)) + " of " +
           std::to_string(devices);
    return false;
  }
  return true;
}

void decode_chunk(const v1::Chunk& c, std::vector<Io>* out) { decode_chunk(c, out, nullptr); }

void decode_chunk(const v1::Chunk& c, std::vector<Io>* out,
                  const std::function<void(uint32_t begin, uint32_t end)>& each_slice) {
  const uint32_t n = c.count();
  out->resize(n);
  Io* ios = out->data();
  ChunkColumns cols(c);
  std::vector<std::string_view> names(cols.comm_codes());
  for (uint32_t k = 0; k < names.size(); ++k) names[k] = cols.comm_name(k);
  // Column by column over blocks of rows that stay in cache.
  constexpr uint32_t kBlock = 32;
  static_assert(kDecodeSlice % kBlock == 0);
  for (uint32_t b = 0; b < n; b += kBlock) {
    const uint32_t e = std::min(n, b + kBlock);
    cols.issue_ns(b, e, [ios](uint32_t i, int64_t v) { ios[i].issue_ns = v; });
    auto issue = [ios](uint32_t i) { return ios[i].issue_ns; };
    cols.queue_ns(b, e, issue, [ios](uint32_t i, int64_t v) { ios[i].queue_ns = v; });
    cols.complete_ns(b, e, issue, [ios](uint32_t i, int64_t v) { ios[i].complete_ns = v; });
    cols.device(b, e, [ios](uint32_t i, uint32_t v) { ios[i].device = v; });
    cols.op(b, e, [ios](uint32_t i, Op v) { ios[i].op = v; });
    cols.flags(b, e, [ios](uint32_t i, uint32_t v) { ios[i].flags = v; });
    cols.offset(b, e, [ios](uint32_t i, uint64_t v) { ios[i].offset = v; });
    cols.length(b, e, [ios](uint32_t i, uint64_t v) { ios[i].length = v; });
    cols.status(b, e, [ios](uint32_t i, int32_t v) { ios[i].status = v; });
    cols.pid(b, e, [ios](uint32_t i, uint32_t v) { ios[i].pid = v; });
    cols.comm(b, e, [ios, n = names.data()](uint32_t i, uint32_t v) { ios[i].comm = n[v]; });
    cols.cpu(b, e, [ios](uint32_t i, int32_t v) { ios[i].cpu = v; });
    cols.cgroup(b, e, [ios](uint32_t i, uint64_t v) { ios[i].cgroup = v; });
    cols.source_index(b, e, [ios](uint32_t i, int64_t v) { ios[i].source_index = v; });
    if (each_slice && (e % kDecodeSlice == 0 || e == n)) each_slice(e - 1 - (e - 1) % kDecodeSlice, e);
  }
}

}  // namespace iotape::format

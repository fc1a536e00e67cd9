#include "traces/chunk_codec.h"

#include <bit>
#include <numeric>
#include <string_view>
#include <unordered_map>

namespace iotape {
namespace {

// Wrapping arithmetic: deltas of arbitrary int64/uint64 values round-trip exactly.
int64_t wrap_sub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t wrap_mul(int64_t a, uint64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * b);
}
uint64_t uabs(int64_t v) { return v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v); }
uint64_t zigzag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
int64_t unzigzag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

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

template <typename Field>
auto at(const Field& f, int i) -> std::remove_cvref_t<decltype(f.Get(0))> {
  return f.empty() ? 0 : f.Get(i);
}

}  // namespace

void encode_chunk(std::span<const Io> ios, uint64_t first_index, v1::Chunk* out) {
  const int n = static_cast<int>(ios.size());
  out->set_first_index(first_index);
  out->set_count(n);
  if (n == 0) return;
  const int64_t base = ios[0].issue_ns;
  out->set_base_issue_ns(base);

  // A common time quantum (e.g. 1000 for microsecond sources) and offset unit
  // shrink every varint of the chunk.
  uint64_t q = 0;
  uint64_t units = 0;
  int64_t prev_issue = base;
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
  const int shift = units == 0 ? 0 : std::countr_zero(units);
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
  prev_issue = base;
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

bool decode_chunk(const v1::Chunk& c, std::vector<Io>* out, std::string* why) {
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
  const uint64_t q = c.time_quantum_ns() == 0 ? 1 : c.time_quantum_ns();
  const int shift = static_cast<int>(c.offset_shift());
  const uint32_t ncomm = static_cast<uint32_t>(c.comm_table_size());

  out->resize(n);
  int64_t issue = c.base_issue_ns();
  uint64_t prev_end = 0;
  uint32_t pid = 0;
  uint64_t cgroup = 0;
  for (uint32_t k = 0; k < n; ++k) {
    const int i = static_cast<int>(k);
    Io& io = (*out)[k];
    issue = wrap_add(issue, wrap_mul(at(c.issue_delta(), i), q));
    io.issue_ns = issue;
    const uint64_t qi = at(c.queue_to_issue(), i);
    io.queue_ns = qi == 0 ? kNoTime : wrap_sub(issue, wrap_mul(unzigzag(qi - 1), q));
    const uint64_t ic = at(c.issue_to_complete(), i);
    io.complete_ns = ic == 0 ? kNoTime : wrap_add(issue, wrap_mul(unzigzag(ic - 1), q));
    io.device = at(c.device(), i);
    const uint32_t op = at(c.op(), i);
    if (op >= kOpCount) {
      *why = "IO " + std::to_string(c.first_index() + k) + " has unknown operation " + std::to_string(op);
      return false;
    }
    io.op = static_cast<Op>(op);
    io.flags = at(c.flags(), i);
    io.offset = prev_end + (static_cast<uint64_t>(at(c.offset_delta(), i)) << shift);
    io.length = at(c.length(), i) << shift;
    prev_end = io.offset + io.length;
    io.status = at(c.status(), i);
    pid = static_cast<uint32_t>(pid + at(c.pid_delta(), i));
    io.pid = pid;
    const uint32_t comm = at(c.comm(), i);
    if (comm > ncomm) {
      *why = "IO " + std::to_string(c.first_index() + k) + " names process " + std::to_string(comm) +
             " of " + std::to_string(ncomm);
      return false;
    }
    io.comm = comm == 0 ? std::string_view() : std::string_view(c.comm_table(static_cast<int>(comm - 1)));
    const uint32_t cpu = at(c.cpu(), i);
    io.cpu = cpu == 0 ? -1 : static_cast<int32_t>(cpu - 1);
    cgroup += static_cast<uint64_t>(at(c.cgroup_delta(), i));
    io.cgroup = cgroup;
    const uint64_t sd = at(c.source_delta(), i);
    io.source_index = sd == 0 ? -1 : static_cast<int64_t>(c.first_index() + k) + unzigzag(sd - 1);
  }
  return true;
}

}  // namespace iotape

// The eBPF back end: loads iotrace.bpf.c and turns its records into Ios.
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "format/error.h"
#include "host/clocks.h"
#include "observer/backend.h"
#include "observer/iotrace.h"
#include "observer/iotrace.skel.h"

namespace iotape::observer {
namespace {

constexpr uint64_t kDefaultBuffer = 16u << 20;
// Records in the smallest ring of one CPU.
constexpr uint32_t kMinRing = 512;
// Records read from a ring between two releases of their space to the programs.
constexpr uint32_t kReleaseEvery = 256;
// In-flight slots for all devices (80 bytes each): a loop device needs 256,
// an NVMe drive 2,046 per hardware queue. Devices beyond it use the hash table.
constexpr uint32_t kMaxSlots = 1u << 17;
// Hash table entries read per system call when scanning it.
constexpr uint32_t kHashBatch = 256;

// libbpf explains load failures (verifier log, missing BTF) at warning level.
// The library prints nothing itself: the last of those lines go into the error.
std::string g_libbpf_log;

int keep_libbpf_log(enum libbpf_print_level level, const char* format, va_list args) {
  if (level == LIBBPF_DEBUG) return 0;
  // Whole: a verifier log comes as one message, and its end says why.
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  if (n <= 0) return n;
  std::string line(static_cast<size_t>(n) + 1, '\0');
  std::vsnprintf(line.data(), line.size(), format, args);
  line.pop_back();
  g_libbpf_log += line;
  if (g_libbpf_log.size() > 4096) g_libbpf_log.erase(0, g_libbpf_log.size() - 4096);
  return n;
}

// Kernel errno of a blk_status_t (include/linux/blk_types.h, blk_errors[]).
int32_t status_errno(uint8_t s) {
  switch (s) {
    case 0: return 0;
    case 1: return -EOPNOTSUPP;
    case 2: return -ETIMEDOUT;
    case 3: return -ENOSPC;
    case 7: return -ENODATA;
    case 9: return -ENOMEM;
    case 12: return -EAGAIN;
    case 16: return -ENODEV;
    default: return -EIO;
  }
}

// Whether a tracepoint exists and how many arguments it takes, from the
// kernel's BTF (its btf_trace_NAME typedef points at the handler prototype,
// whose first parameter is the tracepoint's private data).
struct TracepointShape {
  bool exists = false;
  int args = 0;
};

TracepointShape tracepoint_shape(const btf* vmlinux, const std::string& name) {
  TracepointShape shape;
  const int id = btf__find_by_name_kind(vmlinux, ("btf_trace_" + name).c_str(), BTF_KIND_TYPEDEF);
  if (id < 0) return shape;
  const btf_type* t = btf__type_by_id(vmlinux, id);
  t = btf__type_by_id(vmlinux, t->type);  // pointer
  if (t && btf_is_ptr(t)) t = btf__type_by_id(vmlinux, t->type);
  if (!t || !btf_is_func_proto(t)) return shape;
  shape.exists = true;
  shape.args = btf_vlen(t) - 1;
  return shape;
}

// Whether the kernel has `name` out of line and ftrace can hook it: in its
// BTF, and in available_filter_functions where tracefs shows that.
bool traceable_function(const btf* vmlinux, const char* name) {
  if (btf__find_by_name_kind(vmlinux, name, BTF_KIND_FUNC) < 0) return false;
  for (const char* path : {"/sys/kernel/tracing/available_filter_functions",
                           "/sys/kernel/debug/tracing/available_filter_functions"}) {
    FILE* f = std::fopen(path, "re");
    if (!f) continue;
    char line[256];
    bool found = false;
    const size_t n = std::strlen(name);
    while (!found && std::fgets(line, sizeof line, f))
      found = std::strncmp(line, name, n) == 0 && (line[n] == '\n' || line[n] == ' ' || line[n] == '\0');
    std::fclose(f);
    return found;
  }
  return true;  // tracefs not mounted: BTF is all there is to go by
}

// Whether block_rq_complete's error argument is an int errno (before 5.17's
// blk_status_t): the records then carry minus the errno.
bool complete_error_is_errno(const btf* vmlinux) {
  const int id = btf__find_by_name_kind(vmlinux, "btf_trace_block_rq_complete", BTF_KIND_TYPEDEF);
  if (id < 0) return false;
  const btf_type* t = btf__type_by_id(vmlinux, btf__type_by_id(vmlinux, id)->type);
  if (t && btf_is_ptr(t)) t = btf__type_by_id(vmlinux, t->type);
  if (!t || !btf_is_func_proto(t) || btf_vlen(t) < 3) return false;
  const btf_type* error = btf__type_by_id(vmlinux, btf_params(t)[2].type);
  return error && btf_is_int(error) && std::strcmp(btf__name_by_offset(vmlinux, error->name_off), "int") == 0;
}

class EbpfBackend final : public Backend {
 public:
  explicit EbpfBackend(const BackendOptions& o) {
    g_libbpf_log.clear();
    libbpf_set_print(keep_libbpf_log);
    btf* vmlinux = btf__load_vmlinux_btf();
    if (!vmlinux) throw format::TraceError("the kernel has no BTF (/sys/kernel/btf/vmlinux); use --backend blktrace");
    const TracepointShape io_start = tracepoint_shape(vmlinux, "block_io_start");
    const TracepointShape issue = tracepoint_shape(vmlinux, "block_rq_issue");
    const TracepointShape merge = tracepoint_shape(vmlinux, "block_rq_merge");  // since 5.8
    const TracepointShape bio_queue = tracepoint_shape(vmlinux, "block_bio_queue");
    const bool task_btf = btf__find_by_name_kind(vmlinux, "bpf_get_current_task_btf", BTF_KIND_FUNC) >= 0;
    status_is_errno_ = complete_error_is_errno(vmlinux);
    // The submission hook (as libbpf-tools' biosnoop chooses): block_io_start
    // since 6.5; before, blk_account_io_start (5.10 to 5.15, 6.3, 6.4) or
    // __blk_account_io_start (5.16 to 6.2) where the kernel has it out of
    // line; else the bio's submission, joined to its request later.
    std::string account_fn;
    if (!io_start.exists)
      for (const char* fn : {"blk_account_io_start", "__blk_account_io_start"})
        if (account_fn.empty() && traceable_function(vmlinux, fn)) account_fn = fn;
    btf__free(vmlinux);
    const bool by_bio = !io_start.exists && account_fn.empty() && bio_queue.exists;

    skel_ = iotrace_bpf__open();
    if (!skel_) throw format::TraceError(std::string("cannot open the BPF program: ") + std::strerror(errno));
    skel_->rodata->rq_is_first_arg = issue.args == 1;
    skel_->rodata->bio_is_first_arg = bio_queue.args == 1;
    skel_->rodata->have_task_btf = task_btf;
    skel_->rodata->submit_by_bio = by_bio;
    skel_->rodata->filter_pid = o.pid;
    skel_->rodata->keep_anonymous = o.keep_anonymous;
    if (!o.comm.empty()) {
      skel_->rodata->filter_by_comm = true;
      std::strncpy(const_cast<char*>(skel_->rodata->filter_comm), o.comm.c_str(), IOTRACE_COMM_LEN - 1);
    }
    bpf_program__set_autoload(skel_->progs.block_io_start, io_start.exists);
    bpf_program__set_autoload(skel_->progs.blk_account_io_start, !account_fn.empty());
    if (!account_fn.empty() && bpf_program__set_attach_target(skel_->progs.blk_account_io_start, 0, account_fn.c_str()))
      fail("cannot hook " + account_fn, -errno);
    bpf_program__set_autoload(skel_->progs.block_bio_queue, by_bio);
    if (!merge.exists) bpf_program__set_autoload(skel_->progs.block_rq_merge, false);
    detail_ = io_start.exists ? "ebpf:tp_btf" : !account_fn.empty() ? "ebpf:tp_btf+fentry" : "ebpf:tp_btf+bio";
    // What was hooked, and what this kernel cannot give, for the trace's header.
    std::string submit = io_start.exists ? "tp_btf/block_io_start"
                         : !account_fn.empty() ? "fentry/" + account_fn
                         : by_bio ? "tp_btf/block_bio_queue" : "none";
    hooks_ = "submit=" + submit + " issue=tp_btf/block_rq_issue complete=tp_btf/block_rq_complete" +
             (merge.exists ? " merge=tp_btf/block_rq_merge" : "") + (task_btf ? "" : " task=helpers");
    if (by_bio)
      unavailable_ = "queue time and submitter of a request whose first bio was split or queued before the capture";
    else if (submit == "none")
      unavailable_ = "queue time and submitter (no submission hook); fsyncs' empty writes";
    if (!merge.exists) unavailable_ += std::string(unavailable_.empty() ? "" : "; ") + "merges (block_rq_merge)";
    // The buffer is shared out among the CPUs' rings, a power of two records each.
    ncpus_ = libbpf_num_possible_cpus();
    if (ncpus_ <= 0) fail("cannot count the CPUs", ncpus_);
    const uint64_t buffer = o.buffer_bytes ? o.buffer_bytes : kDefaultBuffer;
    ring_size_ = kMinRing;
    while (uint64_t{ring_size_} * 2 * sizeof(iotrace_event) * static_cast<uint64_t>(ncpus_) <= buffer &&
           ring_size_ < (1u << 24))
      ring_size_ *= 2;
    skel_->rodata->ring_size = ring_size_;
    bpf_map__set_max_entries(skel_->maps.records, ring_size_ * static_cast<uint32_t>(ncpus_));
    bpf_map__set_max_entries(skel_->maps.rings, static_cast<uint32_t>(ncpus_));
    const std::vector<iotrace_device> layout = slot_layout(o.devices);
    bpf_map__set_max_entries(skel_->maps.slots, std::max<uint32_t>(slot_count_, 1));
    if (int err = iotrace_bpf__load(skel_))
      fail("cannot load the BPF program", err);

    for (uint32_t i = 0; i < o.devices.size(); ++i) {
      const uint32_t dev = (o.devices[i].major << 20) | o.devices[i].minor;
      if (bpf_map__update_elem(skel_->maps.devices, &dev, sizeof dev, &i, sizeof i, BPF_ANY) != 0 ||
          bpf_map__update_elem(skel_->maps.layouts, &i, sizeof i, &layout[i], sizeof layout[i], BPF_ANY) != 0)
        fail("cannot fill the device table", -errno);
    }
    if (int err = iotrace_bpf__attach(skel_)) fail("cannot attach the BPF program", err);
    ring_ = ring_buffer__new(bpf_map__fd(skel_->maps.events), on_event, this, nullptr);
    if (!ring_) fail("cannot open the ring buffer", -errno);
    map_views();
  }

  // Read-only views: the ring buffer's consumer and producer pages, the
  // records and the slot array; the rings' positions are written too (tail).
  void map_views() {
    page_ = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    positions_ = ::mmap(nullptr, 2 * page_, PROT_READ, MAP_SHARED, bpf_map__fd(skel_->maps.events), 0);
    if (positions_ == MAP_FAILED) fail("cannot map the ring buffer's positions", -errno);
    records_ = ::mmap(nullptr, records_bytes(), PROT_READ, MAP_SHARED, bpf_map__fd(skel_->maps.records), 0);
    if (records_ == MAP_FAILED) fail("cannot map the completion records", -errno);
    rings_ = ::mmap(nullptr, rings_bytes(), PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(skel_->maps.rings), 0);
    if (rings_ == MAP_FAILED) fail("cannot map the rings' positions", -errno);
    if (slot_count_) {
      slots_ = ::mmap(nullptr, slot_bytes(), PROT_READ, MAP_SHARED, bpf_map__fd(skel_->maps.slots), 0);
      if (slots_ == MAP_FAILED) fail("cannot map the slot table", -errno);
    }
  }

  ~EbpfBackend() override { tear_down(); }

  v1::Source source() const override { return v1::SOURCE_EBPF; }
  std::string detail() const override { return detail_; }
  std::map<std::string, std::string> metadata() const override {
    std::map<std::string, std::string> m{{"capture.hooks", hooks_}};
    if (!unavailable_.empty()) m["capture.unavailable"] = unavailable_;
    return m;
  }

  // Passes on every record reserved before the wait ended: consuming stops
  // at a record still being written (by a program on another CPU, for
  // microseconds), and the records behind it, an IO's completion among them,
  // must not wait for the next poll (replay times each finished IO at once).
  void poll(int timeout_ms, const IoSink& sink) override {
    sink_ = &sink;
    // Records are submitted without a wakeup until a ring fills (see
    // iotrace.bpf.c): the wait is mostly a timeout, then everything is
    // consumed. Without a wait, no system call: replay polls after every reap.
    int n = timeout_ms > 0 ? ring_buffer__poll(ring_, timeout_ms) : 0;
    if (n >= 0 || n == -EINTR) n = consume_to(ring_position(page_));
    sink_ = nullptr;
    drain_rings(sink);
    if (n < 0 && n != -EINTR) throw format::TraceError(std::string("ring buffer: ") + std::strerror(-n));
  }

  // An entry closes after its record is published, so each IO not yet passed
  // on is either open in a table the scan reads, or in a ring below the
  // position read after the scan (in the ring buffer: reserved). Consuming
  // up to those positions then leaves only IOs open at the scan, or issued
  // after it began.
  int64_t oldest_outstanding_ns(int64_t floor_ns, const IoSink& sink) override {
    int64_t oldest = host::boottime_ns() - kStampSlackNs;
    const bool whole = for_each_entry([&](const iotrace_inflight& e) {
      if (e.sent) return;  // passed on already, waiting only for its flush sequence's end
      // An entry's IO goes out with its issue time or, completed without
      // being issued (an fsync's empty write), its queue time. Both 0: being
      // opened right now.
      const int64_t issue = static_cast<int64_t>(e.issue_ns ? e.issue_ns : e.queue_ns);
      if (issue >= floor_ns && issue < oldest) oldest = issue;
    });
    if (!whole) return floor_ns;
    // Records behind one still being written may be IOs the scan no longer saw.
    const uint64_t reserved = ring_position(page_);
    poll(0, sink);
    if (ring_position(0) < reserved) return floor_ns;
    return std::max(oldest, floor_ns);
  }

  void finish(const IoSink& sink) override {
    // Detached, nothing changes the tables any more: what completed is in the
    // ring buffer; an entry left issued was never completed (one not yet
    // issued is an IO that never reached the device within the capture).
    iotrace_bpf__detach(skel_);
    poll(0, sink);
    for_each_entry([&](const iotrace_inflight& e) { send_uncompleted(e, sink); });
  }

  uint64_t dropped() override { return last_dropped_ = counter(IOTRACE_DROPS, last_dropped_); }
  uint64_t unmatched() override { return last_unmatched_ = counter(IOTRACE_UNMATCHED, last_unmatched_); }
  uint64_t unmatched_bytes() override {
    return last_unmatched_bytes_ = counter(IOTRACE_UNMATCHED_BYTES, last_unmatched_bytes_);
  }
  uint64_t uncompleted() override {
    return left_in_flight_ + (last_uncompleted_ = counter(IOTRACE_UNCOMPLETED, last_uncompleted_));
  }

 private:
  // Slots for each device's requests, in device order, while they fit.
  std::vector<iotrace_device> slot_layout(const std::vector<BlockDevice>& devices) {
    std::vector<iotrace_device> out;
    for (uint32_t i = 0; i < devices.size(); ++i) {
      iotrace_device d{};
      d.index = i;
      const uint64_t need = uint64_t{devices[i].hw_queues} * devices[i].tags;
      if (need > 0 && slot_count_ + need <= kMaxSlots) {
        d.hw_queues = devices[i].hw_queues;
        d.tags = devices[i].tags;
        d.first_slot = slot_count_;
        slot_count_ += static_cast<uint32_t>(need);
      }
      out.push_back(d);
    }
    return out;
  }

  size_t slot_bytes() const { return size_t{slot_count_} * sizeof(iotrace_inflight); }
  size_t records_bytes() const { return size_t{ring_size_} * static_cast<size_t>(ncpus_) * sizeof(iotrace_event); }
  size_t rings_bytes() const { return static_cast<size_t>(ncpus_) * sizeof(iotrace_ring); }

  // Passes on every record the CPUs' rings hold, giving their space back to
  // the programs as it goes.
  void drain_rings(const IoSink& sink) {
    auto* rings = static_cast<iotrace_ring*>(rings_);
    const auto* records = static_cast<const iotrace_event*>(records_);
    for (int cpu = 0; cpu < ncpus_; ++cpu) {
      iotrace_ring& r = rings[cpu];
      const uint64_t head = __atomic_load_n(&r.head, __ATOMIC_ACQUIRE);
      uint64_t tail = r.tail;
      const iotrace_event* ring = records + size_t{ring_size_} * static_cast<size_t>(cpu);
      while (tail != head) {
        sink(to_io(ring[tail & (ring_size_ - 1)]));
        if (++tail % kReleaseEvery == 0) __atomic_store_n(&r.tail, tail, __ATOMIC_RELEASE);
      }
      __atomic_store_n(&r.tail, tail, __ATOMIC_RELEASE);
    }
  }

  // Consumes records up to the producer position `reserved`, waiting up to
  // 2 ms for one still being written; what is left goes with the next call.
  int consume_to(uint64_t reserved) {
    int n = ring_buffer__consume(ring_);
    for (int tries = 0; n >= 0 && ring_position(0) < reserved && tries < 100; ++tries) {
      const timespec pause{0, 20'000};
      ::nanosleep(&pause, nullptr);
      n = ring_buffer__consume(ring_);
    }
    return n;
  }

  // A position of the ring buffer (kept by the kernel and libbpf at the start
  // of their pages): the consumer's at offset 0, the producer's at page_.
  uint64_t ring_position(size_t offset) const {
    return __atomic_load_n(reinterpret_cast<const uint64_t*>(static_cast<const char*>(positions_) + offset),
                           __ATOMIC_ACQUIRE);
  }

  // Calls `f` with every entry of the slot array, then of the hash table,
  // while the BPF programs may be changing them; false when the hash table
  // could not be read to the end. A slot read as it changes mixes two
  // entries: its older times come first, so a bound from them errs early.
  template <typename F>
  bool for_each_entry(F&& f) {
    const auto* slots = static_cast<const iotrace_inflight*>(slots_);
    for (uint32_t i = 0; i < slot_count_; ++i) {
      iotrace_inflight e{};
      e.rq = __atomic_load_n(&slots[i].rq, __ATOMIC_ACQUIRE);
      if (!e.rq) continue;
      e = slots[i];
      f(e);
    }
    std::vector<uint64_t> keys(kHashBatch);
    std::vector<iotrace_inflight> entries(kHashBatch);
    uint32_t batch = 0;
    for (bool first = true;; first = false) {
      uint32_t n = kHashBatch;
      const int err = bpf_map_lookup_batch(bpf_map__fd(skel_->maps.inflight), first ? nullptr : &batch, &batch,
                                           keys.data(), entries.data(), &n, nullptr) < 0
                          ? errno
                          : 0;
      if (err && err != ENOENT) return false;
      for (uint32_t i = 0; i < n; ++i) f(entries[i]);
      if (err == ENOENT) return true;  // that was the last batch
    }
  }

  // An open entry that was issued: its IO without a completion time.
  void send_uncompleted(const iotrace_inflight& s, const IoSink& sink) {
    if (!s.rq || !s.issue_ns || s.sent) return;
    iotrace_event e{};
    e.queue_ns = s.queue_ns;
    e.issue_ns = s.issue_ns;
    e.sector = s.sector;
    e.cgroup = s.cgroup;
    e.bytes = s.bytes;
    e.pid = s.pid;
    e.device = s.device;
    e.cpu = s.cpu;
    e.flags = s.flags;
    e.op = s.op;
    std::memcpy(e.comm, s.comm, sizeof e.comm);
    sink(to_io(e));
    ++left_in_flight_;
  }

  // The sum over CPUs of one slot of the counter array (`previous` if unreadable).
  uint64_t counter(uint32_t slot, uint64_t previous) const {
    std::vector<uint64_t> per_cpu(static_cast<size_t>(ncpus_));
    if (bpf_map__lookup_elem(skel_->maps.drops, &slot, sizeof slot, per_cpu.data(),
                             per_cpu.size() * sizeof(uint64_t), 0) != 0)
      return previous;
    uint64_t total = 0;
    for (uint64_t n : per_cpu) total += n;
    return total;
  }

  void tear_down() {
    if (slots_ && slots_ != MAP_FAILED) ::munmap(slots_, slot_bytes());
    if (records_ && records_ != MAP_FAILED) ::munmap(records_, records_bytes());
    if (rings_ && rings_ != MAP_FAILED) ::munmap(rings_, rings_bytes());
    if (positions_ && positions_ != MAP_FAILED) ::munmap(positions_, 2 * page_);
    ring_buffer__free(ring_);
    iotrace_bpf__destroy(skel_);
  }

  [[noreturn]] void fail(const std::string& what, int err) {
    tear_down();
    std::string msg = what + ": " + std::strerror(err < 0 ? -err : err);
    if (!g_libbpf_log.empty()) msg += "\nlibbpf: " + g_libbpf_log;
    while (!msg.empty() && msg.back() == '\n') msg.pop_back();
    throw format::TraceError(msg);
  }

  format::Io to_io(const iotrace_event& e) const {
    format::Io io;
    // An fsync's empty write is completed without being issued: its queue time stands as issue time.
    const uint64_t issue = e.issue_ns ? e.issue_ns : e.queue_ns;
    io.issue_ns = static_cast<int64_t>(issue);
    if (e.queue_ns) io.queue_ns = static_cast<int64_t>(e.queue_ns);
    if (e.complete_ns) io.complete_ns = static_cast<int64_t>(e.complete_ns);
    io.offset = e.sector == ~uint64_t{0} ? 0 : e.sector * 512;  // a flush has no sector: (sector_t)-1
    io.length = e.bytes;
    io.device = e.device;
    io.op = static_cast<format::Op>(e.op);
    io.flags = e.flags;  // iotrace_flag bits are iotape's flag:: bits
    // Before 5.17 the tracepoint passes minus the errno, cut to the byte.
    io.status = status_is_errno_ ? static_cast<int8_t>(e.status) : status_errno(e.status);
    io.pid = e.pid;
    io.comm = std::string_view(e.comm, strnlen(e.comm, IOTRACE_COMM_LEN));
    io.cgroup = e.cgroup;
    io.cpu = e.cpu ? static_cast<int32_t>(e.cpu) - 1 : -1;
    return io;
  }

  static int on_event(void* ctx, void* data, size_t size) {
    auto* self = static_cast<EbpfBackend*>(ctx);
    if (size < sizeof(iotrace_event) || !self->sink_) return 0;
    (*self->sink_)(self->to_io(*static_cast<const iotrace_event*>(data)));
    return 0;
  }

  iotrace_bpf* skel_ = nullptr;
  ring_buffer* ring_ = nullptr;
  const IoSink* sink_ = nullptr;
  std::string detail_;
  std::string hooks_, unavailable_;
  bool status_is_errno_ = false;
  int ncpus_ = 1;
  uint32_t ring_size_ = 0;  // records in each CPU's ring, a power of two
  uint32_t slot_count_ = 0;
  size_t page_ = 4096;
  void* positions_ = nullptr;  // the ring buffer's consumer and producer pages
  void* slots_ = nullptr;      // the slot array, slot_count_ entries
  void* records_ = nullptr;    // the CPUs' rings of records, ring_size_ each
  void* rings_ = nullptr;      // the CPUs' ring positions
  uint64_t last_dropped_ = 0;
  uint64_t last_unmatched_ = 0;
  uint64_t last_unmatched_bytes_ = 0;
  uint64_t last_uncompleted_ = 0;
  uint64_t left_in_flight_ = 0;  // IOs finish() found issued and not completed
};

static_assert(IOTRACE_F_SYNC == format::flag::kSync && IOTRACE_F_FUA == format::flag::kFua &&
              IOTRACE_F_PREFLUSH == format::flag::kPreflush && IOTRACE_F_META == format::flag::kMeta &&
              IOTRACE_F_RAHEAD == format::flag::kReadahead && IOTRACE_F_BACKGROUND == format::flag::kBackground &&
              IOTRACE_F_NOMERGE == format::flag::kNoMerge);
// The slot array's elements are read in place: the kernel aligns them to 8 bytes.
static_assert(sizeof(iotrace_inflight) % 8 == 0);
// So are the records, and each ring's positions fill two cache lines.
static_assert(sizeof(iotrace_event) % 8 == 0 && sizeof(iotrace_ring) == 128);
static_assert(IOTRACE_OP_WRITE_ZEROES == static_cast<int>(format::Op::kWriteZeroes) &&
              IOTRACE_OP_OTHER == static_cast<int>(format::Op::kOther));

}  // namespace

std::unique_ptr<Backend> make_ebpf_backend(const BackendOptions& options) {
  return std::make_unique<EbpfBackend>(options);
}

}  // namespace iotape::observer

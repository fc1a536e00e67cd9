#include "replay/engine.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <liburing.h>
#include <linux/fs.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <utility>

#include "format/error.h"
#include "host/clocks.h"

namespace iotape::replay {
namespace {

// The io_uring block-device discard command (uapi linux/fs.h, kernel 6.12);
// older headers lack it.
constexpr uint32_t kBlockUringCmdDiscard = _IO(0x12, 0);
constexpr uint64_t kRegisteredLimit = 8u << 20;  // larger IOs are rare: unregistered buffers
constexpr uint64_t kWriteRotation = 4u << 20;    // write data start offsets cycle through this

// An SQE's user data: the caller's tag in the low half; in the high half what
// its result must be: a read's or write's length, or a marker no length
// reaches (the kernel moves at most kMaxTransfer bytes per IO).
constexpr uint64_t kMaxTransfer = 0x7fff'f000;  // MAX_RW_COUNT
constexpr uint32_t kAnyResult = 0x8000'0000;    // not a transfer: any result >= 0 is success
constexpr uint32_t kAuxHalf = 0x8000'0001;      // the flush half of a pre-flush write

uint64_t user_data(uint32_t tag, uint32_t expect) { return uint64_t{expect} << 32 | tag; }

// What a completion means, for every caller of the engine.
int32_t status_of(int32_t res, uint32_t expect) {
  if (res < 0) return res;
  // A read or write that moved fewer bytes (past the end of a file, a full
  // filesystem) did not do the rest: it failed, as the block layer would say.
  return expect == kAnyResult || static_cast<uint32_t>(res) == expect ? 0 : -EIO;
}

// An anonymous private mapping, unmapped when destroyed.
class Mapping {
 public:
  Mapping() = default;
  explicit Mapping(size_t size)
      : data_(::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)), size_(size) {
    if (data_ == MAP_FAILED)
      throw format::error_errno("io_uring", "cannot map " + std::to_string(size) + " bytes of IO buffers", errno);
  }
  ~Mapping() {
    if (data_) ::munmap(data_, size_);
  }
  Mapping(Mapping&& o) noexcept : data_(std::exchange(o.data_, nullptr)), size_(o.size_) {}
  Mapping& operator=(Mapping&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    return *this;
  }
  char* data() const { return static_cast<char*>(data_); }
  size_t size() const { return size_; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

// An io_uring for `max_in_flight` IOs, torn down when destroyed.
class Ring {
 public:
  Ring(uint32_t max_in_flight, RingSetup setup) {
    unsigned entries = 64;
    while (entries < max_in_flight * 2 && entries < 4096) entries *= 2;
    // One thread owns the ring, so completions can wait until it asks for them
    // (DEFER_TASKRUN) instead of interrupting it; kernels before 6.1 refuse
    // that with EINVAL and get the plain ring, without the flags they lack.
    // A ring with a submission thread takes none of these (EINVAL): its
    // completions are posted by that thread.
    unsigned flags = IORING_SETUP_CQSIZE | IORING_SETUP_SUBMIT_ALL;
    if (setup.sqpoll)
      flags |= IORING_SETUP_SQPOLL;
    else
      flags |= IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    if (setup.iopoll) flags |= IORING_SETUP_IOPOLL;
    for (;;) {
      io_uring_params p{};
      p.flags = flags;
      p.cq_entries = entries * 4;
      const int r = io_uring_queue_init_params(entries, &ring_, &p);
      if (r == 0) break;
      if (r == -EINVAL && (flags & IORING_SETUP_DEFER_TASKRUN)) {
        flags &= ~(IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_SINGLE_ISSUER);
      } else if (r == -EINVAL && (flags & IORING_SETUP_COOP_TASKRUN)) {
        flags &= ~IORING_SETUP_COOP_TASKRUN;  // 5.19
      } else if (r == -EINVAL && (flags & IORING_SETUP_SUBMIT_ALL)) {
        flags &= ~IORING_SETUP_SUBMIT_ALL;  // 5.18: before it, a batch stops at an SQE that fails to submit
      } else {
        throw format::error_errno("io_uring", fmt::format("cannot set up a ring ({})", describe_ring(setup)), -r);
      }
    }
    deferred_ = flags & IORING_SETUP_DEFER_TASKRUN;
    polled_here_ = setup.iopoll && !setup.sqpoll;
    // Spares a file lookup on every io_uring_enter; optional (kernel 5.18).
    io_uring_register_ring_fd(&ring_);
  }
  ~Ring() { io_uring_queue_exit(&ring_); }
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  io_uring* get() { return &ring_; }
  bool deferred() const { return deferred_; }  // IORING_SETUP_DEFER_TASKRUN took
  // IOPOLL without a submission thread: completions are found only when
  // this thread enters the kernel to look for them.
  bool polled_here() const { return polled_here_; }
  // Completions appear only when this thread enters the kernel for them.
  bool enter_for_events() const { return deferred_ || polled_here_; }

 private:
  io_uring ring_{};
  bool deferred_ = false;
  bool polled_here_ = false;
};

void fill(const Mapping& m, const DataPattern& d) {
  if (d.kind == DataPattern::Kind::kZero) return;  // fresh anonymous memory is zero
  std::mt19937_64 rng(0x10a7e5eedULL);
  const size_t random_per_block =
      d.kind == DataPattern::Kind::kCompressible ? 4096 * static_cast<size_t>(100 - d.compress_percent) / 100 : 4096;
  for (size_t block = 0; block < m.size(); block += 4096)
    for (size_t i = 0; i < random_per_block && block + i < m.size(); i += 8) {
      const uint64_t v = rng();
      std::memcpy(m.data() + block + i, &v, std::min<size_t>(8, m.size() - block - i));
    }
}

uint64_t round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace

struct UringEngine::Impl {
  Impl(const std::vector<Target>& targets, uint64_t max_length, uint32_t max_in_flight, DataPattern data,
       RingSetup ring);
  bool prepare(const ReplayIo& io, uint32_t tag);
  int64_t submit();
  void reap(std::vector<Completion>& out);
  bool wait(int64_t deadline_ns, int64_t poll_ns);
  // wait() on a ring whose completions this thread polls from the device.
  bool poll_device(int64_t deadline_ns);

  io_uring_sqe* get_sqe();
  bool discard(const ReplayIo& io, uint32_t tag);  // true: done by ioctl, at once
  // Whether discard() carries `io` out by ioctl, at once.
  bool discards_by_ioctl(const ReplayIo& io) const { return targets_[io.target].block && !uring_discard_; }
  bool probe_uring_discard();
  uint64_t write_offset(uint64_t length);
  void complete_now(uint32_t tag, int32_t status) { immediate_.push_back({tag, status, 0}); }

  const std::vector<Target>& targets_;
  // Declared before the ring, so the ring is gone before they are unmapped.
  Mapping read_buf_, write_buf_;  // registered as buffers 0 and 1
  Mapping large_read_, large_write_;
  Ring ring_;
  uint64_t write_cursor_ = 0;
  std::vector<Completion> immediate_;
  // Block devices: discard through io_uring (kernel >= 6.12), probed once;
  // otherwise through a blocking BLKDISCARD ioctl.
  bool uring_discard_ = false;
  bool iopoll_ = false;        // the kernel polls only reads and writes
  uint64_t outstanding_ = 0;   // SQEs taken whose completions reap() has not seen
  bool events_fresh_ = false;  // io_uring_enter ran since the last reap()
};

UringEngine::Impl::Impl(const std::vector<Target>& targets, uint64_t max_length, uint32_t max_in_flight,
                        DataPattern data, RingSetup ring)
    : targets_(targets), ring_(max_in_flight, ring), iopoll_(ring.iopoll) {
  const uint64_t reg = round_up(std::max<uint64_t>(std::min(max_length, kRegisteredLimit), 4096), 4096);
  read_buf_ = Mapping(reg);
  write_buf_ = Mapping(reg + kWriteRotation);
  fill(write_buf_, data);
  iovec iov[2] = {{read_buf_.data(), read_buf_.size()}, {write_buf_.data(), write_buf_.size()}};
  if (int r = io_uring_register_buffers(ring_.get(), iov, 2); r < 0)
    throw format::error_errno("io_uring", "cannot register buffers", -r);
  if (max_length > kRegisteredLimit) {
    const uint64_t big = round_up(max_length, 4096);
    large_read_ = Mapping(big);
    large_write_ = Mapping(big);
    fill(large_write_, data);
  }
  std::vector<int> fds;
  for (const auto& t : targets) fds.push_back(t.fd);
  if (int r = io_uring_register_files(ring_.get(), fds.data(), static_cast<unsigned>(fds.size())); r < 0)
    throw format::error_errno("io_uring", "cannot register target files", -r);
  uring_discard_ = !iopoll_ && probe_uring_discard();
}

bool UringEngine::Impl::probe_uring_discard() {
  // A zero-length discard changes nothing: a kernel that knows the command
  // rejects the length (EINVAL), one that does not rejects the command
  // (EOPNOTSUPP). Kernels without IORING_OP_URING_CMD say EINVAL to anything.
  io_uring_probe* probe = io_uring_get_probe_ring(ring_.get());
  const bool has_cmd = probe && io_uring_opcode_supported(probe, IORING_OP_URING_CMD);
  io_uring_free_probe(probe);
  if (!has_cmd) return false;
  for (uint32_t i = 0; i < targets_.size(); ++i) {
    if (!targets_[i].block) continue;
    io_uring_sqe* sqe = get_sqe();
    io_uring_prep_rw(IORING_OP_URING_CMD, sqe, static_cast<int>(i), nullptr, 0, 0);
    sqe->cmd_op = kBlockUringCmdDiscard;
    sqe->addr = 0;
    sqe->addr3 = 0;
    sqe->flags |= IOSQE_FIXED_FILE;
    io_uring_submit(ring_.get());
    io_uring_cqe* cqe;
    if (io_uring_wait_cqe(ring_.get(), &cqe) != 0) return false;
    const int res = cqe->res;
    io_uring_cqe_seen(ring_.get(), cqe);
    --outstanding_;
    return res == 0 || res == -EINVAL;
  }
  return false;
}

io_uring_sqe* UringEngine::Impl::get_sqe() {
  io_uring_sqe* sqe = io_uring_get_sqe(ring_.get());
  if (!sqe) {
    io_uring_submit(ring_.get());
    sqe = io_uring_get_sqe(ring_.get());
  }
  if (!sqe) throw format::TraceError("io_uring: no submission entry free");
  ++outstanding_;
  return sqe;
}

uint64_t UringEngine::Impl::write_offset(uint64_t length) {
  const uint64_t room = write_buf_.size() - length;  // >= kWriteRotation
  write_cursor_ = (write_cursor_ + 7 * 4096) % (room + 1) / 4096 * 4096;
  return write_cursor_;
}

bool UringEngine::Impl::discard(const ReplayIo& io, uint32_t tag) {
  const Target& t = targets_[io.target];
  if (discards_by_ioctl(io)) {
    uint64_t range[2] = {io.offset, io.length};
    const int r = ::ioctl(t.fd, BLKDISCARD, range);
    complete_now(tag, r == 0 ? 0 : -errno);
    return true;
  }
  if (!t.block) {
    io_uring_sqe* sqe = get_sqe();
    io_uring_prep_fallocate(sqe, static_cast<int>(io.target), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                            static_cast<off_t>(io.offset), static_cast<off_t>(io.length));
    sqe->flags |= IOSQE_FIXED_FILE;
    io_uring_sqe_set_data64(sqe, user_data(tag, kAnyResult));
    return false;
  }
  io_uring_sqe* sqe = get_sqe();
  io_uring_prep_rw(IORING_OP_URING_CMD, sqe, static_cast<int>(io.target), nullptr, 0, 0);
  sqe->cmd_op = kBlockUringCmdDiscard;
  sqe->addr = io.offset;
  sqe->addr3 = io.length;
  sqe->flags |= IOSQE_FIXED_FILE;
  io_uring_sqe_set_data64(sqe, user_data(tag, kAnyResult));
  return false;
}

bool UringEngine::Impl::prepare(const ReplayIo& io, uint32_t tag) {
  // The plan already refused such IOs; this guard keeps any bug from writing
  // past the end. An IO of no bytes (a flush) touches no offset: under --fit
  // fail it keeps its recorded one, wherever that is.
  if (io.length && io.offset + io.length > targets_[io.target].size) {
    complete_now(tag, -ERANGE);
    return false;
  }
  const int file = static_cast<int>(io.target);
  const off_t off = static_cast<off_t>(io.offset);
  const unsigned len = static_cast<unsigned>(io.length);
  const bool file_target = !targets_[io.target].block;
  // An fsync's empty pre-flush write is replayed as the fsync alone: the fsync
  // makes it again, and a write of nothing linked behind it would only add a
  // step to every fsync.
  const format::Op op = io.op == format::Op::kWrite && (io.flags & format::flag::kPreflush) && io.length == 0
                            ? format::Op::kFlush
                            : io.op;
  const bool transfer = op == format::Op::kRead || op == format::Op::kWrite;
  if (iopoll_ && (!transfer || (io.flags & format::flag::kPreflush))) {
    complete_now(tag, -EOPNOTSUPP);
    return false;
  }
  if (transfer && io.length > kMaxTransfer) {  // the kernel would move only part of it
    complete_now(tag, -EINVAL);
    return false;
  }
  io_uring_sqe* sqe;
  switch (op) {
    case format::Op::kRead:
      sqe = get_sqe();
      if (io.length <= kRegisteredLimit)
        io_uring_prep_read_fixed(sqe, file, read_buf_.data(), len, off, 0);
      else
        io_uring_prep_read(sqe, file, large_read_.data(), len, off);
      break;
    case format::Op::kWrite:
      if (io.flags & format::flag::kPreflush) {
        sqe = get_sqe();
        io_uring_prep_fsync(sqe, file, file_target ? IORING_FSYNC_DATASYNC : 0);
        sqe->flags |= IOSQE_FIXED_FILE | IOSQE_IO_LINK;
        io_uring_sqe_set_data64(sqe, user_data(tag, kAuxHalf));
      }
      sqe = get_sqe();
      if (io.length <= kRegisteredLimit)
        io_uring_prep_write_fixed(sqe, file, write_buf_.data() + write_offset(io.length), len, off, 1);
      else
        io_uring_prep_write(sqe, file, large_write_.data(), len, off);
      // RWF_DSYNC on an O_DIRECT write is how the kernel sends a FUA write.
      if (io.flags & format::flag::kFua) sqe->rw_flags = RWF_DSYNC;
      break;
    case format::Op::kFlush:
      sqe = get_sqe();
      io_uring_prep_fsync(sqe, file, file_target ? IORING_FSYNC_DATASYNC : 0);
      break;
    case format::Op::kWriteZeroes:
      sqe = get_sqe();
      io_uring_prep_fallocate(sqe, file, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, off,
                              static_cast<off_t>(io.length));
      break;
    case format::Op::kDiscard:
      return discard(io, tag);
    default:
      complete_now(tag, -EOPNOTSUPP);
      return false;
  }
  sqe->flags |= IOSQE_FIXED_FILE;
  io_uring_sqe_set_data64(sqe, user_data(tag, transfer ? len : kAnyResult));
  return false;
}

int64_t UringEngine::Impl::submit() {
  const int64_t now = host::monotonic_ns();
  if (io_uring_sq_ready(ring_.get()) == 0) return now;  // get_sqe() already submitted them
  int r;
  do r = ring_.enter_for_events() ? io_uring_submit_and_get_events(ring_.get()) : io_uring_submit(ring_.get());
  while (r == -EINTR || r == -EAGAIN);
  if (r < 0) throw format::error_errno("io_uring", "submit failed", -r);
  events_fresh_ = true;
  return now;
}

void UringEngine::Impl::reap(std::vector<Completion>& out) {
  const size_t first = out.size();
  if (!immediate_.empty()) {
    out.insert(out.end(), immediate_.begin(), immediate_.end());
    immediate_.clear();
  }
  // Deferred and polled completions are posted only inside io_uring_enter;
  // submit() and wait() have just been there, otherwise go and fetch them.
  if (ring_.enter_for_events() && !events_fresh_) io_uring_get_events(ring_.get());
  events_fresh_ = false;
  io_uring_cqe* cqe;
  unsigned head, seen = 0;
  io_uring_for_each_cqe(ring_.get(), head, cqe) {
    ++seen;
    const uint64_t data = io_uring_cqe_get_data64(cqe);
    const auto expect = static_cast<uint32_t>(data >> 32);
    // The flush half of a pre-flush write reports only a failure; its write
    // then completes with -ECANCELED and carries the IO's status.
    if (expect != kAuxHalf) out.push_back({static_cast<uint32_t>(data), status_of(cqe->res, expect), 0});
  }
  io_uring_cq_advance(ring_.get(), seen);
  outstanding_ -= seen;
  if (out.size() == first) return;
  const int64_t now = host::monotonic_ns();
  for (size_t i = first; i < out.size(); ++i) out[i].complete_ns = now;
}

bool UringEngine::Impl::wait(int64_t deadline_ns, int64_t poll_ns) {
  if (!immediate_.empty()) return false;
  io_uring* ring = ring_.get();
  io_uring_cqe* cqe;
  if (ring_.polled_here()) return poll_device(deadline_ns);
  int64_t now = host::monotonic_ns();
  const int64_t poll_end = std::min(deadline_ns, now + poll_ns);
  while (now < poll_end) {
    if (ring_.deferred()) io_uring_get_events(ring);
    if (io_uring_cq_ready(ring)) {
      events_fresh_ = true;
      return true;
    }
    // A thread waiting on this CPU may be the device's own work (a loop
    // device's worker, the io-wq worker running an fsync): it goes first.
    // Measured on a tmpfs loop device, QD4 reads and writes with fsyncs:
    // replayed duration +16-26% of the recording's, against +23-64% without.
    sched_yield();
    now = host::monotonic_ns();
  }
  if (deadline_ns == INT64_MAX) {
    // Without a timer: arming and cancelling one costs a fast device's
    // throughput at queue depth 1. A signal ends the wait (EINTR).
    io_uring_wait_cqe(ring, &cqe);
  } else {
    const int64_t left = deadline_ns - now;
    if (left <= 0) return false;
    __kernel_timespec ts{left / 1'000'000'000, left % 1'000'000'000};
    io_uring_wait_cqe_timeout(ring, &cqe, &ts);
  }
  events_fresh_ = true;
  return false;
}

bool UringEngine::Impl::poll_device(int64_t deadline_ns) {
  io_uring* ring = ring_.get();
  events_fresh_ = true;
  if (deadline_ns == INT64_MAX) {
    // The kernel polls the device until a completion comes.
    io_uring_cqe* cqe;
    return io_uring_wait_cqe(ring, &cqe) == 0;
  }
  if (outstanding_ == 0 && !io_uring_cq_ready(ring)) {
    // Nothing to poll for: sleep to the deadline, as a timed replay's idle gap.
    const timespec until{deadline_ns / 1'000'000'000, deadline_ns % 1'000'000'000};
    ::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, nullptr);
    return false;
  }
  // One pass over the device's poll queues per entry, until the deadline.
  for (;;) {
    io_uring_get_events(ring);
    if (io_uring_cq_ready(ring)) return true;
    if (host::monotonic_ns() >= deadline_ns) return false;
  }
}

UringEngine::UringEngine(const std::vector<Target>& targets, uint64_t max_length, uint32_t max_in_flight,
                         DataPattern data, RingSetup ring)
    : impl_(std::make_unique<Impl>(targets, max_length, max_in_flight, data, ring)) {}
UringEngine::~UringEngine() = default;
UringEngine::UringEngine(UringEngine&&) noexcept = default;
UringEngine& UringEngine::operator=(UringEngine&&) noexcept = default;

bool UringEngine::prepare(const ReplayIo& io, uint32_t tag) { return impl_->prepare(io, tag); }
bool UringEngine::runs_at_once(const ReplayIo& io) const {
  return io.op == format::Op::kDiscard && impl_->discards_by_ioctl(io);
}
int64_t UringEngine::submit() { return impl_->submit(); }
void UringEngine::reap(std::vector<Completion>& out) { impl_->reap(out); }
bool UringEngine::wait(int64_t deadline_ns, int64_t poll_ns) { return impl_->wait(deadline_ns, poll_ns); }

}  // namespace iotape::replay

#include "traces/import/sorted_spill.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <queue>

#include "traces/error.h"

namespace iotape {
namespace {

// An IO as a spilled run stores it, followed by comm_len bytes of its comm.
struct Record {
  int64_t issue_ns, queue_ns, complete_ns, source_index;
  uint64_t offset, length, cgroup;
  uint32_t device, flags, pid, comm_len;
  int32_t status, cpu;
  Op op;
};

// Process names beyond this much memory make a run spill early.
constexpr size_t kMaxArena = 256 << 20;

std::string spill_dir(const std::string& dir) {
  if (!dir.empty()) return dir;
  const char* tmp = std::getenv("TMPDIR");
  return tmp && *tmp ? tmp : "/tmp";
}

// One spilled run read back in order.
class RunReader {
 public:
  RunReader(std::FILE* f, std::string dir) : f_(f), dir_(std::move(dir)) {
    std::rewind(f_);
    next();
  }
  bool done() const { return done_; }
  const Io& io() const { return io_; }
  void next() {
    Record r;
    if (std::fread(&r, sizeof r, 1, f_) != 1) {
      if (std::ferror(f_)) throw error_errno(dir_, "cannot read a spilled sort run", errno);
      done_ = true;
      return;
    }
    comm_.resize(r.comm_len);
    if (r.comm_len && std::fread(comm_.data(), 1, r.comm_len, f_) != r.comm_len)
      throw InputError(dir_ + ": a spilled sort run is cut short");
    io_ = {.issue_ns = r.issue_ns, .queue_ns = r.queue_ns, .complete_ns = r.complete_ns, .offset = r.offset,
           .length = r.length, .device = r.device, .op = r.op, .flags = r.flags, .status = r.status,
           .pid = r.pid, .comm = comm_, .cgroup = r.cgroup, .cpu = r.cpu, .source_index = r.source_index};
  }

 private:
  std::FILE* f_;
  std::string dir_;
  bool done_ = false;
  Io io_;
  std::string comm_;
};

}  // namespace

SortedSpill::SortedSpill(size_t run_ios, std::string dir) : run_ios_(std::max<size_t>(run_ios, 1)), dir_(spill_dir(dir)) {}

SortedSpill::~SortedSpill() {
  for (std::FILE* f : runs_) std::fclose(f);
}

void SortedSpill::add(const Io& io) {
  if (held_.size() >= run_ios_ || arena_.size() >= kMaxArena) spill();
  Held h{.io = io, .comm_at = arena_.size(), .comm_len = static_cast<uint32_t>(io.comm.size())};
  h.io.comm = {};
  arena_ += io.comm;
  held_.push_back(h);
}

void SortedSpill::spill() {
  std::stable_sort(held_.begin(), held_.end(),
                   [](const Held& a, const Held& b) { return a.io.issue_ns < b.io.issue_ns; });
  std::string path = dir_ + "/iotape-sort-XXXXXX";
  const int fd = ::mkstemp(path.data());
  if (fd < 0) throw error_errno(path, "cannot create a temporary file for sorting", errno);
  ::unlink(path.c_str());  // removed when closed, whatever happens
  std::FILE* f = ::fdopen(fd, "w+b");
  if (!f) {
    ::close(fd);
    throw error_errno(path, "cannot open a temporary file for sorting", errno);
  }
  runs_.push_back(f);
  ++spilled_;
  for (const Held& h : held_) {
    const Io& io = h.io;
    const Record r{.issue_ns = io.issue_ns, .queue_ns = io.queue_ns, .complete_ns = io.complete_ns,
                   .source_index = io.source_index, .offset = io.offset, .length = io.length, .cgroup = io.cgroup,
                   .device = io.device, .flags = io.flags, .pid = io.pid, .comm_len = h.comm_len,
                   .status = io.status, .cpu = io.cpu, .op = io.op};
    if (std::fwrite(&r, sizeof r, 1, f) != 1 ||
        (h.comm_len && std::fwrite(arena_.data() + h.comm_at, 1, h.comm_len, f) != h.comm_len))
      throw error_errno(dir_, "cannot write a spilled sort run", errno);
  }
  if (std::fflush(f) != 0) throw error_errno(dir_, "cannot write a spilled sort run", errno);
  held_.clear();
  arena_.clear();
}

void SortedSpill::drain(TraceWriter& out) {
  std::stable_sort(held_.begin(), held_.end(),
                   [](const Held& a, const Held& b) { return a.io.issue_ns < b.io.issue_ns; });
  auto held_io = [this](size_t i) {
    Io io = held_[i].io;
    io.comm = std::string_view(arena_).substr(held_[i].comm_at, held_[i].comm_len);
    return io;
  };
  if (runs_.empty()) {  // everything fit in memory
    for (size_t i = 0; i < held_.size(); ++i) out.append(held_io(i));
  } else {
    std::vector<RunReader> readers;
    readers.reserve(runs_.size());
    for (std::FILE* f : runs_) readers.emplace_back(f, dir_);
    // Cursor k < readers.size() is a spilled run; the one after them is held_,
    // the latest input, so run order breaks ties in input order.
    size_t held_at = 0;
    const size_t mem = readers.size();
    auto issue = [&](size_t k) { return k == mem ? held_[held_at].io.issue_ns : readers[k].io().issue_ns; };
    auto later = [&](size_t a, size_t b) {
      const int64_t ta = issue(a), tb = issue(b);
      return ta != tb ? ta > tb : a > b;
    };
    std::priority_queue<size_t, std::vector<size_t>, decltype(later)> heads(later);
    for (size_t k = 0; k < mem; ++k)
      if (!readers[k].done()) heads.push(k);
    if (!held_.empty()) heads.push(mem);
    while (!heads.empty()) {
      const size_t k = heads.top();
      heads.pop();
      if (k == mem) {
        out.append(held_io(held_at));
        if (++held_at < held_.size()) heads.push(k);
      } else {
        out.append(readers[k].io());
        readers[k].next();
        if (!readers[k].done()) heads.push(k);
      }
    }
  }
  held_.clear();
  arena_.clear();
  for (std::FILE* f : runs_) std::fclose(f);
  runs_.clear();
}

}  // namespace iotape

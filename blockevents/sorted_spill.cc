#include "blockevents/sorted_spill.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <queue>

#include "format/error.h"

namespace iotape::blockevents {
namespace {

// Records beyond this much memory (long process names) make a run spill early.
constexpr size_t kMaxArena = 256 << 20;

std::string spill_dir(const std::string& dir) {
  if (!dir.empty()) return dir;
  const char* tmp = std::getenv("TMPDIR");
  return tmp && *tmp ? tmp : "/tmp";
}

// A spilled record: this header, the fixed part, then text_len bytes of text.
struct RecordHeader {
  int64_t key;
  uint32_t text_len;
};

// One spilled run read back in order.
class RunReader {
 public:
  RunReader(std::FILE* f, size_t fixed_bytes, const std::string& dir) : f_(f), dir_(dir), fixed_(fixed_bytes, '\0') {
    std::rewind(f_);
    next();
  }
  bool done() const { return done_; }
  int64_t key() const { return header_.key; }
  const char* fixed() const { return fixed_.data(); }
  std::string_view text() const { return text_; }
  void next() {
    if (std::fread(&header_, sizeof header_, 1, f_) != 1) {
      if (std::ferror(f_)) throw format::error_errno(dir_, "cannot read a spilled sort run", errno);
      done_ = true;
      return;
    }
    text_.resize(header_.text_len);
    if (std::fread(fixed_.data(), 1, fixed_.size(), f_) != fixed_.size() ||
        (header_.text_len && std::fread(text_.data(), 1, header_.text_len, f_) != header_.text_len))
      throw format::InputError(dir_ + ": a spilled sort run is cut short");
  }

 private:
  std::FILE* f_;
  const std::string& dir_;
  bool done_ = false;
  RecordHeader header_{};
  std::string fixed_;
  std::string text_;
};

// An IO as SortedSpill holds it; its comm is the record's text.
struct IoRecord {
  int64_t issue_ns, queue_ns, complete_ns, source_index;
  uint64_t offset, length, cgroup;
  uint32_t device, flags, pid;
  int32_t status, cpu;
  format::Op op;
};

}  // namespace

RecordSpill::RecordSpill(size_t fixed_bytes, size_t run, std::string dir)
    : fixed_bytes_(fixed_bytes), run_(std::max<size_t>(run, 1)), dir_(spill_dir(dir)) {}

RecordSpill::~RecordSpill() {
  for (std::FILE* f : runs_) std::fclose(f);
}

void RecordSpill::add(int64_t key, const void* fixed, std::string_view text) {
  if (held_.size() >= run_ || arena_.size() >= kMaxArena) spill();
  held_.push_back({key, arena_.size(), static_cast<uint32_t>(text.size())});
  arena_.append(static_cast<const char*>(fixed), fixed_bytes_);
  arena_ += text;
}

void RecordSpill::spill() {
  std::stable_sort(held_.begin(), held_.end(), [](const Held& a, const Held& b) { return a.key < b.key; });
  std::string path = dir_ + "/iotape-sort-XXXXXX";
  const int fd = ::mkstemp(path.data());
  if (fd < 0) throw format::error_errno(path, "cannot create a temporary file for sorting", errno);
  ::unlink(path.c_str());  // removed when closed, whatever happens
  std::FILE* f = ::fdopen(fd, "w+b");
  if (!f) {
    ::close(fd);
    throw format::error_errno(path, "cannot open a temporary file for sorting", errno);
  }
  runs_.push_back(f);
  ++spilled_;
  for (const Held& h : held_) {
    const RecordHeader r{h.key, h.text_len};
    if (std::fwrite(&r, sizeof r, 1, f) != 1 ||
        std::fwrite(arena_.data() + h.at, 1, fixed_bytes_ + h.text_len, f) != fixed_bytes_ + h.text_len)
      throw format::error_errno(dir_, "cannot write a spilled sort run", errno);
  }
  if (std::fflush(f) != 0) throw format::error_errno(dir_, "cannot write a spilled sort run", errno);
  held_.clear();
  arena_.clear();
}

void RecordSpill::drain(const std::function<void(const void* fixed, std::string_view text)>& visit) {
  std::stable_sort(held_.begin(), held_.end(), [](const Held& a, const Held& b) { return a.key < b.key; });
  auto visit_held = [&](const Held& h) {
    visit(arena_.data() + h.at, std::string_view(arena_).substr(h.at + fixed_bytes_, h.text_len));
  };
  if (runs_.empty()) {  // everything fit in memory
    for (const Held& h : held_) visit_held(h);
  } else {
    std::vector<RunReader> readers;
    readers.reserve(runs_.size());
    for (std::FILE* f : runs_) readers.emplace_back(f, fixed_bytes_, dir_);
    // Cursor k < readers.size() is a spilled run; the one after them is held_,
    // the latest input, so run order breaks ties in input order.
    size_t held_at = 0;
    const size_t mem = readers.size();
    auto key = [&](size_t k) { return k == mem ? held_[held_at].key : readers[k].key(); };
    auto later = [&](size_t a, size_t b) {
      const int64_t ka = key(a), kb = key(b);
      return ka != kb ? ka > kb : a > b;
    };
    std::priority_queue<size_t, std::vector<size_t>, decltype(later)> heads(later);
    for (size_t k = 0; k < mem; ++k)
      if (!readers[k].done()) heads.push(k);
    if (!held_.empty()) heads.push(mem);
    while (!heads.empty()) {
      const size_t k = heads.top();
      heads.pop();
      if (k == mem) {
        visit_held(held_[held_at]);
        if (++held_at < held_.size()) heads.push(k);
      } else {
        visit(readers[k].fixed(), readers[k].text());
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

SortedSpill::SortedSpill(size_t run_ios, std::string dir) : records_(sizeof(IoRecord), run_ios, std::move(dir)) {}

void SortedSpill::add(const format::Io& io) {
  const IoRecord r{.issue_ns = io.issue_ns, .queue_ns = io.queue_ns, .complete_ns = io.complete_ns,
                   .source_index = io.source_index, .offset = io.offset, .length = io.length, .cgroup = io.cgroup,
                   .device = io.device, .flags = io.flags, .pid = io.pid, .status = io.status, .cpu = io.cpu,
                   .op = io.op};
  records_.add(io.issue_ns, &r, io.comm);
}

void SortedSpill::drain(const std::function<void(const format::Io&)>& append) {
  records_.drain([&append](const void* fixed, std::string_view comm) {
    IoRecord r;
    std::memcpy(&r, fixed, sizeof r);
    append({.issue_ns = r.issue_ns, .queue_ns = r.queue_ns, .complete_ns = r.complete_ns, .offset = r.offset,
                .length = r.length, .device = r.device, .op = r.op, .flags = r.flags, .status = r.status,
                .pid = r.pid, .comm = comm, .cgroup = r.cgroup, .cpu = r.cpu, .source_index = r.source_index});
  });
}

}  // namespace iotape::blockevents

#include "capture/recorder.h"

#include <sys/random.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <limits>

#include <fmt/format.h>

#include "capture/blktrace_backend.h"
#include "capture/issue_order.h"
#include "capture/self_traffic.h"
#include "format/error.h"
#include "host/clocks.h"
#include "host/cpu_idle.h"

namespace iotape::capture {
namespace {

constexpr int kPollMs = 100;  // the longest wait for IOs, and for a stop
constexpr int64_t kNever = std::numeric_limits<int64_t>::max();

// A poll's wait until `left_ns` from now, rounded up, at most kPollMs.
int poll_ms(int64_t left_ns) {
  if (left_ns <= 0) return 0;
  return static_cast<int>(std::min<int64_t>(kPollMs, (left_ns + 999'999) / 1'000'000));
}

int64_t clock_ns(clockid_t id) {
  timespec ts;
  ::clock_gettime(id, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::string random_id() {
  unsigned char b[16];
  if (::getrandom(b, sizeof b, 0) != sizeof b) throw format::error_errno("getrandom", "cannot make a trace id", errno);
  std::string s;
  for (unsigned char c : b) s += fmt::format("{:02x}", c);
  return s;
}

std::vector<observer::BlockDevice> select_devices(const std::vector<std::string>& specs,
                                                  std::vector<std::string>& notes) {
  std::vector<observer::BlockDevice> out;
  if (specs.empty()) {
    for (auto& d : observer::all_disks()) {
      if (d.request_based)
        out.push_back(std::move(d));
      else
        notes.push_back("skipping " + d.name + ": bio-based device, no request events");
    }
    if (out.empty()) throw format::DeviceRefused("no request-based block devices to record");
    return out;
  }
  for (const auto& spec : specs) {
    observer::BlockDevice d = observer::resolve_device(spec);
    if (!d.request_based)
      throw format::DeviceRefused(spec + " (" + d.name +
                                  ") is a bio-based device (e.g. zram, device-mapper): it has no request queue, "
                                  "so there are no request events to record");
    bool dup = false;
    for (const auto& e : out) dup |= e.major == d.major && e.minor == d.minor;
    if (!dup) out.push_back(std::move(d));
  }
  return out;
}

// The back end `o.backend` names; "auto": eBPF where it loads, else the
// blktrace one, with the reason in `notes`. `chosen` gets the one made.
std::unique_ptr<observer::Backend> make_backend(const RecordOptions& o, const observer::BackendOptions& bo,
                                                std::vector<std::string>& notes, std::string& chosen) {
  chosen = o.backend;
  if (o.backend == "blktrace") return make_blktrace_backend(bo);
  if (o.backend != "auto") return observer::make_ebpf_backend(bo);
  try {
    chosen = "ebpf";
    return observer::make_ebpf_backend(bo);
  } catch (const format::TraceError& e) {
    std::string why = e.what();
    // The first line: libbpf's log follows.
    if (const auto nl = why.find('\n'); nl != std::string::npos) why.resize(nl);
    notes.push_back("the ebpf back end cannot run here (" + why + "): using the blktrace back end");
  }
  chosen = "blktrace";
  return make_blktrace_backend(bo);
}

// The devices as the trace header describes them. Read before the back end
// attaches: reading a virtio-blk disk's serial sends the disk a request, which
// would be the recording's own.
std::vector<v1::Device> describe_devices(const RecordOptions& o, const std::vector<observer::BlockDevice>& devices) {
  std::vector<v1::Device> out;
  for (const auto& d : devices) {
    out.push_back(d.describe());
    if (o.output.anonymize) out.back().clear_serial();
  }
  return out;
}

v1::TraceHeader make_header(const RecordOptions& o, const std::vector<observer::BlockDevice>& devices,
                            const std::vector<v1::Device>& described, const observer::Backend& b,
                            const std::string& backend) {
  v1::TraceHeader h;
  h.set_source(b.source());
  h.set_source_detail(b.detail());
  utsname u{};
  ::uname(&u);
  h.set_kernel(u.release);
  if (!o.output.anonymize) h.set_host(u.nodename);
  h.set_clock(v1::CLOCK_DOMAIN_BOOTTIME);
  h.set_anchor_trace_ns(clock_ns(CLOCK_BOOTTIME));
  h.set_anchor_unix_ns(clock_ns(CLOCK_REALTIME));
  std::string names;
  for (const auto& d : described) *h.add_devices() = d;
  for (const auto& d : devices) names += (names.empty() ? "" : ",") + d.name;
  h.set_trace_id(random_id());
  auto& m = *h.mutable_metadata();
  m["capture.backend"] = backend;
  for (const auto& [k, v] : b.metadata()) m[k] = v;
  if (const std::string idle = host::describe_cpu_idle(); !idle.empty()) m["host.cpu_idle"] = idle;
  m["capture.devices"] = names;
  m["capture.flush_interval_ns"] = std::to_string(o.output.writer.flush_interval_ns);
  m["capture.zstd_level"] = std::to_string(o.output.writer.zstd_level);
  if (o.output.rotate_bytes) m["capture.rotate_bytes"] = std::to_string(o.output.rotate_bytes);
  if (o.output.rotate_ns) m["capture.rotate_ns"] = std::to_string(o.output.rotate_ns);
  if (o.pid) m["capture.pid"] = std::to_string(o.pid);
  if (!o.comm.empty()) m["capture.comm"] = o.output.anonymize ? anonymize_comm(o.comm) : o.comm;
  if (o.output.anonymize) m["capture.anonymized"] = "comm,host,serial";
  if (o.include_self) m["capture.include_self"] = "1";  // its own IOs kept, flagged format::flag::kSelf
  return h;
}

// Options the back ends cannot honour together.
void check_options(const RecordOptions& o) {
  if (o.issue_complete_only && o.backend != "blktrace")
    throw format::UsageError("--blk-events issue-complete: a choice of the blktrace back end");
  if (o.issue_complete_only && (o.pid || !o.comm.empty()))
    throw format::UsageError(
        "--blk-events issue-complete: issue and completion events carry no submitter, so --pid and --comm cannot "
        "filter them");
}

// Adds the events the back end dropped since the last call to the trace.
void count_dropped(observer::Backend& b, TraceOutput& out, uint64_t& dropped) {
  if (const uint64_t d = b.dropped(); d > dropped) {
    out.add_dropped(d - dropped);
    dropped = d;
  }
}

// What the back end could not place, known only at the end: in the result and
// the trace's end keys.
void write_closing_counts(observer::Backend& b, TraceOutput& out, RecordResult& r) {
  r.unmatched = b.unmatched();
  out.set_metadata("capture.unmatched_completions", std::to_string(r.unmatched));
  r.unmatched_bytes = b.unmatched_bytes();
  out.set_metadata("capture.unmatched_completion_bytes", std::to_string(r.unmatched_bytes));
  r.uncompleted = b.uncompleted();
  out.set_metadata("capture.uncompleted_ios", std::to_string(r.uncompleted));
}

// What record says before it starts: the devices, the back end's hooks, the file.
void announce(const std::vector<observer::BlockDevice>& devices, observer::Backend& backend, const std::string& path,
              std::vector<std::string> notes, const RecordCallbacks& cb) {
  if (!cb.note) return;
  std::string names;
  for (const auto& d : devices)
    names += fmt::format("{}{} ({}:{})", names.empty() ? "" : ", ", d.name, d.major, d.minor);
  for (const auto& [k, v] : backend.metadata()) notes.push_back(k + ": " + v);
  notes.push_back(fmt::format("recording {} with {} to {}", names, backend.detail(), path));
  for (const auto& n : notes) cb.note(n);
}

// Why the capture stops after `elapsed_ns`; empty while it goes on.
std::string stop_reason(const std::atomic<bool>& stop, const RecordOptions& o, int64_t elapsed_ns) {
  if (stop.load(std::memory_order_relaxed)) return "signal";
  if (o.duration_ns && elapsed_ns >= o.duration_ns) return "duration";
  return {};
}

// The result's counts of what was written, left out and removed.
void fill_result(const TraceOutput& out, const SelfTraffic& self, RecordResult& r) {
  r.ios = out.ios();
  r.self_ios = self.ios();
  r.self_bytes = self.bytes();
  r.self_detail = self.describe();
  r.removed_parts = out.removed_parts();
  r.removed_bytes = out.removed_bytes();
  r.file_bytes = out.file_bytes();
  r.paths = out.paths();
}

}  // namespace

RecordResult record(const RecordOptions& o, const std::atomic<bool>& stop, const RecordCallbacks& cb) {
  std::vector<std::string> notes;
  const std::vector<observer::BlockDevice> devices = select_devices(o.devices, notes);
  check_options(o);
  const std::vector<v1::Device> described = describe_devices(o, devices);
  observer::BackendOptions bo{devices, o.pid, o.comm, o.buffer_bytes};
  bo.issue_complete_only = o.issue_complete_only;
  std::string chosen;
  std::unique_ptr<observer::Backend> backend = make_backend(o, bo, notes, chosen);
  SelfTraffic self(devices, o.output.path);
  OutputOptions output = o.output;
  output.writer.on_sync = [&self](int64_t begin, int64_t end) { self.add_sync(begin, end); };
  TraceOutput out(output, make_header(o, devices, described, *backend, chosen));

  announce(devices, *backend, out.paths().front(), std::move(notes), cb);

  RecordResult r;
  uint64_t seen = 0, bytes = 0, dropped = 0;
  // Each flush writes the IOs issued before the oldest outstanding one, not
  // counting those issued more than an interval ago: so when the earliest
  // unflushed completion turns an interval old (`due`), its IO goes out.
  const int64_t interval = o.output.writer.flush_interval_ns;
  const bool flushing = o.output.writer.durability != format::Durability::kNone;
  int64_t due = kNever;
  int64_t outstanding = std::numeric_limits<int64_t>::min();  // the back end's last bound
  IssueOrder order(o.reorder_max_ios);
  const observer::IoSink keep = [&](const format::Io& io) {
    order.add(io);
    ++seen;
    bytes += io.length;
    if (io.has_complete()) due = std::min(due, io.complete_ns + interval);
  };
  const observer::IoSink sink = [&](const format::Io& io) {
    if (!self.caused(io)) return keep(io);
    if (!o.include_self) return;
    format::Io flagged = io;
    flagged.flags |= format::flag::kSelf;
    keep(flagged);
  };
  const observer::IoSink write = [&](const format::Io& io) { out.append(io); };
  const int64_t start = host::boottime_ns();
  int64_t last_progress = start;
  try {
    for (int64_t now = start;;) {
      backend->poll(flushing ? poll_ms(due - now) : kPollMs, sink);
      now = host::boottime_ns();
      if (flushing && now > due) {
        outstanding = backend->oldest_outstanding_ns(now - interval, sink);
        order.release(outstanding, write);
        out.flush();
        if (cb.durable && o.output.writer.durability == format::Durability::kFdatasync)
          cb.durable(out.paths().back(), out.part_bytes());
        const int64_t earliest = order.earliest_completion();
        due = earliest == format::kNoTime ? kNever : earliest + interval;
      } else {
        // The last bound still holds; IOs an interval old are not waited for.
        order.release(std::max(outstanding, now - interval), write);
      }
      count_dropped(*backend, out, dropped);
      out.tick(now);
      if (r.stop_reason = stop_reason(stop, o, now - start); !r.stop_reason.empty()) break;
      if (cb.progress && now - last_progress >= 1'000'000'000) {
        cb.progress(RecordProgress{now - start, seen, bytes, dropped, out.file_bytes()});
        last_progress = now;
      }
    }
    backend->poll(0, sink);  // what completed before the stop is still in the buffer
    backend->finish(sink);
    order.release(0, write, true);
    count_dropped(*backend, out, dropped);
    write_closing_counts(*backend, out, r);
    self.write_metadata([&out](const std::string& k, const std::string& v) { out.set_metadata(k, v); });
    out.close();
    if (cb.durable && o.output.writer.durability == format::Durability::kFdatasync)
      cb.durable(out.paths().back(), out.part_bytes());
  } catch (const format::IoError& e) {
    r.write_failed = true;
    r.stop_reason = e.what();
  }
  r.dropped = dropped;
  fill_result(out, self, r);
  return r;
}

}  // namespace iotape::capture

#include "capture/recorder.h"

#include <sys/random.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <stdexcept>

#include <fmt/format.h>

#include "capture/issue_order.h"
#include "traces/error.h"

namespace iotape::capture {
namespace {

volatile std::sig_atomic_t g_stop = 0;
void on_stop_signal(int) { g_stop = 1; }

// SIGINT/SIGTERM end the capture loop; without SA_RESTART they also cut the
// back end's wait short. The previous handlers come back on destruction.
class StopSignals {
 public:
  StopSignals() {
    g_stop = 0;
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGINT, &sa, &old_int_);
    ::sigaction(SIGTERM, &sa, &old_term_);
  }
  ~StopSignals() {
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
  }

 private:
  struct sigaction old_int_ {}, old_term_ {};
};

int64_t clock_ns(clockid_t id) {
  timespec ts;
  ::clock_gettime(id, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::string random_id() {
  unsigned char b[16];
  if (::getrandom(b, sizeof b, 0) != sizeof b) throw std::runtime_error("getrandom failed");
  std::string s;
  for (unsigned char c : b) s += fmt::format("{:02x}", c);
  return s;
}

std::vector<BlockDevice> select_devices(const std::vector<std::string>& specs) {
  std::vector<BlockDevice> out;
  if (specs.empty()) {
    for (auto& d : all_disks()) {
      if (d.request_based)
        out.push_back(std::move(d));
      else
        fmt::print(stderr, "iotape: skipping {}: bio-based device, no request events\n", d.name);
    }
    if (out.empty()) throw std::runtime_error("no request-based block devices to record");
    return out;
  }
  for (const auto& spec : specs) {
    BlockDevice d = resolve_device(spec);
    if (!d.request_based)
      throw std::runtime_error(spec + " (" + d.name +
                               ") is a bio-based device (e.g. zram, device-mapper): it has no request queue, "
                               "so there are no request events to record");
    bool dup = false;
    for (const auto& e : out) dup |= e.major == d.major && e.minor == d.minor;
    if (!dup) out.push_back(std::move(d));
  }
  return out;
}

v1::TraceHeader make_header(const RecordOptions& o, const std::vector<BlockDevice>& devices, const Backend& b) {
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
  for (const auto& d : devices) {
    v1::Device dev = d.describe();
    if (o.output.anonymize) dev.clear_serial();
    *h.add_devices() = dev;
    names += (names.empty() ? "" : ",") + d.name;
  }
  h.set_trace_id(random_id());
  auto& m = *h.mutable_metadata();
  m["capture.backend"] = o.backend;
  m["capture.devices"] = names;
  m["capture.flush_interval_ns"] = std::to_string(o.output.writer.flush_interval_ns);
  m["capture.reorder_window_ns"] = std::to_string(o.reorder_window_ns);
  m["capture.zstd_level"] = std::to_string(o.output.writer.zstd_level);
  if (o.output.rotate_bytes) m["capture.rotate_bytes"] = std::to_string(o.output.rotate_bytes);
  if (o.output.rotate_ns) m["capture.rotate_ns"] = std::to_string(o.output.rotate_ns);
  if (o.pid) m["capture.pid"] = std::to_string(o.pid);
  if (!o.comm.empty()) m["capture.comm"] = o.output.anonymize ? anonymize_comm(o.comm) : o.comm;
  if (o.output.anonymize) m["capture.anonymized"] = "comm,host,serial";
  return h;
}

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int i = 0;
  while (b >= 1024 && i < 4) b /= 1024, ++i;
  return fmt::format("{:.1f} {}", b, units[i]);
}

}  // namespace

int64_t boottime_ns() { return clock_ns(CLOCK_BOOTTIME); }

RecordResult record(const RecordOptions& o) {
  const std::vector<BlockDevice> devices = select_devices(o.devices);
  BackendOptions bo{devices, o.pid, o.comm, o.buffer_bytes};
  StopSignals signals;
  std::unique_ptr<Backend> backend =
      o.backend == "blktrace" ? make_blktrace_backend(bo) : make_ebpf_backend(bo);
  TraceOutput out(o.output, make_header(o, devices, *backend));

  std::string names;
  for (const auto& d : devices) names += fmt::format("{}{} ({}:{})", names.empty() ? "" : ", ", d.name, d.major, d.minor);
  fmt::print(stderr, "iotape: recording {} with {} to {}\n", names, backend->detail(), out.paths().front());

  RecordResult r;
  uint64_t seen = 0, bytes = 0, dropped = 0;
  IssueOrder order(o.reorder_window_ns, o.reorder_max_ios);
  const IoSink sink = [&](const Io& io) {
    order.add(io);
    ++seen;
    bytes += io.length;
  };
  const IoSink write = [&](const Io& io) { out.append(io); };
  const int64_t start = boottime_ns();
  int64_t last_status = start;
  uint64_t status_ios = 0, status_bytes = 0;
  try {
    for (;;) {
      backend->poll(100, sink);
      const int64_t now = boottime_ns();
      order.release(now, write);
      if (const uint64_t d = backend->dropped(); d > dropped) {
        out.add_dropped(d - dropped);
        dropped = d;
      }
      out.tick(now);
      if (g_stop) {
        r.stop_reason = "signal";
        break;
      }
      if (o.duration_ns && now - start >= o.duration_ns) {
        r.stop_reason = "duration";
        break;
      }
      if (o.status_line && now - last_status >= 1'000'000'000) {
        const double secs = static_cast<double>(now - last_status) / 1e9;
        fmt::print(stderr, "\r{} IOs  {:.0f} IOPS  {:.1f} MB/s  {} dropped  trace {}   ", seen,
                   static_cast<double>(seen - status_ios) / secs,
                   static_cast<double>(bytes - status_bytes) / secs / 1e6, dropped,
                   human_bytes(static_cast<double>(out.file_bytes())));
        status_ios = seen;
        status_bytes = bytes;
        last_status = now;
      }
    }
    backend->poll(0, sink);  // what completed before the stop is still in the buffer
    backend->finish(sink);
    order.release(0, write, true);
    if (const uint64_t d = backend->dropped(); d > dropped) {
      out.add_dropped(d - dropped);
      dropped = d;
    }
    r.unmatched = backend->unmatched();
    out.set_metadata("capture.unmatched_completions", std::to_string(r.unmatched));
    r.uncompleted = backend->uncompleted();
    out.set_metadata("capture.uncompleted_ios", std::to_string(r.uncompleted));
    out.close();
  } catch (const TraceError& e) {
    r.write_failed = true;
    r.stop_reason = e.what();
  }
  if (o.status_line) fmt::print(stderr, "\n");
  r.ios = out.ios();
  r.dropped = dropped;
  r.file_bytes = out.file_bytes();
  r.paths = out.paths();
  return r;
}

}  // namespace iotape::capture

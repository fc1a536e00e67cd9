#include "replay/result_writer.h"

#include <fmt/format.h>
#include <openssl/evp.h>
#include <sys/utsname.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <deque>
#include <fstream>
#include <memory>

#include "format/error.h"
#include "format/version.h"
#include "host/clocks.h"
#include "replay/engine.h"
#include "replay/sorted_runs.h"

namespace iotape::replay {
namespace {

constexpr int64_t kReorderNs = 20'000'000;  // device times: how far the device may reorder submissions

v1::TraceHeader result_header(const Prepared& p, const v1::TraceHeader& source, const std::string& source_sha256,
                              const DeviceTimes* device, const std::string& user_times_reason) {
  v1::TraceHeader h;
  h.set_creator("iotape");
  h.set_creator_version(format::kVersion);
  h.set_source(v1::SOURCE_REPLAY);
  h.set_source_detail(p.options.timing == Timing::kOriginal ? "replay:original" : "replay:afap");
  utsname u{};
  if (::uname(&u) == 0) {
    h.set_host(u.nodename);
    h.set_kernel(u.release);
  }
  h.set_clock(v1::CLOCK_DOMAIN_MONOTONIC);
  timespec rt;
  ::clock_gettime(CLOCK_REALTIME, &rt);
  const int64_t now = host::monotonic_ns();
  h.set_anchor_trace_ns(now);
  h.set_anchor_unix_ns(rt.tv_sec * 1'000'000'000LL + rt.tv_nsec);
  for (const auto& t : p.targets) *h.add_devices() = t.to_device();
  auto& m = *h.mutable_metadata();
  m["replay.source"] = fmt::format("{}", fmt::join(p.options.traces, " "));
  m["replay.source_sha256"] = source_sha256;
  m["replay.options"] = describe(p.options);
  m["replay.targets"] = fmt::format("{}", fmt::join(p.options.targets, " "));
  m["replay.prefill"] = prefill_name(p.options.prefill);
  m["replay.ring"] = describe_ring(p.options.ring);
  m["replay.version"] = format::kVersion;
  if (!p.cpu_idle.empty()) m["host.cpu_idle"] = p.cpu_idle;
  if (device) {
    m["replay.times"] = "device";
    m["replay.times_devices"] = device->describe();
  } else {
    m["replay.times"] = "user";
    if (!user_times_reason.empty()) m["replay.times_reason"] = user_times_reason;
  }
  // The source's phases, as they were: result IOs find theirs by source_index.
  // A replay result's phases count the positions of its own source: not kept.
  const std::string data = describe_data(p.options.data);
  if (source.source() != v1::SOURCE_REPLAY)
    for (const auto& phase : source.phases()) {
      v1::Phase* copy = h.add_phases();
      *copy = phase;
      copy->set_data(data);
    }
  return h;
}

format::WriterOptions result_options() {
  format::WriterOptions wo;
  wo.chunk_ios = 8192;
  wo.zstd_level = 1;
  return wo;
}

// The result trace's record of a finished IO, on the replayer's clock: the
// submission as issue (user times) or as queue time (for DeviceTimes to add
// the device's issue and completion).
format::Io result_io(const Slot& s, bool device_times) {
  format::Io r;
  r.issue_ns = s.issue_ns;
  if (device_times) r.queue_ns = s.issue_ns;
  r.complete_ns = s.complete_ns;
  r.offset = s.io.offset;
  r.length = s.io.length;
  r.device = s.io.target;
  r.op = s.io.op;
  r.flags = s.io.flags;
  r.status = s.status;
  r.source_index = static_cast<int64_t>(s.io.source_index);
  return r;
}

}  // namespace

std::string sha256_files(const std::vector<std::string>& paths) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
  std::vector<char> buf(1 << 20);
  for (const auto& p : paths) {
    std::ifstream in(p, std::ios::binary);
    if (!in) throw format::error_errno(p, "cannot read", errno);
    while (in) {
      in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
      EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<size_t>(in.gcount()));
    }
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  EVP_DigestFinal_ex(ctx.get(), md, &len);
  std::string hex;
  for (unsigned i = 0; i < len; ++i) hex += fmt::format("{:02x}", md[i]);
  return hex;
}

ResultWriter::ResultWriter(const Prepared& p, const v1::TraceHeader& source, const std::string& source_sha256,
                           DeviceTimes* device, const std::string& user_times_reason, Fidelity& fidelity)
    : device_(device),
      fidelity_(fidelity),
      writer_(p.options.result, result_header(p, source, source_sha256, device, user_times_reason), result_options()),
      queues_(std::max<uint32_t>(p.options.threads, 1)),
      thread_([this] { encode(); }) {}

ResultWriter::~ResultWriter() {
  close_queues();
  if (thread_.joinable()) thread_.join();
}

void ResultWriter::set_start(int64_t start_ns) {
  start_ = start_ns;
  writer_.set_metadata("replay.start_ns", std::to_string(start_ns));
}

void ResultWriter::close_queues() {
  for (auto& q : queues_) q.close();
}

void ResultWriter::encode() {
  try {
    std::deque<Pending> pending;
    std::vector<format::Io> ready;
    Held held;
    std::vector<Slot> batch;
    // Per lane, the latest submission it handed over: its IOs still to come
    // were submitted later (INT64_MAX once it has closed its queue).
    std::vector<int64_t> submitted(queues_.size(), INT64_MIN);
    std::vector<Pending> spare;  // pending's emptied buffers: a batch of results is some 400 KiB
    size_t lane = queues_.size() - 1;
    for (bool more = true; more;) {
      more = next_batch(lane, batch, submitted);
      ready.clear();
      if (more) {
        Pending& p = pending.emplace_back();
        if (!spare.empty()) {
          p = std::move(spare.back());
          spare.pop_back();
        }
        std::swap(p.batch, batch);
        p.results.clear();
        p.results.reserve(p.batch.size());
        for (const Slot& s : p.batch) p.results.push_back(result_io(s, device_ != nullptr));
        p.joined = device_ ? 0 : p.batch.size();
      }
      const int64_t through = more ? *std::min_element(submitted.begin(), submitted.end()) : INT64_MAX;
      if (device_) join_through(pending, through, ready);
      // Fidelity takes the IOs in the schedule's order, as they were dealt out.
      for (; !pending.empty() && pending.front().joined == pending.front().batch.size(); pending.pop_front()) {
        Pending& p = pending.front();
        for (size_t i = 0; i < p.batch.size(); ++i)
          fidelity_.add(p.batch[i].io, p.results[i], p.batch[i].issue_ns - start_, p.batch[i].ready_ns - start_,
                        p.batch[i].qd);
        // The replayer's times are final as they come: the results are ready as they are.
        if (!device_ && ready.empty())
          std::swap(ready, p.results);
        else if (!device_)
          ready.insert(ready.end(), p.results.begin(), p.results.end());
        spare.push_back(std::move(p));
      }
      // IOs still to come were submitted after `through`. The device issues
      // an IO after its submission, but may issue IOs in another order than
      // they were submitted.
      append(held, ready, !device_ || through == INT64_MIN || through == INT64_MAX ? through : through - kReorderNs);
    }
  } catch (...) {
    error_ = std::current_exception();
    close_queues();
  }
}

// Device times are joined to IOs in the order they were submitted, across
// the lanes: an IO waits until every lane has handed over the IOs it
// submitted before it. Within a batch IOs were submitted in order, so the
// joined IOs of a batch are a prefix of it. The IOs joined, and the further
// flush requests, are added to `ready`.
void ResultWriter::join_through(std::deque<Pending>& pending, int64_t through, std::vector<format::Io>& ready) {
  joining_.clear();
  for (auto& p : pending)
    for (size_t i = p.joined; i < p.batch.size() && p.batch[i].issue_ns <= through; ++i)
      joining_.push_back({&p.results[i], p.batch[i].issue_ns});
  if (joining_.empty()) return;
  const auto by_submission = [](const auto& a, const auto& b) { return a.second < b.second; };
  // On one lane they come in order: no sort, which would allocate its buffer.
  if (!std::is_sorted(joining_.begin(), joining_.end(), by_submission))
    std::stable_sort(joining_.begin(), joining_.end(), by_submission);
  ios_.clear();
  for (const auto& [r, t] : joining_) ios_.push_back(*r);
  device_->join(ios_);
  for (size_t i = 0; i < joining_.size(); ++i) *joining_[i].first = ios_[i];
  ready.insert(ready.end(), ios_.begin(), ios_.end());
  for (auto& p : pending)
    while (p.joined < p.batch.size() && p.batch[p.joined].issue_ns <= through) ++p.joined;
}

// Lane by lane in the feed's rotation; a lane that has closed its queue has
// no batch left (or stopped early) and is passed over.
bool ResultWriter::next_batch(size_t& lane, std::vector<Slot>& batch, std::vector<int64_t>& submitted) {
  for (size_t tried = 0; tried < queues_.size();) {
    lane = (lane + 1) % queues_.size();
    if (submitted[lane] == INT64_MAX) {
      ++tried;
      continue;
    }
    if (!queues_[lane].pop(batch)) {
      submitted[lane] = INT64_MAX;
      tried = 0;  // the others may still hold batches
      continue;
    }
    for (const Slot& s : batch) submitted[lane] = std::max(submitted[lane], s.issue_ns);
    return true;
  }
  return false;
}

// The result is in issue order: `results` join the IOs held back, which are
// written in issue order up to `through`, past which IOs may still come.
// With device times thousands are held (the device's reordering window, at
// hundreds of thousands of IOPS): only the results and the held IOs they overlap are merged, and
// the written ones' room is reclaimed once it outweighs the rest, rather
// than the whole window sorted and moved at every batch.
void ResultWriter::append(Held& held, std::vector<format::Io>& results, int64_t through) {
  const auto by_issue = [](const format::Io& a, const format::Io& b) { return a.issue_ns < b.issue_ns; };
  const auto after = [&](const format::Io& r) { return r.issue_ns > through; };
  if (!std::is_sorted(results.begin(), results.end(), by_issue)) sort_runs(results.begin(), results.end(), by_issue);
  std::vector<format::Io>& v = held.ios;
  if (held.first == v.size()) {  // nothing held: written from where they are
    const auto cut = std::find_if(results.begin(), results.end(), after);
    for (auto it = results.begin(); it != cut; ++it) writer_.append(*it);
    v.assign(cut, results.end());
    held.first = 0;
    return;
  }
  const size_t old_end = v.size();
  v.insert(v.end(), results.begin(), results.end());
  if (old_end < v.size() && by_issue(v[old_end], v[old_end - 1])) {
    const auto from = std::upper_bound(v.begin() + static_cast<ptrdiff_t>(held.first),
                                       v.begin() + static_cast<ptrdiff_t>(old_end), v[old_end], by_issue);
    std::inplace_merge(from, v.begin() + static_cast<ptrdiff_t>(old_end), v.end(), by_issue);
  }
  size_t i = held.first;
  for (; i < v.size() && !after(v[i]); ++i) writer_.append(v[i]);
  held.first = i;
  if (held.first * 2 >= v.size()) {
    v.erase(v.begin(), v.begin() + static_cast<ptrdiff_t>(held.first));
    held.first = 0;
  }
}

void ResultWriter::finish() {
  close_queues();
  thread_.join();
  if (error_) std::rethrow_exception(error_);
}

void ResultWriter::write_outcome(const Outcome& out, bool prefilled) {
  writer_.set_metadata("replay.interrupted", out.interrupted ? "true" : "false");
  writer_.set_metadata("replay.duration_ns", std::to_string(out.duration_ns));
  writer_.set_metadata("replay.cpu_ns", std::to_string(out.cpu_ns));
  writer_.set_metadata("replay.host_cpu_busy", fmt::format("{:.4f}", out.host_cpu_busy));
  if (out.ios) {
    const auto per_io = [&](int64_t ns) { return fmt::format("{:.0f}", static_cast<double>(ns) / out.ios); };
    writer_.set_metadata("replay.cpu_ns_per_io", per_io(out.cpu_ns));
    writer_.set_metadata("replay.issue_cpu_ns_per_io", per_io(out.issue_cpu_ns));
  }
  std::string busy, waiting;
  for (const ThreadUse& t : out.issue_threads) {
    busy += fmt::format("{}{:.3f}", busy.empty() ? "" : " ", t.busy);
    waiting += fmt::format("{}{:.3f}", waiting.empty() ? "" : " ", t.waiting);
  }
  writer_.set_metadata("replay.completion_polls_hit", std::to_string(out.completion_polls_hit));
  writer_.set_metadata("replay.completion_polls_missed", std::to_string(out.completion_polls_missed));
  writer_.set_metadata("replay.issue_threads", std::to_string(out.issue_threads.size()));
  writer_.set_metadata("replay.issue_thread_utilisation", busy);
  writer_.set_metadata("replay.issue_thread_host_wait", waiting);
  if (!out.device_busy.empty()) writer_.set_metadata("replay.device_busy", describe(out.device_busy));
  writer_.set_metadata("replay.host_limited", out.host_limit.empty() ? "false" : "true");
  if (device_) {
    writer_.set_metadata("replay.device_timed_ios", std::to_string(out.device.timed));
    writer_.set_metadata("replay.device_untimed_ios", std::to_string(out.device.untimed));
    writer_.set_metadata("replay.device_split_ios", std::to_string(out.device.split));
    writer_.set_metadata("replay.device_merged_ios", std::to_string(out.device.merged));
    writer_.set_metadata("replay.device_extra_requests", std::to_string(out.device.extra_requests));
    writer_.set_metadata("replay.device_unclaimed_requests", std::to_string(out.device.unclaimed_requests));
    writer_.set_metadata("replay.device_dropped_events", std::to_string(out.device.dropped));
    writer_.set_metadata("replay.device_uncompleted_requests", std::to_string(out.device.uncompleted));
  }
  for (const auto& [k, v] : out.fidelity.metadata()) writer_.set_metadata(k, v);
  if (prefilled) writer_.set_metadata("replay.prefilled_bytes", std::to_string(out.prefilled_bytes));
  writer_.close();
}

}  // namespace iotape::replay

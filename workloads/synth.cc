#include "workloads/synth.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <queue>
#include <vector>

#include "format/error.h"
#include "format/writer.h"
#include "workloads/rng.h"

namespace iotape::workloads {
namespace {

constexpr int64_t kRampNs = 100;  // between the issues of a segment's ramp

// Draws an index with probability proportional to its weight.
class Picker {
 public:
  explicit Picker(const std::vector<double>& weights) {
    double sum = 0;
    for (double w : weights) cumulative_.push_back(sum += w);
  }
  size_t pick(Rng& rng) const {
    const double x = rng.uniform() * cumulative_.back();
    return std::min<size_t>(std::upper_bound(cumulative_.begin(), cumulative_.end(), x) - cumulative_.begin(),
                            cumulative_.size() - 1);
  }

 private:
  std::vector<double> cumulative_;
};

// Segment depths and their weights for a phase (see synth.h).
struct DepthMix {
  std::vector<uint64_t> depths;
  std::vector<double> weights;
};

DepthMix depth_mix(const Phase& p) {
  uint64_t deepest = 0;
  for (const auto& s : p.qd) deepest = std::max(deepest, s.high);
  if (p.qd_run == 0) return {{deepest}, {1.0}};
  std::vector<double> wanted(deepest + 1, 0.0);
  for (const auto& s : p.qd)
    for (uint64_t q = s.low; q <= s.high; ++q) wanted[q] += s.weight / static_cast<double>(s.high - s.low + 1);
  DepthMix mix;
  double deeper = 0;  // segments deeper than q: each gives one IO at depth q
  const double run = static_cast<double>(p.qd_run);
  for (uint64_t q = deepest; q >= 1; --q) {
    const double segments = std::max(0.0, (wanted[q] - deeper) / run);
    if (segments > 0) {
      mix.depths.push_back(q);
      mix.weights.push_back(segments);
    }
    deeper += segments;
  }
  return mix;
}

// Where a phase's IOs lie in the trace (v1::Phase's first_index .. end_ns).
struct PhaseSpan {
  uint64_t first_index = 0;
  uint64_t ios = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

// The parameters of a phase as the header records them (0 where it has several values).
v1::Phase phase_record(const Profile& prof, const Phase& p, const PhaseSpan& at) {
  v1::Phase r;
  r.set_name(p.name);
  r.set_pattern(prof.name);
  r.set_first_index(at.first_index);
  r.set_ios(at.ios);
  r.set_start_ns(at.start_ns);
  r.set_end_ns(at.end_ns);
  if (p.sizes.size() == 1 && p.sizes[0].low == p.sizes[0].high) r.set_block_size(p.sizes[0].low);
  const DepthMix mix = depth_mix(p);
  if (mix.depths.size() == 1) r.set_queue_depth(static_cast<uint32_t>(mix.depths[0]));
  r.set_read_share(p.read_share);
  // As issue_one aligns: 4 KiB when every size the phase draws is a multiple of it.
  bool whole_pages = true;
  for (const auto& s : p.sizes) whole_pages &= s.low == s.high && s.low % 4096 == 0;
  r.set_alignment(whole_pages ? 4096 : 512);
  r.set_sequential(p.sequential);
  r.set_threads(p.threads);
  return r;
}

class Generator {
 public:
  // Without `out` the IOs are only counted: a dry run that finds the phases' spans.
  Generator(const Profile& prof, uint64_t span, uint64_t seed, format::TraceWriter* out)
      : prof_(prof), span_(span), rng_(seed), out_(out) {}

  // Plays `phase` until `ios` more IOs were written or trace time reaches `until_ns`.
  void play(const Phase& phase, uint64_t ios, int64_t until_ns) {
    phase_ = &phase;
    spans_.push_back({written_, 0, 0, 0});
    std::vector<double> size_weights;
    for (const auto& s : phase.sizes) size_weights.push_back(s.weight);
    const Picker sizes(size_weights);
    const DepthMix mix = depth_mix(phase);
    const Picker depths(mix.weights);
    zone_ = span_ / phase.threads / 4096 * 4096;
    cursor_.assign(phase.threads * 2, 0);
    for (uint32_t t = 0; t < phase.threads; ++t) cursor_[2 * t] = cursor_[2 * t + 1] = t * zone_;
    const uint64_t end_ios = ios > UINT64_MAX - written_ ? UINT64_MAX : written_ + ios;
    auto more = [&](int64_t issue) { return written_ < end_ios && issue < until_ns; };

    while (more(now_)) {
      const uint64_t depth = mix.depths[depths.pick(rng_)];
      const uint64_t run = phase.qd_run == 0 ? UINT64_MAX : phase.qd_run;
      std::priority_queue<int64_t, std::vector<int64_t>, std::greater<>> outstanding;
      int64_t drained = now_;
      auto emit = [&](int64_t issue) {
        const int64_t done = issue_one(issue, depth, sizes);
        outstanding.push(done);
        drained = std::max(drained, done);
      };
      for (uint64_t i = 0; i < depth && more(now_ + static_cast<int64_t>(i) * kRampNs); ++i)
        emit(now_ + static_cast<int64_t>(i) * kRampNs);
      for (uint64_t i = 1; i < run && outstanding.size() == depth && more(outstanding.top()); ++i) {
        const int64_t issue = outstanding.top();
        outstanding.pop();
        emit(issue);
      }
      now_ = drained;
      if (phase.idle_probability > 0 && rng_.chance(phase.idle_probability)) {
        const double gap = -static_cast<double>(phase.idle_mean_ns) * std::log(1.0 - rng_.uniform());
        now_ += std::min<int64_t>(static_cast<int64_t>(gap), phase.idle_max_ns);
      }
    }
  }

  uint64_t written() const { return written_; }
  int64_t now() const { return now_; }
  const std::vector<PhaseSpan>& spans() const { return spans_; }

 private:
  int64_t issue_one(int64_t issue, uint64_t depth, const Picker& sizes) {
    const Phase& p = *phase_;
    const Share& s = p.sizes[sizes.pick(rng_)];
    const uint64_t length = s.low + 512 * rng_.below((s.high - s.low) / 512 + 1);
    const uint32_t thread = static_cast<uint32_t>(written_ % p.threads);
    const bool read = rng_.chance(p.read_share);
    uint64_t& cursor = cursor_[2 * thread + (read ? 0 : 1)];
    const uint64_t zone_start = thread * zone_;
    format::Io io;
    io.issue_ns = issue;
    io.op = read ? format::Op::kRead : format::Op::kWrite;
    io.length = length;
    if (rng_.chance(p.sequential) && cursor + length <= zone_start + zone_) {
      io.offset = cursor;
    } else {
      const uint64_t align = length % 4096 == 0 ? 4096 : 512;
      io.offset = zone_start + align * rng_.below((zone_ - length) / align + 1);
    }
    cursor = io.offset + length;
    // The ramp must not outlast the first IO, or the depth would not build up.
    const int64_t service = std::max(prof_.device.service_ns(length, depth), static_cast<int64_t>(depth) * kRampNs + 1);
    io.complete_ns = issue + service;
    io.pid = thread + 1;
    io.comm = "synth";
    if (out_) out_->append(io);
    PhaseSpan& at = spans_.back();
    if (at.ios++ == 0) at.start_ns = io.issue_ns;
    at.end_ns = std::max(at.end_ns, io.complete_ns);
    ++written_;
    return io.complete_ns;
  }

  const Profile& prof_;
  uint64_t span_;
  Rng rng_;
  format::TraceWriter* out_;
  const Phase* phase_ = nullptr;
  std::vector<PhaseSpan> spans_;
  uint64_t zone_ = 0;
  std::vector<uint64_t> cursor_;  // [thread][read, write]: where a sequential IO continues
  uint64_t written_ = 0;
  int64_t now_ = 0;
};

}  // namespace

SynthResult synthesize(const Profile& prof, const SynthOptions& o, const std::string& out) {
  const uint64_t span = o.span.value_or(prof.span);
  for (const auto& p : prof.phases)
    for (const auto& s : p.sizes)
      if (s.high * p.threads > span)
        throw format::UsageError(fmt::format("{}: span {} is too small for {} IOs of {} bytes", prof.name, span,
                                             p.threads > 1 ? fmt::format("{} zones of", p.threads) : "", s.high));
  uint64_t ios = prof.ios;
  int64_t duration = prof.duration_ns;
  if (o.ios) ios = *o.ios, duration = 0;
  if (o.duration_ns) duration = *o.duration_ns, ios = 0;
  if (ios == 0 && duration <= 0) throw format::UsageError("the length must be positive");

  v1::TraceHeader h;
  h.set_source(v1::SOURCE_SYNTH);
  h.set_clock(v1::CLOCK_DOMAIN_RELATIVE);
  v1::Device* d = h.add_devices();
  d->set_name("synth");
  d->set_size_bytes(span);
  d->set_logical_block_size(512);
  d->set_physical_block_size(4096);
  // One metadata key only: protobuf writes map entries in an order that
  // changes from run to run, which would break byte-identical output.
  (*h.mutable_metadata())["workload"] = prof.name;
  h.set_source_detail(fmt::format("synth:{} seed={} span={} {}", prof.name, o.seed, span,
                                  ios ? fmt::format("ios={}", ios) : fmt::format("duration_ns={}", duration)));

  auto generate = [&](format::TraceWriter* writer) {
    Generator gen(prof, span, o.seed, writer);
    double total_weight = 0;
    for (const auto& p : prof.phases) total_weight += p.weight;
    double before = 0;  // weight of the phases already played
    for (const auto& p : prof.phases) {
      const double share_end = (before += p.weight) / total_weight;
      // Budgets from the cumulative share, so rounding never loses an IO or a nanosecond.
      if (ios) {
        const auto end = static_cast<uint64_t>(std::llround(share_end * static_cast<double>(ios)));
        gen.play(p, end - std::min(end, gen.written()), INT64_MAX);
      } else {
        gen.play(p, UINT64_MAX, static_cast<int64_t>(std::llround(share_end * static_cast<double>(duration))));
      }
    }
    return gen;
  };
  // The header, written before the IOs, records where every phase lies: a
  // dry run (the same seed gives the same IOs) finds out.
  const Generator dry = generate(nullptr);
  for (size_t i = 0; i < prof.phases.size(); ++i) *h.add_phases() = phase_record(prof, prof.phases[i], dry.spans()[i]);
  format::TraceWriter writer(out, h);
  const Generator gen = generate(&writer);
  writer.close();
  return {gen.written(), gen.now()};
}

}  // namespace iotape::workloads

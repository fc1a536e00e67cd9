#include "workloads/review.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>

#include "analysis/report.h"
#include "analysis/review_document.h"
#include "analysis/review_page.h"
#include "format/error.h"
#include "format/reader.h"
#include "format/version.h"
#include "host/block_device.h"
#include "host/clocks.h"
#include "replay/cpu_load.h"
#include "replay/replayer.h"
#include "replay/target.h"
#include "units/units.h"
#include "workloads/bench.h"
#include "workloads/closed_loop_run.h"
#include "workloads/drive_identity.h"
#include "workloads/file_level.h"
#include "workloads/profile.h"
#include "workloads/rng.h"
#include "workloads/synth.h"

namespace iotape::workloads {
namespace {

namespace fs = std::filesystem;
using nlohmann::ordered_json;
constexpr int64_t kSecond = 1'000'000'000;
constexpr uint64_t kAlign = 1 << 20;  // the span every test uses: the target's size in whole MiB
constexpr double kNominalBps = 500e6;  // estimates of size-bound parts
// Estimates of the Storage Bench replays per IO, idle gaps included (Light
// idles more often and longer), measured on loop devices.
constexpr double kHeavySecondsPerIo = 0.0006, kLightSecondsPerIo = 0.003;

// The suite's lengths: the full suite follows the reviews' own (a minute per
// seq-steps step, three minutes per AnandTech random test, 2000 s of
// consistency); --quick keeps every test and every chart at a few seconds each.
// fresh-vs-used: `fresh_s` per closed-loop measurement, `fresh_ios` per
// replay, the used state reached in rounds of `used_round_s` for at most
// `used_max_s`.
struct Scale {
  double seq_s, random_bs_s, response_s, database_s, server_s, anand_random_s, anand_seq_s, align_s;
  int64_t consistency_s, consistency_window_s, trim_dirty_s;
  uint64_t heavy_ios, light_ios, fresh_ios;
  double fresh_s, used_round_s, used_max_s;
};
Scale scale_of(bool quick) {
  if (quick) return {0.3, 0.2, 1, 0.4, 1, 0.75, 0.75, 2, 8, 4, 4, 4000, 3000, 2000, 0.5, 0.5, 3};
  return {60, 20, 60, 10, 30, 180, 60, 60, 2000, 600, 600, 500000, 200000, 100000, 60, 60, 1800};
}

// One closed-loop phase of a sweep test.
struct Spec {
  std::string name;
  double read_share = 0;
  std::vector<Share> sizes;
  double sequential = 0;
  uint32_t qd = 1;
  uint64_t alignment = 4096;  // random offsets are multiples of it ...
  uint64_t misalign = 0;      // ... plus this
  replay::DataPattern data;
  double seconds = 1;
};

uint64_t max_size(const Spec& s) {
  uint64_t m = 0;
  for (const auto& x : s.sizes) m = std::max(m, x.high);
  return m;
}

// The one block size of a phase, 0 for a mix.
uint64_t block_size(const Spec& s) {
  return s.sizes.size() == 1 && s.sizes[0].low == s.sizes[0].high ? s.sizes[0].low : 0;
}

Spec from_profile(const Phase& p, double seconds) {
  Spec s;
  s.name = p.name;
  s.read_share = p.read_share;
  s.sizes = p.sizes;
  s.sequential = p.sequential;
  s.qd = static_cast<uint32_t>(p.qd.empty() ? 1 : p.qd.front().low);
  bool whole_pages = true;
  for (const auto& x : p.sizes) whole_pages &= x.low % 4096 == 0 && x.high % 4096 == 0;
  s.alignment = whole_pages ? 4096 : 512;
  s.seconds = seconds;
  return s;
}

Spec fixed(std::string name, double read_share, uint64_t size, uint32_t qd, double seconds, double sequential = 0) {
  Spec s;
  s.name = std::move(name);
  s.read_share = read_share;
  s.sizes = {{size, size, 1}};
  s.sequential = sequential;
  s.qd = qd;
  s.alignment = size % 4096 == 0 ? 4096 : 512;
  s.seconds = seconds;
  return s;
}

// The IOs of a phase: sizes drawn by weight (uniform in a range, in 512 B
// steps), reads by the read share, a sequential IO continuing where the last
// one of its direction ended, others at random aligned offsets.
NextIo spec_ios(const Spec& s, uint64_t span, uint64_t seed) {
  struct State {
    Rng rng;
    uint64_t next[2] = {0, 0};
  };
  auto st = std::make_shared<State>(State{Rng(seed)});
  double total = 0;
  for (const auto& x : s.sizes) total += x.weight;
  return [=](replay::ReplayIo& io) {
    double pick = st->rng.uniform() * total;
    const Share* sh = &s.sizes.back();
    for (const auto& x : s.sizes)
      if ((pick -= x.weight) < 0) {
        sh = &x;
        break;
      }
    const uint64_t length = sh->low + st->rng.below((sh->high - sh->low) / 512 + 1) * 512;
    const bool read = st->rng.chance(s.read_share);
    io = {};
    io.op = read ? format::Op::kRead : format::Op::kWrite;
    io.length = length;
    uint64_t& next = st->next[read ? 0 : 1];
    if (st->rng.chance(s.sequential) && next + length <= span) {
      io.offset = next;
    } else if (s.sequential >= 1) {
      io.offset = 0;  // a sequential phase starts over at the end of the span
    } else {
      const uint64_t slots = (span - length - s.misalign) / s.alignment + 1;
      io.offset = st->rng.below(slots) * s.alignment + s.misalign;
    }
    next = io.offset + length;
    return true;
  };
}

// A sweep's headline figures, from its phases (the "phases" of its result).
using SweepHeadline = ordered_json (*)(const ordered_json& phases);

// Thrown inside a test when the stop flag ended it early.
struct Interrupted {};

ordered_json headline(const std::string& figure, double value, const std::string& unit, bool higher_is_better) {
  return to_json(analysis::ReviewHeadline{figure, value, unit, higher_is_better});
}

// How much worse the used drive does, in % of the fresh figure (negative: better).
double drop_pct(double fresh, double used, bool higher_is_better) {
  if (!(fresh > 0)) return 0;
  return 100.0 * (higher_is_better ? fresh - used : used - fresh) / fresh;
}

const ordered_json* find_phase(const ordered_json& phases, const std::string& name) {
  for (const auto& p : phases)
    if (p["name"] == name) return &p;
  return nullptr;
}

// A headline figure, `key` of one phase (NaN when the phase is missing),
// marked when that phase's closed loop was limited by the host.
ordered_json phase_headline(const std::string& figure, const ordered_json* phase, const char* key,
                            const std::string& unit, bool higher_is_better) {
  analysis::ReviewHeadline h{figure, phase ? (*phase)[key].get<double>() : NAN, unit, higher_is_better};
  h.host_limited = phase && phase->value("host_limited", false);
  return to_json(h);
}

// The phase with the best `key` of those with that read share.
const ordered_json* best_of(const ordered_json& phases, double read_pct, const char* key) {
  const ordered_json* best = nullptr;
  for (const auto& p : phases)
    if (p["read_pct"].get<double>() == read_pct && (!best || p[key].get<double>() > (*best)[key].get<double>()))
      best = &p;
  return best;
}

// IOPS at the deepest queue of the phases with that read share.
ordered_json iops_at_top_qd(const ordered_json& phases, double read) {
  ordered_json h = ordered_json::array();
  const ordered_json* top = nullptr;
  for (const auto& p : phases)
    if (p["read_pct"].get<double>() == read && (!top || p["queue_depth"] > (*top)["queue_depth"])) top = &p;
  if (top)
    h.push_back(phase_headline(fmt::format("IOPS at QD{}, {:g}% reads", (*top)["queue_depth"].get<int>(), read), top,
                               "iops", "IOPS", true));
  return h;
}

ordered_json seq_steps_headline(const ordered_json& phases) {
  return ordered_json::array(
      {phase_headline("sequential read, best block size", best_of(phases, 100, "MBps"), "MBps", "MB/s", true),
       phase_headline("sequential write, best block size", best_of(phases, 0, "MBps"), "MBps", "MB/s", true)});
}

ordered_json random_bs_headline(const ordered_json& phases) {
  return ordered_json::array(
      {phase_headline("random read 4K QD4", find_phase(phases, "random read 4K"), "MBps", "MB/s", true),
       phase_headline("random write 4K QD4", find_phase(phases, "random write 4K"), "MBps", "MB/s", true)});
}

ordered_json response_time_headline(const ordered_json& phases) {
  return ordered_json::array({phase_headline("512 B read at QD1, mean", find_phase(phases, "read 512 B QD1"),
                                             "mean_latency_us", "\xc2\xb5s", false),
                              phase_headline("512 B write at QD1, mean", find_phase(phases, "write 512 B QD1"),
                                             "mean_latency_us", "\xc2\xb5s", false)});
}

ordered_json database_headline(const ordered_json& phases) { return iops_at_top_qd(phases, 50); }

// web-server, file-server: at the read share of their phases.
ordered_json server_headline(const ordered_json& phases) {
  return iops_at_top_qd(phases, phases.front()["read_pct"].get<double>());
}

// A figure per phase.
ordered_json anandtech_headline(const ordered_json& phases) {
  ordered_json h = ordered_json::array();
  for (const auto& p : phases) h.push_back(phase_headline(p["name"], &p, "MBps", "MB/s", true));
  return h;
}

ordered_json alignment_headline(const ordered_json& phases) {
  ordered_json h = ordered_json::array();
  for (const auto& p : phases) h.push_back(phase_headline(p["name"], &p, "iops", "IOPS", true));
  return h;
}

void write_json(const std::string& path, const ordered_json& j) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << analysis::review_json_text(j);
    if (!f) throw format::error_errno(tmp, "cannot write", errno);
  }
  fs::rename(tmp, path);
}

ordered_json read_json(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw format::error_errno(path, "cannot open", errno);
  try {
    return ordered_json::parse(std::string(std::istreambuf_iterator<char>(f), {}));
  } catch (const nlohmann::json::exception& x) {
    throw format::InputError(path + ": not JSON: " + x.what());
  }
}

struct ReviewTestDef;

class Review {
 public:
  Review(const ReviewOptions& o, const std::atomic<bool>& stop) : o_(o), stop_(stop), scale_(scale_of(o.quick)) {}

  // Opens the target for writing under the safety rules; the span every test uses.
  void open() {
    targets_.clear();
    targets_.push_back(replay::open_writable_target(o_.target, o_.force));
    if (o_.ring.iopoll) replay::require_poll_queues(targets_);
    span_ = targets_[0].size / kAlign * kAlign;
    if (span_ == 0) throw format::UsageError(o_.target + ": smaller than 1 MiB");
  }
  const replay::Target& target() const { return targets_.at(0); }
  uint32_t threads(uint32_t qd) const { return closed_loop_threads(o_.threads, qd); }
  std::string label() const { return o_.label.empty() ? target().name : o_.label; }

  // Runs one test into `dir`; its figures (result.json without the parts
  // every test has).
  ordered_json run(const ReviewTestDef& test, const std::string& dir);

  // The tests' bodies: the `run` of their definitions (kTests below).
  ordered_json seq_steps() { return sweep(profile_specs("seq-steps", scale_.seq_s, {})); }
  ordered_json random_bs() { return sweep(random_bs_specs()); }
  ordered_json response_time() {
    return sweep({fixed("read 512 B QD1", 1, 512, 1, scale_.response_s),
                  fixed("write 512 B QD1", 0, 512, 1, scale_.response_s)});
  }
  ordered_json database() { return sweep(profile_specs("database", scale_.database_s, database_filter())); }
  ordered_json server(const std::string& profile) { return sweep(profile_specs(profile, scale_.server_s, {})); }
  ordered_json anandtech() { return sweep(anandtech_specs()); }
  ordered_json storage_heavy() { return storage_bench("storage-heavy", scale_.heavy_ios); }
  ordered_json storage_light() { return storage_bench("storage-light", scale_.light_ios); }
  ordered_json consistency() { return bench("consistency"); }
  ordered_json trim() { return bench("trim"); }

  using Filter = std::function<bool(const Phase&)>;

  std::vector<Spec> profile_specs(const std::string& profile, double seconds, const Filter& keep) {
    std::vector<Spec> out;
    for (const auto& p : load_profile(profile).phases)
      if (!keep || keep(p)) out.push_back(from_profile(p, seconds));
    return out;
  }

  // --quick plays the read shares and depths its charts need: 0, 30, 50, 70
  // and 100% reads at QD 1, 4, 16, 64 and 256.
  Filter database_filter() const {
    if (!o_.quick) return {};
    return [](const Phase& p) {
      const int read = static_cast<int>(std::lround(p.read_share * 100));
      const uint64_t qd = p.qd.empty() ? 0 : p.qd.front().low;
      return (read == 0 || read == 30 || read == 50 || read == 70 || read == 100) &&
             (qd == 1 || qd == 4 || qd == 16 || qd == 64 || qd == 256);
    };
  }

  std::vector<Spec> random_bs_specs() const {
    std::vector<Spec> out;
    for (const char* dir : {"read", "write"})
      for (uint64_t bs = 512; bs <= (1 << 20); bs *= 2)
        out.push_back(fixed(fmt::format("random {} {}", dir, units::format_size(bs)), dir[0] == 'r' ? 1 : 0, bs, 4,
                            scale_.random_bs_s));
    return out;
  }

  // AnandTech's set: 4 KiB random at QD3 and QD32 (writes with incompressible
  // and with compressible data), then 128 KiB sequential at QD1.
  std::vector<Spec> anandtech_specs() const {
    std::vector<Spec> out;
    for (const char* profile : {"rand-4k-qd3", "rand-4k-qd32"}) {
      const Profile p = load_profile(profile);
      const uint32_t qd = static_cast<uint32_t>(p.phases.front().qd.front().low);
      out.push_back(fixed(fmt::format("4K random read QD{}", qd), 1, 4096, qd, scale_.anand_random_s));
      out.push_back(fixed(fmt::format("4K random write QD{}", qd), 0, 4096, qd, scale_.anand_random_s));
      Spec c = fixed(fmt::format("4K random write QD{} compressible", qd), 0, 4096, qd, scale_.anand_random_s);
      c.data = replay::parse_data("compress:50");
      out.push_back(c);
    }
    out.push_back(fixed("128K sequential read QD1", 1, 128 << 10, 1, scale_.anand_seq_s, 1));
    out.push_back(fixed("128K sequential write QD1", 0, 128 << 10, 1, scale_.anand_seq_s, 1));
    return out;
  }

  // Runs the phases, each into a trace of its own, then joins them into the
  // test's trace (DIR/`trace`.iot, by default the test's name) with the
  // phases in its header (`iotape report --by phase`).
  ordered_json sweep(const std::vector<Spec>& specs, const std::string& trace_name = {}) {
    ordered_json phases = ordered_json::array();
    std::vector<std::string> parts;
    std::vector<v1::Phase> records;
    uint64_t first = 0;
    int64_t at = 0;
    for (size_t i = 0; i < specs.size(); ++i) {
      const Spec& s = specs[i];
      parts.push_back(fmt::format("{}/phase{}.iot", dir_, i));
      PhaseTrace trace(parts.back(), target(), test_, s.name, label());
      const PhaseStats r =
          run_closed_loop(targets_, s.qd, max_size(s), spec_ios(s, span_, o_.seed + i),
                          static_cast<int64_t>(s.seconds * kSecond), &trace, s.data, &stop_, threads(s.qd), o_.ring);
      trace.close();
      if (stop_) throw Interrupted{};
      v1::Phase rec;
      rec.set_name(s.name);
      rec.set_pattern(test_);
      rec.set_first_index(first);
      rec.set_ios(r.ios);
      rec.set_start_ns(at);
      rec.set_end_ns(at + r.duration_ns);
      rec.set_block_size(block_size(s));
      rec.set_queue_depth(s.qd);
      rec.set_read_share(s.read_share);
      rec.set_alignment(static_cast<uint32_t>(s.misalign ? s.misalign : s.alignment));
      rec.set_data(replay::describe_data(s.data));
      rec.set_sequential(s.sequential);
      rec.set_threads(1);
      records.push_back(rec);
      first += r.ios;
      at += r.duration_ns + kSecond;  // a second between phases keeps them apart in time
      phases.push_back({{"name", s.name},
                        {"read_pct", s.read_share * 100},
                        {"block_size", block_size(s)},
                        {"queue_depth", s.qd},
                        {"sequential_pct", s.sequential * 100},
                        {"alignment", s.alignment},
                        {"offset", s.misalign},
                        {"data", replay::describe_data(s.data)},
                        {"duration_s", r.duration_ns / 1e9},
                        {"ios", r.ios},
                        {"bytes", r.bytes},
                        {"iops", r.iops()},
                        {"MBps", r.MBps()},
                        {"mean_latency_us", r.latency.mean() / 1e3},
                        {"p99_latency_us", r.latency.percentile(99) / 1e3},
                        {"issue_threads", r.issue_threads},
                        {"issue_thread_busy_pct", 100 * r.issue_thread.busy},
                        {"issue_thread_host_wait_pct", 100 * r.issue_thread.waiting},
                        {"device_busy_pct", 100 * r.device_busy},
                        {"host_share_pct", 100 * r.host_share()},
                        {"host_limited", r.host_limited()}});
    }
    const std::string trace = join(parts, records, trace_name.empty() ? test_ : trace_name);
    ordered_json out;
    out["trace"] = fs::path(trace).filename().string();
    out["phases"] = phases;
    out["headline"] = sweep_headline_ ? sweep_headline_(phases) : ordered_json::array();
    return out;
  }

  std::string join(const std::vector<std::string>& parts, const std::vector<v1::Phase>& records,
                   const std::string& name) {
    const std::string path = dir_ + "/" + name + ".iot";
    v1::TraceHeader h;
    {
      format::TraceReader first(parts.front());
      h = first.header();
    }
    h.set_source_detail("review:" + test_);
    (*h.mutable_metadata())["bench.phase"] = "all";
    for (const auto& r : records) *h.add_phases() = r;
    format::TraceWriter out(path, h);
    uint64_t index = 0;
    for (size_t i = 0; i < parts.size(); ++i) {
      format::TraceReader in(parts[i]);
      format::Io io;
      while (in.next(io)) {
        io.issue_ns += records[i].start_ns();
        if (io.complete_ns != format::kNoTime) io.complete_ns += records[i].start_ns();
        io.source_index = static_cast<int64_t>(index++);
        out.append(io);
      }
    }
    out.close();
    for (const auto& p : parts) fs::remove(p);
    return path;
  }

  // The alignment pair: 4 KiB random writes at 4 KiB-aligned offsets and at
  // offsets 512 B past them. A device whose logical block is larger than
  // 512 B cannot take the second; that is recorded, not faked.
  ordered_json alignment() {
    Spec aligned = fixed("4K random write, 4K-aligned", 0, 4096, 3, scale_.align_s);
    Spec off = aligned;
    off.name = "4K random write, 512 B-aligned";
    off.misalign = 512;
    if (target().logical_block > 512) {
      ordered_json out = sweep({aligned});
      out["note"] = fmt::format("512 B-aligned writes are impossible: the logical block size is {} bytes",
                                target().logical_block);
      return out;
    }
    return sweep({aligned, off});
  }

  // Both passes, fresh (the target discarded, mke2fs discarding too) and
  // used (the target filled, file systems made without discarding), with
  // the same sets. --quick: a 32 MiB image, 20 MP3s of 2 MiB, 500 small
  // files. Full: an image and an MP3 set of an eighth of a partition each
  // (at most 4 GiB, 300 files of 4 MiB), 5000 small files.
  ordered_json file_level() {
    FileSets sets{32 * kAlign, 20, 2 * kAlign, 500};
    if (!o_.quick) {
      const uint64_t eighth = span_ / 2 / 8 / kAlign * kAlign;
      sets = {std::min<uint64_t>(eighth, 4ULL << 30), static_cast<uint32_t>(std::min<uint64_t>(300, eighth / (4 * kAlign))),
              4 * kAlign, 5000};
    }
    ordered_json out, passes = ordered_json::object();
    for (const FileLevelPass& pass : {FileLevelPass{"fresh", true}, FileLevelPass{"used", false}}) {
      ordered_json prepared = pass.discard ? ordered_json{{"discard", discard()}}
                                           : ordered_json{{"fill", fill("file-used-fill.iot")}};
      targets_.clear();  // the partitions are mounted: nothing may hold the disk exclusively
      {
        const replay::Target t = replay::open_target(o_.target, false, o_.force);
        prepared.update(run_file_level(t, sets, dir_, pass, o_.record, stop_));
      }
      open();
      if (stop_) throw Interrupted{};
      passes[pass.name] = std::move(prepared);
    }
    // A row per step: both passes' figures and the drop.
    ordered_json steps = ordered_json::array(), head = ordered_json::array();
    const ordered_json& fresh = passes["fresh"]["steps"];
    const ordered_json& used = passes["used"]["steps"];
    for (size_t i = 0; i < fresh.size() && i < used.size(); ++i) {
      auto figures = [](const ordered_json& s) {
        return ordered_json{{"MBps", s["MBps"]}, {"duration_s", s["duration_s"]}, {"trace", s["trace"]}};
      };
      const double f = fresh[i]["MBps"], u = used[i]["MBps"];
      const std::string name = fresh[i]["name"];
      steps.push_back({{"name", name}, {"files", fresh[i]["files"]}, {"bytes", fresh[i]["bytes"]},
                       {"fresh", figures(fresh[i])}, {"used", figures(used[i])}, {"drop_pct", drop_pct(f, u, true)}});
      head.push_back(headline(name + ", fresh", f, "MB/s", true));
      head.push_back(headline(name + ", used", u, "MB/s", true));
    }
    for (auto& [name, p] : passes.items()) p.erase("steps");
    out["steps"] = steps;
    out["passes"] = passes;
    out["headline"] = head;
    out["sets"] = {{"iso_bytes", sets.iso_bytes}, {"mp3_files", sets.mp3_files}, {"mp3_bytes", sets.mp3_bytes},
                   {"program_files", sets.program_files}};
    out["recorded"] = static_cast<bool>(o_.record);
    return out;
  }

  // Discards the whole span: the state a secure erase leaves. Returns {bytes, duration_s}.
  ordered_json discard() {
    const int64_t t0 = host::monotonic_ns();
    discard_all(targets_, span_);
    return {{"bytes", span_}, {"duration_s", (host::monotonic_ns() - t0) / 1e9}};
  }

  // One sequential pass of 128 KiB writes at QD32 over the span, into
  // DIR/`trace`. Returns {trace, bytes, duration_s, MBps}.
  ordered_json fill(const std::string& trace_name) {
    uint64_t at = 0;
    PhaseTrace trace(dir_ + "/" + trace_name, target(), test_, "fill", label());
    const PhaseStats r = run_closed_loop(
        targets_, 32, 128 << 10,
        [&](replay::ReplayIo& io) {
          if (at >= span_) return false;
          io = {};
          io.op = format::Op::kWrite;
          io.offset = at;
          io.length = 128 << 10;
          at += io.length;
          return true;
        },
        INT64_MAX / 2, &trace, {}, &stop_, threads(32), o_.ring);
    trace.close();
    if (stop_) throw Interrupted{};
    return {{"trace", trace_name}, {"bytes", r.bytes}, {"duration_s", r.duration_ns / 1e9}, {"MBps", r.MBps()}};
  }

  // Discards everything, then fills the target sequentially so the read
  // tests that follow read written blocks.
  ordered_json secure_state() {
    ordered_json out;
    out["discard"] = discard();
    out["fill"] = fill("fill.iot");
    out["headline"] = ordered_json::array({headline("discard of the whole drive", out["discard"]["duration_s"], "s", false),
                                           headline("sequential fill 128K QD32", out["fill"]["MBps"], "MB/s", true)});
    return out;
  }

  // TechReport's fresh vs used, per test. Fresh: the whole target discarded;
  // the write tests run on it as it is, then a sequential fill gives the read
  // and mixed tests written blocks to read (a drive answers reads of
  // discarded blocks without touching its flash). Used: then 4 KiB random
  // writes at QD32 until steady state (bench precondition's rounds), and
  // every test again, in the same order.
  ordered_json fresh_vs_used() {
    struct Measurement {
      std::string name, unit;
      ordered_json fresh, used;
    };
    std::vector<Measurement> m;
    auto record = [&](const std::string& pass, const std::string& name, const std::string& unit, double value,
                      const std::string& trace, bool host_limited) {
      auto it = std::find_if(m.begin(), m.end(), [&](const auto& x) { return x.name == name; });
      if (it == m.end()) it = m.insert(m.end(), Measurement{name, unit, {}, {}});
      (pass == "fresh" ? it->fresh : it->used) = {{"value", value}, {"trace", trace}, {"host_limited", host_limited}};
    };
    auto closed_loop = [&](const std::string& pass, const std::string& part, const std::vector<Spec>& specs) {
      const std::string trace = pass + "-" + part;
      const ordered_json r = sweep(specs, trace);
      // Reviews give sequential tests in MB/s, random ones in IOPS.
      for (const auto& p : r["phases"]) {
        const bool sequential = p["sequential_pct"].get<double>() >= 100;
        record(pass, p["name"].get<std::string>(), sequential ? "MB/s" : "IOPS",
               p[sequential ? "MBps" : "iops"].get<double>(), trace + ".iot", p["host_limited"].get<bool>());
      }
    };
    auto replays = [&](const std::string& pass) {
      for (const char* profile : {"storage-light", "storage-heavy"}) {
        const ordered_json r = storage_bench(profile, scale_.fresh_ios, pass + "-" + profile);
        record(pass, std::string(profile) + " average data rate", "MB/s", r["MBps"]["combined"].get<double>(),
               r["trace"].get<std::string>(), r["host_limited"].get<bool>());
      }
    };
    const std::vector<Spec> writes = {fixed("4K random write QD32", 0, 4096, 32, scale_.fresh_s),
                                      fixed("128K sequential write QD1", 0, 128 << 10, 1, scale_.fresh_s, 1)};
    std::vector<Spec> reads = {fixed("4K random read QD32", 1, 4096, 32, scale_.fresh_s),
                               fixed("128K sequential read QD1", 1, 128 << 10, 1, scale_.fresh_s, 1)};
    for (auto db : profile_specs("database", scale_.fresh_s, [](const Phase& p) {
           return std::lround(p.read_share * 100) == 70 && !p.qd.empty() && p.qd.front().low == 16;
         })) {
      db.name = "database 8K random, 70% reads, QD16";
      reads.push_back(db);
    }
    ordered_json out;
    out["discard"] = discard();
    closed_loop("fresh", "writes", writes);
    out["fill"] = fill("fill.iot");
    closed_loop("fresh", "reads", reads);
    replays("fresh");

    PhaseTrace trace(dir_ + "/used-state.iot", target(), test_, "used state", label());
    const int64_t t0 = host::monotonic_ns();
    const auto state = random_writes_to_steady_state(
        targets_, span_, 32, static_cast<int64_t>(scale_.used_round_s * kSecond),
        static_cast<int64_t>(scale_.used_max_s * kSecond), o_.seed, &trace, &stop_, threads(32), o_.ring);
    trace.close();
    if (stop_) throw Interrupted{};
    out["used_state"] = {{"trace", "used-state.iot"},
                         {"duration_s", (host::monotonic_ns() - t0) / 1e9},
                         {"round_s", scale_.used_round_s},
                         {"iops_per_round", state.iops_per_round},
                         {"steady_state_reached", state.steady.reached}};
    closed_loop("used", "writes", writes);
    closed_loop("used", "reads", reads);
    replays("used");

    ordered_json list = ordered_json::array(), head = ordered_json::array();
    for (const auto& x : m) {
      const double fresh = x.fresh["value"], used = x.used["value"];
      const double drop = drop_pct(fresh, used, true);
      list.push_back({{"name", x.name}, {"unit", x.unit}, {"higher_is_better", true}, {"fresh", fresh},
                      {"used", used}, {"drop_pct", drop}, {"fresh_trace", x.fresh["trace"]},
                      {"used_trace", x.used["trace"]}});
      head.push_back(phase_headline(x.name + ", fresh", &x.fresh, "value", x.unit, true));
      head.push_back(phase_headline(x.name + ", used", &x.used, "value", x.unit, true));
      head.push_back(headline(x.name + ", drop", drop, "%", false));
    }
    out["measurements"] = list;
    out["headline"] = head;
    return out;
  }

  // A Storage Bench replay: the profile synthesized over the target, played
  // as fast as possible with its idle gaps capped at 25 ms, timed at the
  // device where BPF allows.
  // Files: DIR/`name`-workload.iot and DIR/`name`.iot; by default
  // workload.iot and result.iot.
  ordered_json storage_bench(const std::string& profile, uint64_t ios, const std::string& name = {}) {
    const std::string workload_name = name.empty() ? "workload.iot" : name + "-workload.iot";
    const std::string result_name = name.empty() ? "result.iot" : name + ".iot";
    SynthOptions so;
    so.seed = o_.seed;
    so.span = span_;
    so.ios = ios;
    const std::string workload = dir_ + "/" + workload_name;
    synthesize(load_profile(profile), so, workload);
    targets_.clear();  // the replay opens the target itself, exclusively
    replay::ReplayOptions ro;
    ro.traces = {workload};
    ro.targets = {o_.target};
    ro.result = dir_ + "/" + result_name;
    ro.timing = replay::Timing::kAfap;
    ro.fit = replay::Fit::kWrap;
    ro.allow_write = true;
    ro.force = o_.force;
    replay::Outcome outcome;
    {
      auto prepared = replay::prepare_replay(ro);
      outcome = replay::run_replay(prepared, stop_);
    }
    open();
    if (outcome.interrupted) throw Interrupted{};
    format::TraceReader reader(ro.result);
    const auto rep = analysis::analyse(reader);
    const uint64_t rd = rep.op(format::Op::kRead).bytes, wr = rep.op(format::Op::kWrite).bytes;
    ordered_json out;
    out["workload"] = {{"profile", profile}, {"ios", ios}, {"trace", workload_name}};
    out["trace"] = result_name;
    out["times"] = outcome.device_times ? "device" : "user";
    if (!outcome.device_times) out["times_reason"] = outcome.user_times_reason;
    out["ios"] = outcome.ios;
    out["errors"] = outcome.errors;
    out["host_limited"] = !outcome.host_limit.empty();
    if (!outcome.host_limit.empty()) out["host_limit"] = outcome.host_limit;
    out["busy_s"] = rep.busy_ns / 1e9;
    out["MBps"] = {{"read", analysis::data_rate_MBps(rd, rep.read_busy_ns)},
                   {"write", analysis::data_rate_MBps(wr, rep.write_busy_ns)},
                   {"combined", analysis::data_rate_MBps(rd + wr, rep.busy_ns)}};
    const auto lat = rep.data_latency();
    out["mean_latency_us"] = lat.mean() / 1e3;
    out["p99_latency_us"] = lat.percentile(99) / 1e3;
    const uint64_t data_ios = rep.op(format::Op::kRead).ios + rep.op(format::Op::kWrite).ios;
    ordered_json sizes = ordered_json::object();
    for (size_t i = 0; i < analysis::SizeMix::kBucketNames.size(); ++i)
      sizes[std::string(analysis::SizeMix::kBucketNames[i])] =
          rep.sizes.ios() ? 100.0 * rep.sizes.buckets()[i] / rep.sizes.ios() : 0.0;
    out["breakdown"] = {
        {"reads_pct", data_ios ? 100.0 * rep.op(format::Op::kRead).ios / data_ios : 0.0},
        {"sequential_pct", rep.sequential.ios() ? 100.0 * rep.sequential.sequential() / rep.sequential.ios() : 0.0},
        {"mean_queue_depth", rep.queue_depth.mean()},
        {"size_pct", sizes}};
    analysis::ReviewHeadline rate{"average data rate", out["MBps"]["combined"], "MB/s", true},
        busy{"disk busy time", out["busy_s"], "s", false};
    rate.host_limited = busy.host_limited = !outcome.host_limit.empty();
    out["headline"] = ordered_json::array({to_json(rate), to_json(busy)});
    return out;
  }

  // consistency, trim: `iotape bench` at the suite's lengths.
  ordered_json bench(const std::string& name) {
    BenchOptions b;
    b.target = o_.target;
    b.out_dir = dir_;
    b.allow_write = true;
    b.force = o_.force;
    b.seed = o_.seed;
    b.label = label();
    b.duration_ns = (name == "consistency" ? scale_.consistency_s : scale_.trim_dirty_s) * kSecond;
    b.window_ns = scale_.consistency_window_s * kSecond;
    b.stop = &stop_;
    targets_.clear();
    ordered_json s = run_bench(name, b);
    open();
    if (stop_) throw Interrupted{};
    // Paths inside DIR, so the directory can move.
    const std::function<void(ordered_json&)> relative = [&](ordered_json& j) {
      for (auto it = j.begin(); it != j.end(); ++it) {
        if (it.key() == "trace" && it->is_string()) *it = fs::path(it->get<std::string>()).filename().string();
        else if (it->is_object()) relative(*it);
        else if (it->is_array())
          for (auto& e : *it)
            if (e.is_object()) relative(e);
      }
    };
    relative(s);
    ordered_json h = ordered_json::array();
    if (name == "consistency") {
      h.push_back(headline("steady state, mean", s["steady_window"]["mean_iops"], "IOPS", true));
    } else {
      for (const auto& p : s["phases"]) h.push_back(headline("128K sequential write, " + p["name"].get<std::string>(),
                                                             p["MBps"], "MB/s", true));
    }
    s["headline"] = h;
    return s;
  }

  const ReviewOptions& o_;
  const std::atomic<bool>& stop_;
  Scale scale_;
  std::vector<replay::Target> targets_;
  uint64_t span_ = 0;
  std::string dir_, test_;
  SweepHeadline sweep_headline_ = nullptr;  // the running test's
};

// What an estimate depends on: the suite's lengths and the span.
struct EstimateInput {
  const Scale& s;
  uint64_t bytes;  // the span
  bool quick;
  double fill;     // one sequential pass over the span at the nominal rate
};

// One test of the suite: everything the runner, the plan, the headline and
// the page know of it.
struct ReviewTestDef {
  const char* name;
  const char* title;
  bool writes;  // write-heavy: write amplification is measured around it
  analysis::ReviewSection section;
  double (*estimate)(const EstimateInput& in);  // seconds
  ordered_json (*run)(Review& r);               // the figures; throws Interrupted
  SweepHeadline sweep_headline;                 // a sweep's headline figures; nullptr: the test makes its own
};

// The suite, in its order.
const ReviewTestDef kTests[] = {
    {"secure-state", "Secure state: discard everything, then a sequential fill", true,
     analysis::ReviewSection::kSecureState, [](const EstimateInput& in) { return 1 + in.fill; },
     [](Review& r) { return r.secure_state(); }, nullptr},
    {"seq-steps", "Sequential read and write vs block size, QD4", true, analysis::ReviewSection::kSequentialBlockSizes,
     [](const EstimateInput& in) { return 18 * in.s.seq_s; }, [](Review& r) { return r.seq_steps(); },
     seq_steps_headline},
    {"random-bs", "Random read and write vs block size, QD4", true, analysis::ReviewSection::kRandomBlockSizes,
     [](const EstimateInput& in) { return 24 * in.s.random_bs_s; }, [](Review& r) { return r.random_bs(); },
     random_bs_headline},
    {"response-time", "Response time: 512 B random at QD1", false, analysis::ReviewSection::kResponseTime,
     [](const EstimateInput& in) { return 2 * in.s.response_s; }, [](Review& r) { return r.response_time(); },
     response_time_headline},
    {"database", "Database pattern: 8 KiB random, IOPS vs queue depth and read share", true,
     analysis::ReviewSection::kDatabase, [](const EstimateInput& in) { return (in.quick ? 25 : 99) * in.s.database_s; },
     [](Review& r) { return r.database(); }, database_headline},
    {"web-server", "Web-server pattern: IOPS vs queue depth", false, analysis::ReviewSection::kServer,
     [](const EstimateInput& in) { return 4 * in.s.server_s; }, [](Review& r) { return r.server("web-server"); },
     server_headline},
    {"file-server", "File-server pattern: IOPS vs queue depth", true, analysis::ReviewSection::kServer,
     [](const EstimateInput& in) { return 4 * in.s.server_s; }, [](Review& r) { return r.server("file-server"); },
     server_headline},
    {"anandtech", "4 KiB random at QD3 and QD32, 128 KiB sequential at QD1", true, analysis::ReviewSection::kAnandTech,
     [](const EstimateInput& in) { return 6 * in.s.anand_random_s + 2 * in.s.anand_seq_s; },
     [](Review& r) { return r.anandtech(); }, anandtech_headline},
    {"storage-heavy", "Storage Bench Heavy replay", true, analysis::ReviewSection::kStorageBench,
     [](const EstimateInput& in) { return in.s.heavy_ios * kHeavySecondsPerIo; },
     [](Review& r) { return r.storage_heavy(); }, nullptr},
    {"storage-light", "Storage Bench Light replay", true, analysis::ReviewSection::kStorageBench,
     [](const EstimateInput& in) { return in.s.light_ios * kLightSecondsPerIo; },
     [](Review& r) { return r.storage_light(); }, nullptr},
    {"alignment", "Alignment: 4 KiB random write, 4 KiB- vs 512 B-aligned", true, analysis::ReviewSection::kAlignment,
     [](const EstimateInput& in) { return 2 * in.s.align_s; }, [](Review& r) { return r.alignment(); },
     alignment_headline},
    {"consistency", "Performance consistency: 4 KiB random write QD32 after a fill", true,
     analysis::ReviewSection::kConsistency,
     [](const EstimateInput& in) { return in.fill + static_cast<double>(in.s.consistency_s); },
     [](Review& r) { return r.consistency(); }, nullptr},
    {"trim", "TRIM: 128 KiB sequential write clean, dirty and after TRIM", true, analysis::ReviewSection::kTrim,
     [](const EstimateInput& in) { return 3 * in.fill + static_cast<double>(in.s.trim_dirty_s) + 2; },
     [](Review& r) { return r.trim(); }, nullptr},
    // Five closed-loop tests and two replays per pass, a fill, and the used
    // state at its longest.
    {"fresh-vs-used", "Fresh vs used: each test on a discarded drive and on a used one", true,
     analysis::ReviewSection::kFreshVsUsed,
     [](const EstimateInput& in) {
       return 1 + in.fill + 2 * (5 * in.s.fresh_s + in.s.fresh_ios * (kLightSecondsPerIo + kHeavySecondsPerIo)) +
              in.s.used_max_s;
     },
     [](Review& r) { return r.fresh_vs_used(); }, nullptr},
    // Per pass: mkfs, then each set written once and read or copied three
    // times; the used pass fills the target first.
    {"file-level", "File-level tests, fresh and used: an ISO image, MP3s and a program tree on ext4", true,
     analysis::ReviewSection::kFileLevel,
     [](const EstimateInput& in) {
       const double pass = in.quick ? 3
                                    : 30 + 4 * (std::min<double>(in.bytes / 8.0, 4.0 * (1 << 30)) +
                                                std::min(in.bytes / 8.0, 300.0 * 4 * kAlign)) / kNominalBps;
       return 1 + 2 * pass + in.fill;
     },
     [](Review& r) { return r.file_level(); }, nullptr},
};

const ReviewTestDef& info(const std::string& name) {
  for (const auto& t : kTests)
    if (name == t.name) return t;
  throw format::UsageError("unknown review test '" + name + "' (iotape review --help lists them)");
}

ordered_json Review::run(const ReviewTestDef& test, const std::string& dir) {
  dir_ = dir;
  test_ = test.name;
  sweep_headline_ = test.sweep_headline;
  return test.run(*this);
}

std::string minutes(double s) {
  return s >= 60 ? fmt::format("{}m{:02}s", static_cast<int>(s) / 60, static_cast<int>(s) % 60)
                 : fmt::format("{:.0f}s", s);
}

}  // namespace

const std::vector<std::string>& review_test_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& t : kTests) v.push_back(t.name);
    return v;
  }();
  return names;
}

std::vector<ReviewTest> review_plan(const ReviewOptions& o, uint64_t target_bytes) {
  for (const auto& t : o.tests) info(t);
  const Scale s = scale_of(o.quick);
  const uint64_t bytes = target_bytes / kAlign * kAlign;
  const EstimateInput in{s, bytes, o.quick, static_cast<double>(bytes) / kNominalBps};
  std::vector<ReviewTest> plan;
  for (const auto& t : kTests)
    if (o.tests.empty() || std::find(o.tests.begin(), o.tests.end(), t.name) != o.tests.end())
      plan.push_back({t.name, t.title, t.estimate(in)});
  return plan;
}

std::string describe_review_plan(const std::vector<ReviewTest>& plan, const ReviewOptions& o) {
  std::string out = fmt::format("{} suite on {}:\n", o.quick ? "quick" : "full", o.target);
  double total = 0;
  for (size_t i = 0; i < plan.size(); ++i) {
    out += fmt::format("{:2}. {:<14} {:>8}  {}\n", i + 1, plan[i].name, minutes(plan[i].estimated_s), plan[i].title);
    total += plan[i].estimated_s;
  }
  out += fmt::format("total {} (estimated; fills and replays at a nominal 500 MB/s)\n", minutes(total));
  return out;
}

std::vector<analysis::ReviewPageTest> review_page_tests() {
  std::vector<analysis::ReviewPageTest> v;
  for (const auto& t : kTests) v.push_back({t.name, t.section});
  return v;
}

namespace {
analysis::ReviewSuiteOptions review_suite_options(const ReviewOptions& o) { return {o.target, o.quick, o.label, o.seed}; }
}  // namespace

nlohmann::ordered_json review_options_json(const ReviewOptions& o) { return to_json(review_suite_options(o)); }

namespace {

// Runs one test into `dir`, measuring around it the CPU load, the device's
// IOs and, for a write-heavy test where the drive reports them, the bytes
// written to the host and media. Throws Interrupted.
analysis::ReviewTestResult measure_test(Review& review, const ReviewTestDef& test, const std::string& dir,
                                        const WriteAmplificationSource& wa) {
  const bool measure_wa = wa.available && test.writes;
  std::pair<double, double> wa_before;
  if (measure_wa) wa_before = host_and_media_bytes_written(wa);
  const auto ios_before = completed_device_ios(review.target());
  const replay::CpuLoad cpu;
  const int64_t t0 = host::monotonic_ns();
  analysis::ReviewTestResult r;
  r.figures = review.run(test, dir);
  r.test = test.name;
  r.title = test.title;
  r.duration_s = (host::monotonic_ns() - t0) / 1e9;
  r.cpu.host_busy_pct = 100 * cpu.host_busy();
  r.cpu.iotape_cpu_s = cpu.process_cpu_ns() / 1e9;
  if (const auto ios_after = completed_device_ios(review.target());
      ios_before && ios_after && *ios_after > *ios_before) {
    r.cpu.device_ios = *ios_after - *ios_before;
    r.cpu.iotape_cpu_us_per_io = cpu.process_cpu_ns() / 1e3 / static_cast<double>(*ios_after - *ios_before);
  }
  if (measure_wa) {
    const auto after = host_and_media_bytes_written(wa);
    const double host = after.first - wa_before.first, media = after.second - wa_before.second;
    r.write_amplification = analysis::ReviewWriteAmplification{host, media, host > 0 ? media / host : 0.0};
  }
  return r;
}

// review.json and the page from every finished test, in suite order.
void publish_review(const std::string& out_dir, analysis::ReviewDocument& doc) {
  doc.tests.clear();
  for (const auto& t : kTests) {
    const std::string result = out_dir + "/tests/" + t.name + "/result.json";
    if (fs::exists(result)) doc.tests.push_back(analysis::review_test_result_from_json(read_json(result)));
  }
  if (!doc.test("file-level")) doc.file_level = "not run: not among the tests run so far (--tests)";
  else doc.file_level.reset();
  write_json(out_dir + "/review.json", to_json(doc));
  std::ofstream page(out_dir + "/review.html", std::ios::binary | std::ios::trunc);
  page << analysis::review_html({doc}, review_page_tests());
  if (!page) throw format::error_errno(out_dir + "/review.html", "cannot write", errno);
}

}  // namespace

ReviewOutcome run_review(const ReviewOptions& o, const std::atomic<bool>& stop,
                         const std::function<void(const ReviewProgress&)>& progress) {
  if (!o.allow_write) throw format::UsageError(o.target + ": the review writes the whole target: give --allow-write");
  const int64_t begin = host::monotonic_ns();
  const std::string review_json = o.out_dir + "/review.json";
  const ordered_json options = review_options_json(o);
  if (fs::exists(review_json)) {
    const ordered_json before = read_json(review_json);
    for (const auto& [key, value] : options.items())
      if (!before.contains("options") || before["options"].value(key, ordered_json()) != value)
        throw format::UsageError(fmt::format(
            "{}: made with other options ({}: {} there, {} here): rerun with the same options to resume, or give "
            "another directory",
            o.out_dir, key, before.contains("options") ? before["options"].value(key, ordered_json()).dump() : "none",
            value.dump()));
  }
  fs::create_directories(o.out_dir + "/tests");
  Review review(o, stop);
  review.open();
  const auto plan = review_plan(o, review.target().size);
  const WriteAmplificationSource wa = write_amplification_source(review.target());
  analysis::ReviewDocument doc;
  doc.iotape_version = format::kVersion;
  doc.options = review_suite_options(o);
  doc.drive = describe_drive(review.target(), o.label);
  doc.write_amplification = {wa.available, wa.available ? std::string() : wa.reason};
  auto publish = [&] { publish_review(o.out_dir, doc); };

  ReviewOutcome out;
  double remaining = 0;
  for (const auto& t : plan) remaining += t.estimated_s;
  auto report = [&](size_t i, bool finished, bool skipped) {
    if (!progress) return;
    ReviewProgress p;
    p.index = i;
    p.count = plan.size();
    p.test = plan[i].name;
    p.finished = finished;
    p.skipped = skipped;
    p.elapsed_s = (host::monotonic_ns() - begin) / 1e9;
    p.remaining_s = remaining;
    progress(p);
  };
  for (size_t i = 0; i < plan.size(); ++i) {
    const ReviewTest& t = plan[i];
    const std::string dir = o.out_dir + "/tests/" + t.name;
    if (fs::exists(dir + "/result.json")) {
      remaining -= t.estimated_s;
      ++out.skipped;
      report(i, true, true);
      continue;
    }
    if (stop) {
      out.interrupted = true;
      break;
    }
    report(i, false, false);
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::optional<analysis::ReviewTestResult> result;
    try {
      result = measure_test(review, info(t.name), dir, wa);
    } catch (const Interrupted&) {
      fs::remove_all(dir);
      out.interrupted = true;
      break;
    }
    write_json(dir + "/result.json", to_json(*result));
    remaining -= t.estimated_s;
    ++out.run;
    publish();
    report(i, true, false);
  }
  publish();
  out.duration_s = (host::monotonic_ns() - begin) / 1e9;
  return out;
}

}  // namespace iotape::workloads

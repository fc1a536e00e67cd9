// IssueOrder against the obvious model of it: each poll's IOs sorted stably
// by issue time, and on every release the run with the earliest front (the
// earlier run on equal times) emitting first, as long as its front is before
// the cutoff or too many IOs are held. And against what a capture needs:
// released at the oldest outstanding issue time, nothing goes out late.
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "capture/issue_order.h"

using namespace iotape;

namespace {

// What the model and IssueOrder emit: issue time and arrival number.
using Emitted = std::vector<std::pair<int64_t, int64_t>>;

class ModelOrder {
 public:
  explicit ModelOrder(size_t max_ios) : max_ios_(max_ios) {}
  void add(const format::Io& io) {
    open_.push_back(io);
    ++held_;
  }
  void release(int64_t before_ns, Emitted* out, bool drain = false) {
    if (!open_.empty()) {
      std::stable_sort(open_.begin(), open_.end(),
                       [](const format::Io& a, const format::Io& b) { return a.issue_ns < b.issue_ns; });
      runs_.push_back({std::move(open_), 0});
      open_.clear();
    }
    const int64_t cutoff = drain ? INT64_MAX : before_ns;
    for (;;) {
      Run* best = nullptr;
      for (Run& r : runs_)
        if (r.next < r.ios.size() && (!best || r.ios[r.next].issue_ns < best->ios[best->next].issue_ns)) best = &r;
      if (!best) return;
      const format::Io& io = best->ios[best->next];
      if (io.issue_ns >= cutoff && held_ <= max_ios_) return;
      out->emplace_back(io.issue_ns, io.source_index);
      ++best->next;
      --held_;
    }
  }

 private:
  struct Run {
    std::vector<format::Io> ios;
    size_t next;
  };
  size_t max_ios_;
  size_t held_ = 0;
  std::vector<format::Io> open_;
  std::vector<Run> runs_;
};

// Polls of IOs as a capture delivers them: completions of IOs issued every
// `gap_ns`, `latency` apart from their issue (so the disorder within a poll
// grows with the spread of `latency`), `poll_ns` of completions per poll.
// Issue times are multiples of `tick_ns`, so equal times happen across polls.
template <typename Latency>
std::vector<std::vector<format::Io>> completion_polls(size_t n, int64_t gap_ns, int64_t tick_ns, int64_t poll_ns,
                                                      Latency latency, std::mt19937_64& rng) {
  std::vector<format::Io> ios(n);
  for (size_t i = 0; i < n; ++i) {
    ios[i].issue_ns = (static_cast<int64_t>(i) * gap_ns + static_cast<int64_t>(rng() % gap_ns)) / tick_ns * tick_ns;
    ios[i].complete_ns = ios[i].issue_ns + latency(rng);
  }
  std::stable_sort(ios.begin(), ios.end(),
                   [](const format::Io& a, const format::Io& b) { return a.complete_ns < b.complete_ns; });
  std::vector<std::vector<format::Io>> polls(1);
  int64_t poll_end = ios.empty() ? 0 : ios[0].complete_ns + poll_ns;
  for (const format::Io& io : ios) {
    while (io.complete_ns >= poll_end) {
      polls.emplace_back();
      poll_end += poll_ns;
    }
    polls.back().push_back(io);
  }
  int64_t arrival = 0;
  for (auto& p : polls)
    for (format::Io& io : p) io.source_index = arrival++;
  return polls;
}

// Feeds `polls` to IssueOrder and to the model, releasing after each poll
// what was issued `window_ns` before its last completion, and checks both
// emit the same IOs in the same order.
void check_against_model(const std::vector<std::vector<format::Io>>& polls, int64_t window_ns, size_t max_ios) {
  capture::IssueOrder order(max_ios);
  ModelOrder model(max_ios);
  Emitted got, want;
  const observer::IoSink emit = [&](const format::Io& io) { got.emplace_back(io.issue_ns, io.source_index); };
  size_t total = 0;
  for (const auto& poll : polls) {
    for (const format::Io& io : poll) {
      order.add(io);
      model.add(io);
    }
    total += poll.size();
    const int64_t before = (poll.empty() ? 0 : poll.back().complete_ns) - window_ns;
    order.release(before, emit);
    model.release(before, &want);
    REQUIRE(got.size() == want.size());
    REQUIRE(order.held() == total - got.size());
  }
  order.release(0, emit, true);
  model.release(0, &want, true);
  REQUIRE(order.held() == 0);
  REQUIRE(got.size() == total);
  REQUIRE(got == want);
}

int64_t uniform(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1));
}

// For each poll, the oldest issue time among the IOs that complete after it
// (INT64_MAX when none): what a back end reports as outstanding then.
std::vector<int64_t> outstanding_after(const std::vector<std::vector<format::Io>>& polls) {
  std::vector<int64_t> out(polls.size(), INT64_MAX);
  int64_t oldest = INT64_MAX;
  for (size_t p = polls.size(); p-- > 0;) {
    out[p] = oldest;
    for (const format::Io& io : polls[p]) oldest = std::min(oldest, io.issue_ns);
  }
  return out;
}

}  // namespace

TEST_CASE("IssueOrder, drained at the end, emits a stable sort of every IO by issue time", "[issue_order]") {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 20; ++round) {
    const bool nearly_sorted = round % 2 == 0;
    auto latency = [&](std::mt19937_64& r) {
      return nearly_sorted ? uniform(r, 60'000, 190'000) : uniform(r, 0, 50'000'000);
    };
    const size_t n = 1 + rng() % 60'000;
    const auto polls = completion_polls(n, 4'000, round % 4 == 0 ? 1 : 10'000, uniform(rng, 10'000, 20'000'000),
                                        latency, rng);
    capture::IssueOrder order(SIZE_MAX);
    Emitted got, want;
    const observer::IoSink emit = [&](const format::Io& io) { got.emplace_back(io.issue_ns, io.source_index); };
    std::vector<format::Io> all;
    for (const auto& poll : polls) {
      for (const format::Io& io : poll) order.add(io);
      all.insert(all.end(), poll.begin(), poll.end());
      order.release(INT64_MIN, emit);
      REQUIRE(got.empty());
    }
    order.release(0, emit, true);
    std::stable_sort(all.begin(), all.end(),
                     [](const format::Io& a, const format::Io& b) { return a.issue_ns < b.issue_ns; });
    for (const format::Io& io : all) want.emplace_back(io.issue_ns, io.source_index);
    INFO("round " << round << ", " << n << " IOs in " << polls.size() << " polls");
    REQUIRE(got == want);
  }
}

TEST_CASE("IssueOrder releases as the model does: cutoff, held-IO limit, ties across polls", "[issue_order]") {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 40; ++round) {
    INFO("round " << round);
    const int kind = round % 4;
    auto latency = [&](std::mt19937_64& r) -> int64_t {
      switch (kind) {
        case 0: return uniform(r, 60'000, 190'000);                                      // QD32-like
        case 1: return uniform(r, 0, 30'000'000);                                        // no order at all
        case 2: return r() % 100 ? uniform(r, 50'000, 90'000) : uniform(r, 0, 9'000'000);  // a few stragglers
        default: return 0;                                                               // already sorted
      }
    };
    const auto polls = completion_polls(1 + rng() % 40'000, uniform(rng, 100, 10'000), round % 3 == 0 ? 1 : 20'000,
                                        uniform(rng, 5'000, 5'000'000), latency, rng);
    const int64_t window = uniform(rng, 0, 20'000'000);
    const size_t max_ios = round % 5 == 0 ? 1 + rng() % 3'000 : SIZE_MAX;
    check_against_model(polls, window, max_ios);
  }
}

// As the recorder uses it: after each poll, release what was issued before the
// oldest IO still to come, or before `cap` ago when that one is older still.
TEST_CASE("IssueOrder released at the oldest outstanding issue time writes nothing late", "[issue_order]") {
  std::mt19937_64 rng(13);
  for (int round = 0; round < 30; ++round) {
    INFO("round " << round);
    const bool stragglers = round % 2 == 1;
    auto latency = [&](std::mt19937_64& r) -> int64_t {
      if (stragglers && r() % 200 == 0) return uniform(r, 10'000'000, 400'000'000);  // retried, stuck
      return uniform(r, 20'000, 3'000'000);
    };
    const auto polls = completion_polls(1 + rng() % 30'000, uniform(rng, 1'000, 20'000), round % 3 == 0 ? 1 : 5'000,
                                        uniform(rng, 1'000'000, 100'000'000), latency, rng);
    const std::vector<int64_t> outstanding = outstanding_after(polls);
    const int64_t cap = uniform(rng, 20'000'000, 200'000'000);
    capture::IssueOrder order(SIZE_MAX);
    std::vector<format::Io> got;
    const observer::IoSink emit = [&](const format::Io& io) { got.push_back(io); };
    std::vector<format::Io> all;
    for (size_t p = 0; p < polls.size(); ++p) {
      for (const format::Io& io : polls[p]) order.add(io);
      all.insert(all.end(), polls[p].begin(), polls[p].end());
      if (polls[p].empty()) continue;
      const int64_t cutoff = std::max(outstanding[p], polls[p].back().complete_ns - cap);
      order.release(cutoff, emit);
      // What stays held was issued, so completed, at or after the cutoff.
      if (order.held() > 0) REQUIRE(order.earliest_completion() >= cutoff);
    }
    order.release(0, emit, true);
    REQUIRE(got.size() == all.size());
    // Late: issued before an IO written earlier. Only an IO in flight longer than the cap may be.
    int64_t newest = INT64_MIN;
    uint64_t late = 0, late_within_cap = 0;
    for (const format::Io& io : got) {
      if (io.issue_ns < newest) {
        ++late;
        late_within_cap += io.complete_ns - io.issue_ns <= cap;
      }
      newest = std::max(newest, io.issue_ns);
    }
    CHECK(late_within_cap == 0);
    if (!stragglers) CHECK(late == 0);
  }
}

TEST_CASE("IssueOrder's earliest completion covers every held IO, the open run too", "[issue_order]") {
  capture::IssueOrder order(SIZE_MAX);
  const observer::IoSink ignore = [](const format::Io&) {};
  CHECK(order.earliest_completion() == format::kNoTime);
  auto add = [&](int64_t issue, int64_t complete) {
    format::Io io;
    io.issue_ns = issue;
    io.complete_ns = complete;
    order.add(io);
  };
  add(10, 500);
  add(20, 90);
  add(30, format::kNoTime);  // recorded without a completion
  order.seal();
  CHECK(order.earliest_completion() == 90);
  order.release(25, ignore);  // 10 and 20 go out
  CHECK(order.held() == 1);
  CHECK(order.earliest_completion() == format::kNoTime);
  add(40, 70);  // not sealed yet
  CHECK(order.earliest_completion() == 70);
  order.release(0, ignore, true);
  CHECK(order.earliest_completion() == format::kNoTime);
}

TEST_CASE("IssueOrder keeps process names after the caller's buffer changes", "[issue_order]") {
  capture::IssueOrder order(SIZE_MAX);
  std::vector<std::string> got;
  const observer::IoSink emit = [&](const format::Io& io) { got.emplace_back(io.comm); };
  char event[16];  // reused for every IO, as a capture's event buffer is
  const char* names[] = {"fio", "fio", "kworker/0:1H", "", "fio", "fi", "fio2", "fio2", "fio"};
  int64_t t = 0;
  for (const char* name : names) {
    std::snprintf(event, sizeof event, "%s", name);
    format::Io io;
    io.issue_ns = t++;
    io.comm = std::string_view(event, std::strlen(event));
    order.add(io);
    std::memset(event, 'z', sizeof event);
  }
  order.release(0, emit, true);
  CHECK(got == std::vector<std::string>(std::begin(names), std::end(names)));
}

// Not run by default: `issue_order_tests "[.bench]"`. 2M IOs at 250K IOPS,
// QD32-like completion order, a poll every 100 ms, released at the oldest
// outstanding issue time.
TEST_CASE("IssueOrder CPU time per IO", "[.bench]") {
  std::mt19937_64 rng(3);
  auto polls = completion_polls(2'000'000, 4'000, 1, 100'000'000,
                                [](std::mt19937_64& r) { return uniform(r, 64'000, 192'000); }, rng);
  // As from a capture: each name in its own event buffer, mostly one process.
  std::vector<std::array<char, 16>> events;
  events.reserve(2'000'000);
  for (auto& poll : polls)
    for (format::Io& io : poll) {
      auto& e = events.emplace_back();
      std::strncpy(e.data(), rng() % 50 ? "fio" : "kworker/1:1H", e.size());
      io.comm = std::string_view(e.data(), std::strlen(e.data()));
    }
  std::vector<double> per_io;
  long faults = 0;
  const std::vector<int64_t> outstanding = outstanding_after(polls);
  for (int rep = 0; rep < 5; ++rep) {
    capture::IssueOrder order(size_t{1} << 20);
    int64_t sum = 0;
    const observer::IoSink emit = [&](const format::Io& io) { sum += io.issue_ns; };
    timespec t0, t1;
    rusage r0, r1;
    getrusage(RUSAGE_THREAD, &r0);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    for (size_t p = 0; p < polls.size(); ++p) {
      for (const format::Io& io : polls[p]) order.add(io);
      order.release(outstanding[p], emit);
    }
    order.release(0, emit, true);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
    getrusage(RUSAGE_THREAD, &r1);
    faults += r1.ru_minflt - r0.ru_minflt;
    REQUIRE(sum != 0);
    per_io.push_back(((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 2e6);
  }
  std::sort(per_io.begin(), per_io.end());
  std::printf("IssueOrder: %.1f ns per IO (median of 5; %.1f .. %.1f), %.1f page faults per 1000 IOs\n", per_io[2],
              per_io[0], per_io[4], faults / 5 / 2000.0);
}

#include "capture/issue_order.h"

#include <algorithm>
#include <limits>

namespace iotape::capture {
namespace {

// Sorts by issue time, keeping arrival order among equal times. A poll's IOs
// come in completion order, which is issue order but for IOs that overtook a
// few others, so insertion sort moves each IO a few places at most; a run far
// from sorted goes to std::stable_sort once the moves pass a few per IO.
void sort_run(std::vector<format::Io>& ios) {
  const size_t budget = 8 * ios.size();
  size_t moves = 0;
  for (size_t i = 1; i < ios.size(); ++i) {
    if (ios[i].issue_ns >= ios[i - 1].issue_ns) continue;
    const format::Io io = ios[i];
    size_t j = i;
    do {
      ios[j] = ios[j - 1];
    } while (--j > 0 && io.issue_ns < ios[j - 1].issue_ns);
    ios[j] = io;
    moves += i - j;
    if (moves > budget) {
      // The prefix is sorted stably and the rest is in arrival order, so this
      // gives what sorting the arrival order would.
      std::stable_sort(ios.begin(), ios.end(),
                       [](const format::Io& a, const format::Io& b) { return a.issue_ns < b.issue_ns; });
      return;
    }
  }
}

}  // namespace

IssueOrder::IssueOrder(size_t max_ios) : max_ios_(max_ios) {}

void IssueOrder::add(const format::Io& io) {
  open_.push_back(io);
  open_.back().comm = names_.intern(io.comm);
  ++held_;
}

void IssueOrder::seal() {
  if (open_.empty()) return;
  sort_run(open_);
  const size_t size = open_.size();
  runs_.push_back(Run{std::move(open_), 0, sealed_++});
  std::push_heap(runs_.begin(), runs_.end(), after);
  open_.clear();
  if (!spare_.empty()) {
    open_ = std::move(spare_.back());
    spare_.pop_back();
  }
  open_.reserve(size);  // polls are alike: the next one fits without regrowing
}

void IssueOrder::release(int64_t before_ns, const observer::IoSink& emit, bool drain) {
  seal();
  const int64_t cutoff = drain ? std::numeric_limits<int64_t>::max() : before_ns;
  while (!runs_.empty()) {
    // The top run emits until its front goes after the next run's front: the
    // earlier of the top's two children.
    Run& top = runs_.front();
    const Run* rival = runs_.size() > 1 ? &runs_[1] : nullptr;
    if (runs_.size() > 2 && after(runs_[1], runs_[2])) rival = &runs_[2];
    for (;;) {
      const format::Io& io = top.ios[top.next];
      if (io.issue_ns >= cutoff && held_ <= max_ios_) return;
      emit(io);
      --held_;
      if (++top.next == top.ios.size() || (rival && after(top, *rival))) break;
    }
    std::pop_heap(runs_.begin(), runs_.end(), after);
    Run& run = runs_.back();
    if (run.next < run.ios.size()) {
      std::push_heap(runs_.begin(), runs_.end(), after);
      continue;
    }
    run.ios.clear();
    spare_.push_back(std::move(run.ios));
    runs_.pop_back();
  }
}

int64_t IssueOrder::earliest_completion() const {
  int64_t earliest = format::kNoTime;
  const auto consider = [&](const format::Io& io) {
    if (io.has_complete() && (earliest == format::kNoTime || io.complete_ns < earliest)) earliest = io.complete_ns;
  };
  for (const format::Io& io : open_) consider(io);
  for (const Run& run : runs_)
    for (size_t i = run.next; i < run.ios.size(); ++i) consider(run.ios[i]);
  return earliest;
}

}  // namespace iotape::capture

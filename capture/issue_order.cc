#include "capture/issue_order.h"

#include <algorithm>
#include <limits>

namespace iotape::capture {

IssueOrder::IssueOrder(int64_t window_ns, size_t max_ios) : window_ns_(window_ns), max_ios_(max_ios) {}

void IssueOrder::add(const Io& io) {
  open_.push_back(io);
  if (!io.comm.empty()) open_.back().comm = *comms_.emplace(io.comm).first;
  ++held_;
}

void IssueOrder::seal() {
  if (open_.empty()) return;
  std::stable_sort(open_.begin(), open_.end(), [](const Io& a, const Io& b) { return a.issue_ns < b.issue_ns; });
  runs_.push_back(Run{std::move(open_), 0});
  open_ = {};
}

void IssueOrder::release(int64_t now_ns, const IoSink& emit, bool drain) {
  seal();
  const int64_t cutoff = drain ? std::numeric_limits<int64_t>::max() : now_ns - window_ns_;
  for (;;) {
    Run* best = nullptr;
    for (auto& r : runs_)
      if (!best || r.ios[r.next].issue_ns < best->ios[best->next].issue_ns) best = &r;
    if (!best || (best->ios[best->next].issue_ns >= cutoff && held_ <= max_ios_)) break;
    emit(best->ios[best->next]);
    --held_;
    if (++best->next == best->ios.size()) {
      for (auto it = runs_.begin(); it != runs_.end(); ++it)
        if (&*it == best) {
          runs_.erase(it);
          break;
        }
    }
  }
}

}  // namespace iotape::capture

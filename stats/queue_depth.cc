#include "stats/queue_depth.h"

#include <algorithm>

namespace iotape::stats {

int QueueDepth::bucket_of(uint64_t qd) {
  if (qd <= 3) return qd == 0 ? 0 : static_cast<int>(qd) - 1;
  if (qd <= 5) return 3;
  if (qd <= 10) return 4;
  if (qd <= 20) return 5;
  if (qd <= 32) return 6;
  return 7;
}

void QueueDepth::add(const format::Io& io) {
  if (ios_ == 0) {
    constexpr int64_t kNear = int64_t{1} << 62;  // ns: 146 years
    near_lo_ = io.issue_ns < INT64_MIN + kNear ? INT64_MIN : io.issue_ns - kNear;
    near_hi_ = io.issue_ns > INT64_MAX - kNear ? INT64_MAX : io.issue_ns + kNear;
  }
  now_ = std::max(now_, io.issue_ns);
  const bool complete = io.has_complete() && io.complete_ns > io.device_start_ns();
  // Times centuries apart (a damaged or made-up trace) are compared only in order.
  if (near_ && (now_ > near_hi_ || io.issue_ns < near_lo_ || (complete && io.complete_ns > near_hi_))) {
    near_ = false;
    if (!sorted_) {
      std::sort(completions_.begin(), completions_.end());
      sorted_ = true;
    }
  }
  const uint64_t outstanding = sorted_ ? outstanding_sorted() : outstanding_unsorted();
  const uint64_t qd = outstanding + 1;
  ++buckets_[bucket_of(qd)];
  ++ios_;
  sum_ += qd;
  max_ = std::max(max_, qd);
  if (!complete) return;
  if (sorted_)
    insert_sorted(io.complete_ns);
  else
    completions_.push_back(io.complete_ns);
}

uint64_t QueueDepth::outstanding_unsorted() {
  const int64_t now = now_;
  int64_t* const c = completions_.data();
  const size_t n = completions_.size();
  // c[i] > now as the sign of now - c[i], which cannot overflow (near_):
  // operations the compiler vectorises, as it does not a 64-bit comparison.
  uint64_t outstanding = 0;
  for (size_t i = 0; i < n; ++i) outstanding += (static_cast<uint64_t>(now) - static_cast<uint64_t>(c[i])) >> 63;
  // The completed ones go once they outnumber the rest: each time is
  // written back and kept if outstanding, without a branch on it.
  if (n >= 2 * outstanding + 16) {
    size_t kept = 0;
    for (size_t i = 0; i < n; ++i) {
      const int64_t t = c[i];
      c[kept] = t;
      kept += t > now;
    }
    completions_.resize(kept);
  }
  if (outstanding > kDeep) {
    std::sort(completions_.begin(), completions_.end());
    first_ =
        static_cast<size_t>(std::upper_bound(completions_.begin(), completions_.end(), now) - completions_.begin());
    sorted_ = true;
  }
  return outstanding;
}

uint64_t QueueDepth::outstanding_sorted() {
  while (first_ < completions_.size() && completions_[first_] <= now_) ++first_;
  const uint64_t outstanding = completions_.size() - first_;
  // Space of the completed ones is reclaimed once it outweighs the rest; a
  // queue back to shallow is counted unsorted again (sorted times are times).
  if ((first_ >= 64 && first_ * 2 >= completions_.size()) || outstanding < kDeep / 2) {
    completions_.erase(completions_.begin(), completions_.begin() + static_cast<ptrdiff_t>(first_));
    first_ = 0;
    sorted_ = outstanding >= kDeep / 2 || !near_;
  }
  return outstanding;
}

void QueueDepth::insert_sorted(int64_t complete_ns) {
  completions_.push_back(complete_ns);
  int64_t* const begin = completions_.data() + first_;
  int64_t* at = completions_.data() + completions_.size() - 1;
  constexpr ptrdiff_t kNear = 64;
  if (at - begin > kNear && *(at - kNear) > complete_ns) {
    // Far from the end (a deep queue completing out of order): a search.
    int64_t* const to = std::upper_bound(begin, at, complete_ns);
    std::move_backward(to, at, at + 1);
    *to = complete_ns;
    return;
  }
  // Near the end, as most are: moved there in one pass, without a call to memmove.
  for (; at > begin && *(at - 1) > complete_ns; --at) *at = *(at - 1);
  *at = complete_ns;
}

}  // namespace iotape::stats

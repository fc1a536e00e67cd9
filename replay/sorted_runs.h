// Sorting what arrives as a few ascending runs. The result's thread takes
// finished IOs a lane's batch at a time, each batch in its lane's issue
// order, so a window of them is some tens of sorted runs: merging
// neighbouring runs takes log2(runs) linear passes where a general sort takes
// log2(n) levels. With two issue threads, the result thread's two general
// sorts (fidelity's busy-time window, the IOs held for issue order) were
// together its largest cost.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <vector>

namespace iotape::replay {

// Sorts [first, last) stably by `less`, merging its ascending runs pairwise;
// with runs shorter than 64 elements on average, std::stable_sort, which
// then costs less.
template <class It, class Less = std::less<>>
void sort_runs(It first, It last, Less less = {}) {
  const auto n = static_cast<size_t>(last - first);
  std::vector<size_t> bounds{0};  // where each run starts, then the end
  for (size_t i = 1; i < n; ++i)
    if (less(first[i], first[i - 1])) {
      bounds.push_back(i);
      if (bounds.size() > n / 64 + 1) {
        std::stable_sort(first, last, less);
        return;
      }
    }
  bounds.push_back(n);
  while (bounds.size() > 2) {
    std::vector<size_t> merged{0};
    for (size_t i = 0; i + 2 < bounds.size(); i += 2) {
      std::inplace_merge(first + bounds[i], first + bounds[i + 1], first + bounds[i + 2], less);
      merged.push_back(bounds[i + 2]);
    }
    if (merged.back() != n) merged.push_back(n);  // an odd run out waits for the next pass
    bounds.swap(merged);
  }
}

}  // namespace iotape::replay

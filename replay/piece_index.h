// PieceIndex: the block requests a replay's IOs have not yet claimed, on
// one device, found by the bytes they cover (replay/device_times.cc joins
// IOs to requests with it).
//
// A Piece is a request, or what is left of one after IOs claimed parts of
// it. take(pos, accept) finds, among the pieces covering byte `pos` that
// `accept` takes, the one that completed first, and removes it; add() files
// a piece (a request, or the parts of one an IO did not cover); forget()
// drops the pieces that completed before a time.
//
// How: a piece is filed under the slot of its start in the finest tier
// whose slots are at least its length (4 KiB, 64 KiB, 1 MiB), so the pieces
// covering a byte are in its slot or the one before, in each tier; longer
// ones (large discards, merged sequential writes) are few and looked through
// whole. Hashing the slots costs the same however many pieces wait, where an
// ordered map's search grew with them (a join lags the IOs by milliseconds:
// thousands of pieces at fast drives' rates, tens of thousands when it waits
// for the slowest of several lanes). The tiers keep a slot to the pieces
// that could cover its bytes: with one tier of 1 MiB slots, a 4 KiB IO on two
// lanes looked through some hundred pieces for its own.
//
// Not thread-safe: one joining thread uses it.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <optional>
#include <vector>

#include "format/io.h"

namespace iotape::replay {

struct Piece {
  uint64_t start, end;                 // bytes
  int64_t issue, complete;             // never issued: issue is its submission to the block layer
  bool remainder;                      // part of a request that already served another IO
  bool empty_write = false;            // an fsync's empty pre-flush write, not a flush request
  bool never_issued = false;           // completed by the flush machinery without reaching the device
  format::Op op = format::Op::kFlush;  // of a ranged request
};

class PieceIndex {
 public:
  // REQUIRES: p.start < p.end.
  void add(const Piece& p) {
    const uint64_t length = p.end - p.start;
    oldest_ = std::min(oldest_, p.complete);
    for (unsigned tier = 0; tier < kTiers; ++tier)
      if (length <= span(tier)) {
        file(key(tier, p.start >> kShift[tier]), p);
        ++filed_[tier];
        straddling_[tier] += straddles(tier, p);
        return;
      }
    long_.push_back(p);
  }

  // The piece covering `pos` that `accept`s and completed first, taken out;
  // nullopt when none does.
  template <class Accept>
  std::optional<Piece> take(uint64_t pos, const Accept& accept) {
    uint32_t best_node = kNil;
    size_t best_long = long_.size();
    const Piece* best = nullptr;
    auto consider = [&](const Piece& p) {
      const bool better = p.start <= pos && p.end > pos && accept(p) && (!best || p.complete < best->complete);
      if (better) best = &p;
      return better;
    };
    for (unsigned tier = 0; tier < kTiers; ++tier) {
      if (filed_[tier] == 0) continue;
      const uint64_t slot = pos >> kShift[tier];
      for (uint64_t s : {slot, slot - 1}) {
        const uint64_t k = key(tier, s);
        for (uint32_t n = buckets_[bucket(k)]; n != kNil; n = nodes_[n].next)
          if (nodes_[n].key == k && consider(nodes_[n].piece)) best_node = n, best_long = long_.size();
        // Pieces within their slot, as aligned IOs' requests are, cover no byte of the next.
        if (s == 0 || straddling_[tier] == 0) break;
      }
    }
    for (size_t i = 0; i < long_.size(); ++i)
      if (consider(long_[i])) best_node = kNil, best_long = i;
    if (!best) return std::nullopt;
    const Piece p = *best;
    if (best_long < long_.size()) {
      long_[best_long] = long_.back();
      long_.pop_back();
    } else {
      const unsigned tier = nodes_[best_node].key & kTierMask;
      --filed_[tier];
      straddling_[tier] -= straddles(tier, p);
      uint32_t* link = &buckets_[bucket(nodes_[best_node].key)];
      while (*link != best_node) link = &nodes_[*link].next;
      *link = release(best_node);
    }
    return p;
  }

  // Removes the pieces that completed before `before`; returns how many of
  // them were whole requests.
  uint64_t forget(int64_t before) {
    // Called after every join, when the pieces left are mostly those of IOs
    // still to join: looked through only when one may be older.
    if (oldest_ >= before) return 0;
    uint64_t whole = 0;
    oldest_ = INT64_MAX;
    for (uint32_t& head : buckets_)
      for (uint32_t* link = &head; *link != kNil;) {
        const Node& n = nodes_[*link];
        if (n.piece.complete < before) {
          whole += !n.piece.remainder;
          const unsigned tier = n.key & kTierMask;
          --filed_[tier];
          straddling_[tier] -= straddles(tier, n.piece);
          *link = release(*link);
        } else {
          oldest_ = std::min(oldest_, n.piece.complete);
          link = &nodes_[*link].next;
        }
      }
    std::erase_if(long_, [&](const Piece& p) {
      whole += p.complete < before && !p.remainder;
      if (p.complete >= before) oldest_ = std::min(oldest_, p.complete);
      return p.complete < before;
    });
    return whole;
  }

  size_t size() const { return filed_[0] + filed_[1] + filed_[2] + long_.size(); }

 private:
  static constexpr unsigned kTiers = 3;
  static constexpr unsigned kShift[kTiers] = {12, 16, 20};
  static constexpr uint64_t kTierMask = 3;
  static constexpr uint64_t span(unsigned tier) { return uint64_t{1} << kShift[tier]; }
  static constexpr uint64_t key(unsigned tier, uint64_t slot) { return slot << 2 | tier; }
  // Whether `p` runs past the end of its slot in `tier`.
  static bool straddles(unsigned tier, const Piece& p) {
    return (p.start >> kShift[tier]) != ((p.end - 1) >> kShift[tier]);
  }

  // The slots: chains of nodes in a vector, hashed by multiplication into a
  // power-of-two table, nodes reused through a free list. Each piece is in
  // and out within milliseconds: no allocation, and no division to hash,
  // where std::unordered_multimap spent a third of the join.
  static constexpr uint32_t kNil = UINT32_MAX;
  struct Node {
    uint64_t key;
    uint32_t next;  // in its chain, or in the free list
    Piece piece;
  };
  size_t bucket(uint64_t k) const { return (k * 0x9E3779B97F4A7C15ULL) >> shift_; }
  void file(uint64_t k, const Piece& p) {
    if (filed_[0] + filed_[1] + filed_[2] >= buckets_.size()) grow();  // the pieces in slots
    uint32_t n = free_;
    if (n != kNil) {
      free_ = nodes_[n].next;
    } else {
      n = static_cast<uint32_t>(nodes_.size());
      nodes_.emplace_back();
    }
    uint32_t& head = buckets_[bucket(k)];
    nodes_[n] = {k, head, p};
    head = n;
  }
  // Puts node `n` on the free list; returns the node after it in its chain.
  uint32_t release(uint32_t n) {
    const uint32_t next = nodes_[n].next;
    nodes_[n].next = free_;
    free_ = n;
    return next;
  }
  // Twice the buckets (at least one per piece), the chains filed anew.
  void grow() {
    std::vector<uint32_t> old(buckets_.empty() ? 512 : buckets_.size() * 2, kNil);
    old.swap(buckets_);
    shift_ = 64 - std::countr_zero(buckets_.size());
    for (uint32_t head : old)
      for (uint32_t n = head; n != kNil;) {
        const uint32_t next = nodes_[n].next;
        uint32_t& h = buckets_[bucket(nodes_[n].key)];
        nodes_[n].next = h;
        h = n;
        n = next;
      }
  }
  std::vector<Node> nodes_;
  std::vector<uint32_t> buckets_;
  uint32_t free_ = kNil;
  unsigned shift_ = 0;                // 64 - log2(buckets_.size())
  uint64_t filed_[kTiers] = {};       // pieces per tier: a tier with none is not looked in
  uint64_t straddling_[kTiers] = {};  // of them, those running into the next slot
  int64_t oldest_ = INT64_MAX;        // no piece completed before this
  std::vector<Piece> long_;
};

}  // namespace iotape::replay

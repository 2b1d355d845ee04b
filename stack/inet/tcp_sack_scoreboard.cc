#include "stack/inet/tcp_sack_scoreboard.h"

#include <algorithm>

#include "stack/inet/tcp_seq.h"

namespace bypass::inet {

bool SackScoreboard::update(const TcpOptions& options, uint32_t snd_una, uint32_t snd_max) {
  bool taken = false;
  for (size_t i = 0; i < options.sack_count; ++i) {
    SackBlock block = options.sack_blocks[i];
    if (!seq_lt(block.left, block.right) || seq_leq(block.right, snd_una) || seq_gt(block.right, snd_max))
      continue;
    if (seq_lt(block.left, snd_una)) block.left = snd_una;
    auto it = std::find_if(blocks_.begin(), blocks_.end(),
                           [&](const SackBlock& b) { return seq_geq(b.right, block.left); });
    // Merge with every block it touches.
    while (it != blocks_.end() && seq_leq(it->left, block.right)) {
      block.left = seq_min(block.left, it->left);
      block.right = seq_max(block.right, it->right);
      it = blocks_.erase(it);
    }
    blocks_.insert(it, block);
    taken = true;
  }
  return taken;
}

void SackScoreboard::advance(uint32_t snd_una) {
  auto first_kept = std::find_if(blocks_.begin(), blocks_.end(),
                                 [&](const SackBlock& b) { return seq_gt(b.right, snd_una); });
  blocks_.erase(blocks_.begin(), first_kept);
  if (!blocks_.empty() && seq_lt(blocks_.front().left, snd_una)) blocks_.front().left = snd_una;
}

bool SackScoreboard::is_lost(uint32_t seq, uint32_t smss) const {
  uint32_t count = 0;
  uint64_t bytes = 0;
  for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it) {
    if (seq_leq(it->right, seq)) break;
    ++count;
    bytes += it->right - seq_max(it->left, seq + 1);
  }
  return count >= kDupThresh || bytes > uint64_t{kDupThresh - 1} * smss;
}

bool SackScoreboard::covers(uint32_t start, uint32_t end) const {
  for (const SackBlock& b : blocks_) {
    if (seq_gt(b.left, start)) return false;
    if (seq_geq(b.right, end)) return true;
    if (seq_gt(b.right, start)) return false;  // blocks are merged: the next one leaves a gap
  }
  return false;
}

uint32_t SackScoreboard::skip_sacked(uint32_t seq) const {
  for (const SackBlock& b : blocks_) {
    if (seq_gt(b.left, seq)) break;
    if (seq_gt(b.right, seq)) return b.right;
  }
  return seq;
}

uint32_t SackScoreboard::next_sacked(uint32_t seq, uint32_t limit) const {
  for (const SackBlock& b : blocks_)
    if (seq_gt(b.left, seq)) return seq_min(b.left, limit);
  return limit;
}

}  // namespace bypass::inet

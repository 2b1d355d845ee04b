#include "stack/inet/tcp_sack_scoreboard.h"

#include <algorithm>

#include "stack/inet/wire/seq_number.h"

namespace bypass::inet {

bool SackScoreboard::update(const TcpOptions& options, SeqNumber snd_una, SeqNumber snd_max) {
  bool taken = false;
  for (size_t i = 0; i < options.sack_count; ++i) {
    SackBlock block = options.sack_blocks[i];
    if (!(block.left < block.right) || block.right <= snd_una || block.right > snd_max)
      continue;
    if (block.left < snd_una) block.left = snd_una;
    auto it = std::find_if(blocks_.begin(), blocks_.end(),
                           [&](const SackBlock& b) { return b.right >= block.left; });
    // Merge with every block it touches.
    while (it != blocks_.end() && it->left <= block.right) {
      block.left = seq_min(block.left, it->left);
      block.right = seq_max(block.right, it->right);
      it = blocks_.erase(it);
    }
    blocks_.insert(it, block);
    taken = true;
  }
  return taken;
}

void SackScoreboard::advance(SeqNumber snd_una) {
  auto first_kept = std::find_if(blocks_.begin(), blocks_.end(),
                                 [&](const SackBlock& b) { return b.right > snd_una; });
  blocks_.erase(blocks_.begin(), first_kept);
  if (!blocks_.empty() && blocks_.front().left < snd_una) blocks_.front().left = snd_una;
}

bool SackScoreboard::is_lost(SeqNumber seq, uint32_t smss) const {
  uint32_t count = 0;
  uint64_t bytes = 0;
  for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it) {
    if (it->right <= seq) break;
    ++count;
    bytes += it->right - seq_max(it->left, seq + 1);
  }
  return count >= kDupThresh || bytes > uint64_t{kDupThresh - 1} * smss;
}

bool SackScoreboard::covers(SeqNumber start, SeqNumber end) const {
  for (const SackBlock& b : blocks_) {
    if (b.left > start) return false;
    if (b.right >= end) return true;
    if (b.right > start) return false;  // blocks are merged: the next one leaves a gap
  }
  return false;
}

SeqNumber SackScoreboard::skip_sacked(SeqNumber seq) const {
  for (const SackBlock& b : blocks_) {
    if (b.left > seq) break;
    if (b.right > seq) return b.right;
  }
  return seq;
}

SeqNumber SackScoreboard::next_sacked(SeqNumber seq, SeqNumber limit) const {
  for (const SackBlock& b : blocks_)
    if (b.left > seq) return seq_min(b.left, limit);
  return limit;
}

}  // namespace bypass::inet

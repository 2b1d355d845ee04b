// The sender's record of what the peer selectively acknowledged (RFC 2018, RFC 6675 §3-§4): the
// SACKed ranges above SND.UNA, sorted and merged. It survives a retransmission timeout (RFC 6675
// §5.1), so recovery after a timeout resends only the holes.
#pragma once

#include <cstdint>
#include <vector>

#include "stack/inet/wire/tcp.h"

namespace bypass::inet {

class SackScoreboard {
 public:
  static constexpr uint32_t kDupThresh = 3;  // RFC 6675 §2, RFC 5681 §3.2

  // Adds the SACK blocks of an ACK. Blocks that are inverted, at or below `snd_una` (D-SACK,
  // RFC 2883) or beyond `snd_max` are ignored (RFC 2018 §4). Returns whether any block was taken.
  bool update(const TcpOptions& options, SeqNumber snd_una, SeqNumber snd_max);
  // SND.UNA moved: forget what it covers.
  void advance(SeqNumber snd_una);
  void clear() { blocks_.clear(); }

  // RFC 6675 §4 IsLost: DupThresh discontiguous SACKed blocks above `seq`, or more than
  // (DupThresh - 1) * SMSS SACKed bytes above it.
  bool is_lost(SeqNumber seq, uint32_t smss) const;
  // Whether every octet of [start, end) is SACKed.
  bool covers(SeqNumber start, SeqNumber end) const;
  // The first octet at or after `seq` that is not SACKed.
  SeqNumber skip_sacked(SeqNumber seq) const;
  // The left edge of the first SACKed block above `seq`, or `limit` if none lies below it.
  SeqNumber next_sacked(SeqNumber seq, SeqNumber limit) const;

  bool empty() const { return blocks_.empty(); }
  size_t size() const { return blocks_.size(); }
  const std::vector<SackBlock>& blocks() const { return blocks_; }

 private:
  std::vector<SackBlock> blocks_;
};

}  // namespace bypass::inet

// RACK-TLP loss detection (RFC 8985) over the sender's record of what it sent and when.
//
// RACK: a segment is lost once a segment sent after it has been delivered (cumulatively or
// selectively acknowledged) and a reordering window has passed since (§6.2). Unlike counting
// duplicate ACKs, this finds lost retransmissions and losses in short flights without waiting
// for the retransmission timer. TLP: when a flight's tail goes silent for about two round trips,
// one probe segment elicits the ACK (with SACK) that lets RACK see the tail loss (§7).
//
// The record also gives RFC 6675's pipe (§4 SetPipe) and NextSeg (rule 1): which octets are in
// flight and which to resend, each segment marked lost at most once per transmission.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "base/pool_allocator.h"
#include "stack/inet/tcp_sack_scoreboard.h"
#include "stack/inet/timer_service.h"

namespace bypass::inet {

struct SentSegment {
  SeqNumber start, end;         // sequence range, a FIN counting as one octet
  TimePoint sent_at{0};         // the latest (re)transmission
  uint32_t tsval = 0;           // its RFC 7323 TSval (0 without timestamps)
  bool retransmitted = false;
  bool sacked = false;
  bool lost = false;            // marked lost and not resent since
};

class RackTlp {
 public:
  // Bookkeeping of every (re)transmitted range. Retransmissions may cover parts of earlier
  // segments: those are split so each record has one send time. Amortized, no allocation once
  // the record holds a window's worth of segments.
  void on_transmit(SeqNumber start, SeqNumber end, TimePoint now, uint32_t tsval = 0);
  // An ACK arrived: segments below `snd_una` and those `scoreboard` covers are delivered (RFC
  // 8985 §6.2 steps 1-3: RACK.xmit_ts, RACK.end_seq, RACK.rtt and reordering). `tsecr`, the
  // ACK's timestamp echo if any, tells whether a retransmitted segment's ACK is for the original.
  void on_ack(SeqNumber snd_una, const SackScoreboard& scoreboard, TimePoint now,
              std::optional<uint32_t> tsecr = std::nullopt);
  // RFC 8985 §6.2 step 5: marks lost what a later-sent delivered segment overtook by more than the
  // reordering window. Returns how long until the next segment may be marked (zero: none waits).
  Duration detect_loss(TimePoint now, bool in_recovery);
  // RFC 6675 §4 IsLost, the DupThresh rule, for segments not yet retransmitted.
  void mark_lost_by_dupthresh(const SackScoreboard& scoreboard, uint32_t smss);
  // RFC 8985 §6.3 / RFC 6675 §5.1: after a retransmission timeout every unSACKed segment is lost.
  void mark_all_lost();
  void mark_lost(SeqNumber seq);  // the segment holding `seq`
  // The scoreboard was discarded (RFC 2018 §8: the receiver may renege): nothing is SACKed.
  void forget_sacks();
  void clear();

  bool has_lost() const { return lost_count_ > 0; }
  // The first segment marked lost (NextSeg rule 1), or null.
  const SentSegment* first_lost() const;
  // The most recently sent new data (the tail a loss probe repeats), or null.
  const SentSegment* last() const { return head_ < segments_.size() ? &segments_.back() : nullptr; }
  // RFC 6675 §4 SetPipe: octets neither SACKed nor marked lost (a resent lost segment counts).
  uint32_t pipe() const;
  size_t size() const { return segments_.size() - head_; }
  Duration min_rtt() const { return min_rtt_; }
  bool reordering_seen() const { return reordering_seen_; }

  // ---- Tail loss probe (RFC 8985 §7) ----
  // PTO (§7.2): 2 SRTT, plus the worst-case delayed ACK while the receiver may hold its ACK
  // (less than two full-sized segments in flight), at least 10 ms (the timer granularity Linux
  // uses too).
  static Duration probe_timeout(Duration srtt, bool have_srtt, bool receiver_may_delay_ack);
  void on_probe_sent(SeqNumber end_seq) { probe_end_ = end_seq; }
  bool probe_outstanding() const { return probe_end_.has_value(); }
  // §7.4: the ACK covering the probe ends the episode; true when the probe (not the original)
  // repaired a loss, so the congestion response is due. A D-SACK of the probe says the original
  // arrived: no response.
  bool probe_repaired_loss(SeqNumber ack, bool dsack);
  void cancel_probe() { probe_end_.reset(); }

 private:
  SentSegment* begin() { return segments_.data() + head_; }
  SentSegment* end() { return segments_.data() + segments_.size(); }
  const SentSegment* begin() const { return segments_.data() + head_; }
  const SentSegment* end() const { return segments_.data() + segments_.size(); }
  void split_at(SeqNumber seq);
  void delivered(const SentSegment& s, TimePoint now, std::optional<uint32_t> tsecr);
  void set_lost(SentSegment& s);

  std::vector<SentSegment, PoolAllocator<SentSegment>> segments_;  // segments_[head_..] sorted, contiguous, above SND.UNA
  size_t head_ = 0;
  size_t lost_count_ = 0;
  // RFC 8985 §6.1 per-connection state.
  TimePoint rack_xmit_{-1};
  SeqNumber rack_end_;
  Duration rack_rtt_{0};
  Duration min_rtt_{0};
  SeqNumber fack_;  // highest delivered sequence number (RACK.fack)
  bool have_fack_ = false;
  bool reordering_seen_ = false;
  std::optional<SeqNumber> probe_end_;  // TLP.end_seq while a probe is outstanding
};

}  // namespace bypass::inet

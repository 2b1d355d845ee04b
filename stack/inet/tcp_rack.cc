#include "stack/inet/tcp_rack.h"

#include <algorithm>

#include "stack/inet/wire/seq_number.h"

namespace bypass::inet {

namespace {
// RFC 8985 §6.2: segment a was sent after segment b (ties broken by sequence number).
bool sent_after(TimePoint a_time, SeqNumber a_end, TimePoint b_time, SeqNumber b_end) {
  return a_time > b_time || (a_time == b_time && a_end > b_end);
}
constexpr size_t kCompactAbove = 256;  // dead records kept before the vector is shifted down
// The first array holds a short flight plus the splits a probe or a retransmission makes, so a
// request/reply connection's record never grows on the data path: a growth takes a larger pool
// block, whose class may not be warm yet (one heap call in the middle of a run).
constexpr size_t kFirstCapacity = 16;
}  // namespace

void RackTlp::on_transmit(SeqNumber start, SeqNumber stop, TimePoint now, uint32_t tsval) {
  if (!(start < stop)) return;
  if (segments_.capacity() == 0) segments_.reserve(kFirstCapacity);
  if (head_ == segments_.size() || start >= segments_.back().end) {
    segments_.push_back({start, stop, now, tsval});
    return;
  }
  // A retransmission (go-back after a shrinking path MTU, a hole, a probe): split so the resent
  // part has records of its own; data beyond the last record is new.
  const SeqNumber known_end = segments_.back().end;
  if (stop > known_end) {
    segments_.push_back({known_end, stop, now, tsval});
    stop = known_end;
  }
  split_at(start);
  split_at(stop);
  for (SentSegment* s = begin(); s != end(); ++s) {
    if (s->start < start) continue;
    if (s->start >= stop) break;
    s->sent_at = now;
    s->tsval = tsval;
    s->retransmitted = true;
    if (s->lost) {
      s->lost = false;
      --lost_count_;
    }
  }
}

void RackTlp::split_at(SeqNumber seq) {
  SentSegment* s = std::find_if(begin(), end(), [&](const SentSegment& x) { return x.end > seq; });
  if (s == end() || !(s->start < seq)) return;
  SentSegment tail = *s;
  tail.start = seq;
  s->end = seq;
  if (tail.lost) ++lost_count_;
  segments_.insert(segments_.begin() + (s - segments_.data()) + 1, tail);
}

void RackTlp::delivered(const SentSegment& s, TimePoint now, std::optional<uint32_t> tsecr) {
  const Duration rtt = now - s.sent_at;
  // Step 2: a retransmitted segment's ACK may be for the original: so it is when the echoed
  // timestamp predates the retransmission, or the sample is shorter than the minimum RTT. Taken,
  // it would make every segment sent before the retransmission look overtaken.
  if (s.retransmitted && (rtt < min_rtt_ || (tsecr && timestamp_before(*tsecr, s.tsval)))) return;
  if (min_rtt_ == Duration::zero() || rtt < min_rtt_) min_rtt_ = rtt;
  // Reordering (§6.2 step 3): delivered below what was already delivered, never resent.
  if (!s.retransmitted && have_fack_ && s.end < fack_) reordering_seen_ = true;
  fack_ = have_fack_ ? seq_max(fack_, s.end) : s.end;
  have_fack_ = true;
  if (rack_xmit_ < TimePoint::zero() || sent_after(s.sent_at, s.end, rack_xmit_, rack_end_)) {
    rack_xmit_ = s.sent_at;
    rack_end_ = s.end;
    rack_rtt_ = rtt;
  }
}

void RackTlp::on_ack(SeqNumber snd_una, const SackScoreboard& scoreboard, TimePoint now,
                     std::optional<uint32_t> tsecr) {
  while (head_ < segments_.size() && segments_[head_].end <= snd_una) {
    SentSegment& s = segments_[head_];
    if (!s.sacked) delivered(s, now, tsecr);
    if (s.lost) --lost_count_;
    ++head_;
  }
  if (head_ == segments_.size()) {
    segments_.clear();
    head_ = 0;
  } else if (head_ > kCompactAbove && head_ * 2 > segments_.size()) {
    segments_.erase(segments_.begin(), segments_.begin() + static_cast<ptrdiff_t>(head_));
    head_ = 0;
  }
  if (head_ < segments_.size() && segments_[head_].start < snd_una) segments_[head_].start = snd_una;
  if (scoreboard.empty()) return;
  const SeqNumber highest = scoreboard.blocks().back().right;
  for (SentSegment* s = begin(); s != end() && s->start < highest; ++s) {
    if (s->sacked || !scoreboard.covers(s->start, s->end)) continue;
    s->sacked = true;
    if (s->lost) {
      s->lost = false;
      --lost_count_;
    }
    // A receiver echoes the TSval of the segment that last advanced its window (RFC 7323 §4.3):
    // for data above a hole that is an older segment's, so it says nothing here.
    delivered(*s, now, std::nullopt);
  }
}

void RackTlp::set_lost(SentSegment& s) {
  if (s.lost || s.sacked) return;
  s.lost = true;
  ++lost_count_;
}

Duration RackTlp::detect_loss(TimePoint now, bool in_recovery) {
  if (rack_xmit_ < TimePoint::zero()) return Duration::zero();
  // Step 4: the reordering window. Until reordering is seen, a loss in recovery needs none.
  const Duration reo_wnd = !reordering_seen_ && in_recovery ? Duration::zero() : min_rtt_ / 4;
  Duration wait = Duration::zero();
  for (SentSegment* s = begin(); s != end(); ++s) {
    if (s->sacked || s->lost) continue;
    if (!sent_after(rack_xmit_, rack_end_, s->sent_at, s->end)) continue;
    const Duration remaining = s->sent_at + rack_rtt_ + reo_wnd - now;
    if (remaining <= Duration::zero()) set_lost(*s);
    else wait = std::max(wait, remaining);
  }
  return wait;
}

void RackTlp::mark_lost_by_dupthresh(const SackScoreboard& scoreboard, uint32_t smss) {
  if (scoreboard.empty()) return;
  const SeqNumber highest = scoreboard.blocks().back().right;
  for (SentSegment* s = begin(); s != end() && s->start < highest; ++s)
    if (!s->retransmitted && !s->sacked && !s->lost && scoreboard.is_lost(s->start, smss)) set_lost(*s);
}

void RackTlp::mark_all_lost() {
  for (SentSegment* s = begin(); s != end(); ++s) set_lost(*s);
}

void RackTlp::mark_lost(SeqNumber seq) {
  for (SentSegment* s = begin(); s != end(); ++s)
    if (s->start <= seq && seq < s->end) return set_lost(*s);
}

void RackTlp::forget_sacks() {
  for (SentSegment* s = begin(); s != end(); ++s) s->sacked = false;
}

void RackTlp::clear() {
  segments_.clear();
  head_ = 0;
  lost_count_ = 0;
  probe_end_.reset();
}

const SentSegment* RackTlp::first_lost() const {
  if (lost_count_ == 0) return nullptr;
  for (const SentSegment* s = begin(); s != end(); ++s)
    if (s->lost) return s;
  return nullptr;
}

uint32_t RackTlp::pipe() const {
  uint64_t total = 0;
  for (const SentSegment* s = begin(); s != end(); ++s)
    if (!s->sacked && !s->lost) total += s->end - s->start;
  return static_cast<uint32_t>(std::min<uint64_t>(total, UINT32_MAX));
}

Duration RackTlp::probe_timeout(Duration srtt, bool have_srtt, bool receiver_may_delay_ack) {
  using namespace std::chrono_literals;
  if (!have_srtt) return 1s;  // §7.2: no RTT sample yet
  Duration pto = 2 * srtt;
  if (receiver_may_delay_ack) pto += 200ms;  // WCDelAckT, the worst case the RFC recommends
  return std::max<Duration>(pto, 10ms);
}

bool RackTlp::probe_repaired_loss(SeqNumber ack, bool dsack) {
  if (!probe_end_ || ack < *probe_end_) return false;
  probe_end_.reset();
  return !dsack;
}

}  // namespace bypass::inet

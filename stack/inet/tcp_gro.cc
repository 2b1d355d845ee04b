#include "stack/inet/tcp_gro.h"

#include "stack/inet/wire/seq_number.h"

namespace bypass::inet {

bool TcpGro::may_merge(const TcpSegment& segment) {
  const TcpHeader& h = segment.header;
  // Only ACK or ACK|PSH with data (tcp_gro_receive flushes on any other flag difference and never
  // merges an empty segment); SACK blocks differ from segment to segment, so they end a unit too.
  return (h.flags & ~kTcpPsh) == kTcpAck && !segment.payload.empty() && h.options.sack_count == 0 &&
         segment.segments == 1;
}

bool TcpGro::extends(const Unit& unit, const TcpSegment& segment) {
  const TcpHeader& held = unit.segment.header;
  const TcpHeader& h = segment.header;
  const size_t length = segment.payload.length();
  if (h.seq != unit.next_seq || h.ack != held.ack || h.window != held.window ||
      h.header_length != held.header_length)
    return false;
  if (length > unit.segment_size || unit.segment.payload.length() + length > kMaxUnitPayload) return false;
  // RFC 7323: the peer's clock may tick between segments (TSval non-decreasing); the echoed value
  // must be the same, or the unit would hide an RTT sample the sender means to take.
  const auto& ts = h.options.timestamp;
  const auto& held_ts = held.options.timestamp;
  if (ts.has_value() != held_ts.has_value()) return false;
  if (ts && (ts->second != held_ts->second || timestamp_before(ts->first, unit.last_tsval))) return false;
  return true;
}

bool TcpGro::append(Unit& unit, TcpSegment&& segment) {
  const uint32_t length = static_cast<uint32_t>(segment.payload.length());
  unit.segment.payload.append(std::move(segment.payload));
  unit.next_seq += length;
  ++unit.segment.segments;
  if (segment.header.options.timestamp) unit.last_tsval = segment.header.options.timestamp->first;
  if (segment.header.has(kTcpPsh)) {
    unit.segment.header.flags |= kTcpPsh;
    return true;
  }
  return length < unit.segment_size;
}

TcpGro::Unit* TcpGro::find(const FourTuple& tuple) {
  if (held_ == 0) return nullptr;
  for (Unit& unit : units_)
    if (unit.used && unit.tuple == tuple) return &unit;
  return nullptr;
}

void TcpGro::receive(const FourTuple& tuple, TcpSegment&& segment, bool coalescable) {
  if (!in_burst_) return deliver_(tuple, std::move(segment));
  const bool mergeable = coalescable && may_merge(segment);
  Unit* unit = find(tuple);
  if (unit) {
    if (mergeable && extends(*unit, segment)) {
      if (append(*unit, std::move(segment))) deliver(*unit);
      return;
    }
    deliver(*unit);  // what came before this segment goes first
  }
  // A lone PSH segment ends its unit at once (tcp_gro_receive's final flush check).
  if (!mergeable || segment.header.has(kTcpPsh)) return deliver_(tuple, std::move(segment));
  open(tuple, std::move(segment));
}

void TcpGro::open(const FourTuple& tuple, TcpSegment&& segment) {
  Unit* slot = nullptr;
  Unit* oldest = nullptr;
  for (Unit& unit : units_) {
    if (!unit.used) {
      slot = &unit;
      break;
    }
    if (!oldest || unit.opened < oldest->opened) oldest = &unit;
  }
  if (!slot) {
    deliver(*oldest);
    slot = oldest;
  }
  slot->tuple = tuple;
  slot->next_seq = segment.header.seq + static_cast<uint32_t>(segment.payload.length());
  slot->segment_size = static_cast<uint32_t>(segment.payload.length());
  slot->last_tsval = segment.header.options.timestamp ? segment.header.options.timestamp->first : 0;
  slot->segment = std::move(segment);
  slot->opened = next_opened_++;
  slot->used = true;
  ++held_;
}

void TcpGro::deliver(Unit& unit) {
  // Out of the table before TCP runs: what TCP does next must not see (or re-deliver) this unit.
  unit.used = false;
  --held_;
  if (unit.segment.segments > 1) {
    ++stats_.tcp_gro_units;
    stats_.tcp_gro_segments += unit.segment.segments;
  }
  const FourTuple tuple = unit.tuple;
  TcpSegment segment = std::move(unit.segment);
  unit.segment.payload.clear();
  deliver_(tuple, std::move(segment));
}

void TcpGro::end_burst() {
  in_burst_ = false;
  while (held_ != 0) {
    Unit* oldest = nullptr;
    for (Unit& unit : units_)
      if (unit.used && (!oldest || unit.opened < oldest->opened)) oldest = &unit;
    deliver(*oldest);
  }
}

}  // namespace bypass::inet

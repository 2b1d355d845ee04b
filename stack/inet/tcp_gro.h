// Receive coalescing (GRO) for TCP: within one receive burst, consecutive in-order data segments
// of one connection become one segment before TCP processes them, so the connection runs once per
// burst instead of once per wire segment and acknowledges per coalesced unit, as Linux does.
//
// The merge rules are Linux's tcp_gro_receive (net/ipv4/tcp_offload.c), with RFC 7323 timestamps
// allowed to advance within a unit:
//   - only segments whose flags are ACK or ACK|PSH and that carry data merge; PSH ends a unit;
//     FIN, SYN, RST, URG, ECE and CWR never merge (each ends what is held for its connection and
//     goes to TCP on its own), nor do pure ACKs (duplicate ACKs must each reach TCP, RFC 5681 §3.2);
//   - a segment merges only at the held unit's next sequence number, with the same ACK, window and
//     header length, and no SACK blocks;
//   - no segment is longer than the unit's first one, and a shorter one ends the unit (it is the
//     sender's last full-sized piece);
//   - timestamps: present in all or none; TSecr equal and TSval non-decreasing. The unit keeps the
//     first (earliest) TSval: RFC 7323 §4.3 has an ACK that covers several segments echo the
//     earliest one's timestamp, so the sender's RTT sample includes the time the unit took to
//     arrive, and the PAWS test (§5.3) applies to the unit's oldest segment;
//   - datagrams with IP options, reassembled from fragments, or already merged by the device (LRO)
//     never merge; IPv6 segments merge by the same rules (the merge is on TCP headers only, and
//     the tuple tells the families apart), reassembled ones excepted;
//   - a unit carries at most 64 KiB of payload.
// Every segment's checksum was verified before it gets here. No allocation per segment: a fixed
// table of units, payload appended as buffer views.
#pragma once

#include <array>
#include <cstdint>
#include <functional>

#include "stack/inet/inet_stats.h"
#include "stack/inet/tcp_connection.h"

namespace bypass::inet {

class TcpGro {
 public:
  // Connections held at once; a burst touching more delivers its oldest unit to make room.
  static constexpr size_t kMaxUnits = 8;
  static constexpr uint32_t kMaxUnitPayload = 65535;
  using Deliver = std::function<void(const FourTuple&, TcpSegment&&)>;

  TcpGro(InetStats& stats, Deliver deliver) : stats_(stats), deliver_(std::move(deliver)) {}
  TcpGro(const TcpGro&) = delete;
  TcpGro& operator=(const TcpGro&) = delete;

  // Segments received between begin_burst() and end_burst() may be held; outside a burst each is
  // delivered at once.
  void begin_burst() { in_burst_ = true; }
  // Delivers every unit still held, oldest first.
  void end_burst();
  bool in_burst() const { return in_burst_; }

  // A parsed, checksum-verified segment for `tuple`. `coalescable` is false when the IP layer
  // rules it out (options, fragments, LRO). Holds it, merges it, or delivers it; the segments of
  // one connection reach TCP in the order they arrived.
  void receive(const FourTuple& tuple, TcpSegment&& segment, bool coalescable);

 private:
  struct Unit {
    FourTuple tuple;
    TcpSegment segment;        // the first segment's header; payload of every merged one
    SeqNumber next_seq;        // sequence number the next merged segment must start at
    uint32_t segment_size = 0; // payload of the first segment: later ones may not be longer
    uint32_t last_tsval = 0;   // newest TSval merged (non-decreasing check)
    uint64_t opened = 0;       // arrival order, to deliver oldest first
    bool used = false;
  };

  static bool may_merge(const TcpSegment& segment);
  static bool extends(const Unit& unit, const TcpSegment& segment);
  // Appends `segment` to `unit`; returns true when the segment ends the unit.
  static bool append(Unit& unit, TcpSegment&& segment);
  Unit* find(const FourTuple& tuple);
  void open(const FourTuple& tuple, TcpSegment&& segment);
  void deliver(Unit& unit);

  InetStats& stats_;
  Deliver deliver_;
  bool in_burst_ = false;
  size_t held_ = 0;
  uint64_t next_opened_ = 0;
  std::array<Unit, kMaxUnits> units_;
};

}  // namespace bypass::inet

// Puts a TcpConnection straight into any state (as lwIP's tcp_set_state does for its tests), so a
// test of one RFC rule is: build the state, feed one crafted segment, check the reply and the
// state; no handshake to script first.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tests/unit/inet/harness.h"

namespace bypass::inet {

// The transmission control block fields a test chooses (RFC 9293 §3.3.1); the rest follow from
// them. Tcb::in(state) gives fields consistent with `state`: our SYN (and our FIN, in the states
// that sent one) in flight or acknowledged as the state implies, nothing else in flight.
struct Tcb {
  TcpState state = TcpState::Established;
  uint32_t iss = 1000;
  uint32_t snd_una = 1001;
  // SND.NXT, our FIN included in FIN-WAIT-1, CLOSING and LAST-ACK (and acknowledged in
  // FIN-WAIT-2 and TIME-WAIT); [snd_una, snd_nxt) less the FIN is data in flight.
  uint32_t snd_nxt = 1001;
  uint32_t snd_wnd = 65535;  // the peer's window, already scaled
  uint32_t irs = 9000;
  uint32_t rcv_nxt = 9001;
  uint16_t peer_mss = 1460;
  bool timestamps = false;
  uint32_t ts_recent = 0;    // the peer's last TSval (with timestamps)
  bool sack = false;
  uint16_t local_port = 5000;
  uint16_t remote_port = 6000;

  static Tcb in(TcpState state);
};

// A test-only friend of TcpConnection (declared there).
class TcpTestAccess {
 public:
  // A connection from host a (10.0.0.1) to host b (10.0.0.2) holding `tcb`. It is in a's
  // connection table, so frames given to a reach it; b has no such connection, so tests drop
  // what a sends (test::PeerByHand does).
  static std::shared_ptr<TcpConnection> build(test::TwoHosts& hosts, const Tcb& tcb);
};

namespace test {

// The peer (b's side of the tuple) played by hand: crafts its segments to a, and records (and
// drops) every segment a sends.
class PeerByHand {
 public:
  PeerByHand(TwoHosts& hosts, const Tcb& tcb);
  PeerByHand(const PeerByHand&) = delete;
  PeerByHand& operator=(const PeerByHand&) = delete;
  // A segment from the peer; its ACK field is our SND.NXT, its window 1000.
  TcpHeader segment(uint8_t flags, uint32_t seq) const;
  // Delivers `h` (with `payload`) to a now.
  void send(const TcpHeader& h, const std::string& payload = {});
  // Pure ACKs a sent (no RST, no data).
  size_t acks_received() const;

  std::shared_ptr<TcpConnection> connection;

 private:
  SegmentRecorder recorder_;  // a's segments since the connection was built, kept from the wire

 public:
  std::vector<SeenSegment>& seen = recorder_.segments();

 private:
  TwoHosts& hosts_;
  Tcb tcb_;
};

}  // namespace test
}  // namespace bypass::inet

#include "tests/unit/inet/tcp_state_builder.h"

#include <algorithm>

namespace bypass::inet {
namespace {

bool sent_our_fin(TcpState s) {
  return s == TcpState::FinWait1 || s == TcpState::FinWait2 || s == TcpState::Closing ||
         s == TcpState::LastAck || s == TcpState::TimeWait;
}
bool our_fin_acknowledged(TcpState s) { return s == TcpState::FinWait2 || s == TcpState::TimeWait; }

}  // namespace

Tcb Tcb::in(TcpState state) {
  Tcb t;
  t.state = state;
  switch (state) {
    case TcpState::SynSent:  // our SYN in flight, nothing heard
      t.snd_una = t.iss;
      t.snd_nxt = t.iss + 1;
      t.irs = t.rcv_nxt = 0;
      break;
    case TcpState::SynReceived:  // the peer's SYN taken, ours not acknowledged yet
      t.snd_una = t.iss;
      t.snd_nxt = t.iss + 1;
      break;
    case TcpState::FinWait1:
    case TcpState::Closing:
    case TcpState::LastAck:  // our FIN in flight
      t.snd_nxt = t.snd_una + 1;
      break;
    case TcpState::FinWait2:
    case TcpState::TimeWait:  // our FIN acknowledged
      t.snd_una = t.snd_nxt = t.iss + 2;
      break;
    default:
      break;
  }
  // The peer's FIN taken: CLOSE-WAIT, CLOSING, LAST-ACK, TIME-WAIT.
  if (state == TcpState::CloseWait || state == TcpState::Closing || state == TcpState::LastAck ||
      state == TcpState::TimeWait)
    t.rcv_nxt = t.irs + 2;
  return t;
}

std::shared_ptr<TcpConnection> TcpTestAccess::build(test::TwoHosts& hosts, const Tcb& tcb) {
  // An active open whose SYN never leaves gives a connection in a's table; its fields are then
  // replaced by the ones asked for.
  hosts.a->arp().learn(test::ip_of(2), test::mac_of(2));
  const bool was_cut = hosts.wire.cut;
  hosts.wire.cut = true;
  auto c = hosts.a->tcp().connect(test::ip_of(2), tcb.remote_port, tcb.local_port);
  hosts.wire.cut = was_cut;
  if (!c) return nullptr;
  TcpConnection& t = *c;
  t.rto_timer_.clear();
  t.iss_ = tcb.iss;
  t.ts_offset_ = tcb.iss * 2654435761u;
  const bool synchronized = tcb.state != TcpState::SynSent;
  if (synchronized) {
    // What the peer's SYN would have offered (no window scaling).
    TcpOptions peer;
    peer.mss = tcb.peer_mss;
    peer.sack_permitted = tcb.sack;
    if (tcb.timestamps) peer.timestamp = std::make_pair(tcb.ts_recent, 0u);
    t.negotiate_options(peer);
    t.irs_ = tcb.irs;
    t.rcv_nxt_ = tcb.rcv_nxt;
    t.rcv_adv_ = tcb.rcv_nxt;
    t.update_advertised_window();
    t.last_ack_sent_ = tcb.rcv_nxt;
    t.snd_wnd_ = t.max_snd_wnd_ = tcb.snd_wnd;
    t.snd_wl1_ = tcb.irs;
    t.snd_wl2_ = tcb.snd_una;
    t.fin_received_ = tcb.state == TcpState::CloseWait || tcb.state == TcpState::Closing ||
                      tcb.state == TcpState::LastAck || tcb.state == TcpState::TimeWait;
  }
  t.snd_una_ = tcb.snd_una;
  t.snd_nxt_ = t.snd_max_ = tcb.snd_nxt;
  t.recovery_.start(tcb.iss);
  t.fin_queued_ = sent_our_fin(tcb.state);
  const uint32_t data_end = t.fin_queued_ ? tcb.snd_nxt - 1 : tcb.snd_nxt;
  if (tcb.state == TcpState::SynSent || tcb.state == TcpState::SynReceived) t.data_start_ = tcb.iss + 1;
  else t.data_start_ = our_fin_acknowledged(tcb.state) ? data_end : tcb.snd_una;
  // The data in flight, as pattern bytes (test::pattern) from offset 0.
  if (data_end > t.data_start_) t.send_buffer_ = test::pattern(0, data_end - t.data_start_);
  if (synchronized && tcb.state != TcpState::SynReceived) t.congestion().start(t.mss_);
  if (t.sack_enabled_ && tcb.snd_nxt > tcb.snd_una)  // RACK's record (RFC 8985 §6.1)
    t.rack_.on_transmit(tcb.snd_una, tcb.snd_nxt, hosts.timers.now(), t.ts_now());
  if (tcb.state == TcpState::TimeWait) t.enter_time_wait();
  else t.enter_state(tcb.state);
  if (tcb.snd_nxt > tcb.snd_una) t.rto_timer_.set_after(t.rto_);  // RFC 6298 §5.1
  return c;
}

namespace test {

PeerByHand::PeerByHand(TwoHosts& hosts, const Tcb& tcb)
    : connection(TcpTestAccess::build(hosts, tcb)),
      recorder_(hosts, [](const SeenSegment& s) { return s.from == 0; }), hosts_(hosts), tcb_(tcb) {}

TcpHeader PeerByHand::segment(uint8_t flags, uint32_t seq) const {
  TcpHeader h;
  h.source_port = tcb_.remote_port;
  h.destination_port = tcb_.local_port;
  h.seq = seq;
  h.ack = tcb_.snd_nxt;
  h.flags = flags;
  h.window = 1000;
  return h;
}

void PeerByHand::send(const TcpHeader& h, const std::string& payload) {
  hosts_.a->receive(craft_tcp(ip_of(2), mac_of(2), ip_of(1), mac_of(1), h, payload));
}

size_t PeerByHand::acks_received() const {
  return static_cast<size_t>(std::count_if(seen.begin(), seen.end(), [](const SeenSegment& s) {
    return s.from == 0 && s.header.has(kTcpAck) && !s.header.has(kTcpRst) && s.payload == 0;
  }));
}

}  // namespace test
}  // namespace bypass::inet

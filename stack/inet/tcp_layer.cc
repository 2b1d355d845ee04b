#include "stack/inet/tcp_layer.h"

#include <algorithm>
#include <bit>
#include <tuple>

#include "base/log.h"
#include "stack/inet/tcp_receive_checksum.h"
#include "stack/inet/wire/checksum.h"
#include "stack/inet/wire/icmp.h"

namespace bypass::inet {

namespace {
// MSS values a SYN cookie can encode in 3 bits (RFC 4987 §3.6 leaves the table to the
// implementation); the largest entry not above the peer's MSS is used.
constexpr uint16_t kCookieMss[8] = {536, 1024, 1220, 1360, 1440, 1460, 4312, 8960};
constexpr auto kCookiePeriod = std::chrono::seconds(64);

uint64_t mix64(uint64_t x) {
  // splitmix64 finalizer: a fast bijective mixer.
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
}  // namespace

std::shared_ptr<TcpConnection> TcpListener::accept() {
  if (accept_head_ == accept_queue_.size()) return nullptr;
  auto connection = std::move(accept_queue_[accept_head_++]);
  if (accept_head_ == accept_queue_.size()) {
    accept_queue_.clear();  // keeps the capacity
    accept_head_ = 0;
  } else if (accept_head_ * 2 > accept_queue_.size()) {
    // Never fully drained: drop the taken half so the vector stays within twice the backlog.
    accept_queue_.erase(accept_queue_.begin(), accept_queue_.begin() + static_cast<ptrdiff_t>(accept_head_));
    accept_head_ = 0;
  }
  return connection;
}

TcpLayer::TcpLayer(const InetSettings& settings, TimerService& timers, Ipv4Layer& ip, Ipv6Layer& ip6,
                   NeighborCache& neighbors, PacketDevice& device, InetStats& stats, uint64_t secret_seed)
    : TcpConnectionOwner(timers, stats, output_path_), settings_(settings), ip_(ip), ip6_(ip6),
      neighbors_(neighbors), device_(device), output_path_(ip, ip6, device, stats),
      gro_(stats, [this](const FourTuple& tuple, TcpSegment&& segment) { dispatch(tuple, std::move(segment)); }) {
  secret_[0] = mix64(secret_seed ^ 0x243f6a8885a308d3ull);
  secret_[1] = mix64(secret_[0] ^ 0x13198a2e03707344ull);
  next_ephemeral_ = static_cast<uint32_t>(mix64(secret_[1]));
}

TcpLayer::~TcpLayer() {
  if (reaper_) timers_.cancel(reaper_);
  // Connections may outlive the layer in user hands; close them quietly first so none of their
  // timers remain armed.
  auto connections = connections_.drain();
  for (auto& connection : connections) {
    connection->handler_ = nullptr;
    connection->rto_timer_.clear();
  }
}

uint64_t TcpLayer::keyed_hash(const FourTuple& t, uint64_t extra) const {
  // Keyed mixing of the 4-tuple with a per-stack random secret (RFC 6528 §3 asks for a
  // pseudorandom function of the connection-id and a secret). Not a cryptographic MAC. All 32
  // octets of the two addresses go in, so IPv6 peers differing anywhere get unrelated ISNs.
  uint64_t h = secret_[0];
  h = mix64(h ^ t.local_ip.low_word() ^ std::rotl(t.remote_ip.low_word(), 32));
  h = mix64(h ^ t.local_ip.high_word());
  h = mix64(h ^ t.remote_ip.high_word());
  h = mix64(h ^ (uint64_t{t.local_port} << 16 | t.remote_port) ^ secret_[1]);
  return mix64(h ^ extra);
}

SeqNumber TcpLayer::generate_iss(const FourTuple& tuple) const {
  // RFC 6528 §3: ISN = M + F(localip, localport, remoteip, remoteport, secretkey), M a 4 us clock.
  uint64_t ticks = static_cast<uint64_t>(timers_.now().count() / 4000);
  return static_cast<uint32_t>(ticks + keyed_hash(tuple, 0));
}

bool TcpLayer::allow_challenge_ack() {
  TimePoint now = timers_.now();
  if (now - challenge_window_start_ >= std::chrono::seconds(1)) {
    challenge_window_start_ = now;
    challenge_acks_in_window_ = 0;
  }
  return challenge_acks_in_window_++ < settings_.tcp.max_challenge_acks_per_second;
}

std::shared_ptr<TcpListener> TcpLayer::listen(uint16_t port) {
  if (port == 0 || listeners_.count(port)) return nullptr;
  auto listener = std::make_shared<TcpListener>(port);
  listeners_.emplace(port, listener);
  return listener;
}

void TcpLayer::stop_listening(const std::shared_ptr<TcpListener>& listener) {
  listener->closed_ = true;
  listeners_.erase(listener->port());
  // Established connections nobody accepted have no owner left: reset them, as Linux does when a
  // listening socket closes, instead of leaving them in the table for as long as the peer is quiet.
  // (Half-open ones are reset when their handshake completes, in on_established.)
  std::vector<std::shared_ptr<TcpConnection>> unaccepted;
  while (auto connection = listener->accept()) unaccepted.push_back(std::move(connection));
  for (auto& connection : unaccepted) connection->abort();
}

std::shared_ptr<TcpConnection> TcpLayer::find(const FourTuple& tuple) const {
  const auto* connection = connections_.find(tuple);
  return connection ? *connection : nullptr;
}

IpAddress TcpLayer::local_address(const IpAddress& remote) const {
  // IPv6: RFC 6724 source selection (Ipv6Layer::source_address): the link-local address for a
  // link-local peer, else the configured one; :: while neither is usable (DAD, RFC 4862 §5.4).
  return remote.is_v4() ? IpAddress(settings_.address) : IpAddress(ip6_.source_address(remote.v6()));
}

std::shared_ptr<TcpConnection> TcpLayer::connect(IpAddress remote, uint16_t remote_port,
                                                 uint16_t local_port) {
  bool routed = false;
  if (remote.is_v4()) {
    Ipv4Address hop;
    routed = ip_.next_hop(remote.v4(), hop);
  } else {
    // Unicast only, and only with an address of our own (Ipv6Layer sends nothing without one).
    Ipv6Address hop;
    const Ipv6Address v6 = remote.v6();
    routed = !ip6_.source_address(v6).is_unspecified() && !v6.is_multicast() && !v6.is_unspecified() &&
             ip6_.next_hop(v6, hop);
  }
  if (!routed || remote_port == 0) {
    ++stats_.tx_no_route;
    return nullptr;
  }
  FourTuple tuple{local_address(remote), local_port, remote, remote_port};
  if (local_port != 0) {
    if (connections_.contains(tuple)) return nullptr;
  } else {
    uint32_t first = settings_.tcp.ephemeral_port_first;
    uint32_t range = settings_.tcp.ephemeral_port_last - first + 1u;
    bool found = false;
    for (uint32_t i = 0; i < range && !found; ++i) {
      uint32_t offset = (next_ephemeral_ + i) % range;
      tuple.local_port = static_cast<uint16_t>(first + offset);
      if (listeners_.count(tuple.local_port) || connections_.contains(tuple)) continue;
      if (port_filter_ && !port_filter_(tuple)) continue;
      next_ephemeral_ = offset + 1;
      found = true;
    }
    if (!found) return nullptr;
  }
  auto connection = std::make_shared<TcpConnection>(*this, tuple, settings_.tcp);
  connections_.insert(tuple, connection);
  connection->open_active();
  return connection;
}

uint32_t TcpLayer::path_mtu(const FourTuple& tuple) const {
  return tuple.is_v6() ? ip6_.path_mtu(tuple.remote_ip.v6()) : device_.mtu();
}

void TcpLayer::receive(const Ipv4Header& ip, Packet&& packet) {
  if (!tcp_receive_checksum_ok(ip.source, ip.destination, packet, stats_)) return;
  if (ip.destination.is_broadcast()) {
    ++stats_.rx_malformed_tcp;
    BYPASS_LOG(Debug, "tcp", "dropped segment from %s: to a broadcast address", ip.source.to_string().c_str());
    return;
  }
  // Merging needs the plain 20-byte IP header of every datagram it joins (tcp_gro.h).
  const bool coalescable = ip.header_length == Ipv4Header::kMinLength && !packet.rx_reassembled;
  receive_verified(ip.source, ip.destination, std::move(packet), coalescable);
}

void TcpLayer::receive_verified(const IpAddress& source, const IpAddress& destination, Packet&& packet,
                                bool coalescable) {
  TcpSegment segment;
  uint8_t raw[TcpHeader::kMaxLength];
  size_t copy = std::min(packet.data.length(), sizeof(raw));
  packet.data.copy_out(0, copy, raw);
  const char* error = TcpHeader::parse(raw, copy, segment.header);
  if (!error && segment.header.has(kTcpSyn) && segment.header.has(kTcpFin))
    error = "tcp: SYN and FIN together";
  if (error) {
    ++stats_.rx_malformed_tcp;
    BYPASS_LOG(Debug, "tcp", "dropped segment from %s: %s", source.to_string().c_str(), error);
    return;
  }
  ++stats_.tcp_segments_received;
  packet.data.trim_front(segment.header.header_length);
  segment.payload = std::move(packet.data);
  if (packet.rx_lro_segment_size != 0) {
    // The device merged this many wire segments (LRO); TCP acknowledges them as a coalesced unit.
    const size_t size = packet.rx_lro_segment_size;
    segment.segments = static_cast<uint16_t>(
        std::clamp<size_t>((segment.payload.length() + size - 1) / size, 1, UINT16_MAX));
    ++stats_.tcp_lro_frames;
    stats_.tcp_lro_segments += segment.segments;
  }
  FourTuple tuple{destination, segment.header.destination_port, source, segment.header.source_port};
  gro_.receive(tuple, std::move(segment), coalescable);
}

void TcpLayer::dispatch(const FourTuple& tuple, TcpSegment&& segment) {
  if (auto* found = connections_.find(tuple)) {
    auto connection = *found;  // keep it alive through the call
    if (connection->state() == TcpState::TimeWait && reopen_from_time_wait(*connection, tuple, segment))
      return;
    connection->on_segment(std::move(segment));
    return;
  }
  const TcpHeader& h = segment.header;
  if (auto it = listeners_.find(tuple.local_port); it != listeners_.end()) {
    auto listener = it->second;
    // RFC 9293 §3.10.7.2 LISTEN: ignore RST; an ACK is unacceptable (reset) unless it returns
    // one of our SYN cookies; a SYN opens a connection.
    if (h.has(kTcpRst)) return;
    if (h.has(kTcpAck) && !h.has(kTcpSyn)) {
      if (settings_.tcp.syn_cookies && accept_cookie(*listener, tuple, segment)) return;
      return send_reset_for(tuple, segment);
    }
    if (h.has(kTcpSyn) && !h.has(kTcpAck))
      return listen_syn(*listener, tuple, std::move(segment), generate_iss(tuple));
    return;
  }
  ++stats_.tcp_dropped_no_connection;
  if (!h.has(kTcpRst)) send_reset_for(tuple, segment);
}

void TcpLayer::begin_burst() {
  if (device_waiters_head_ != device_waiters_.size() && !device_.transmit_backlogged()) resume_device_waiters();
  if (settings_.tcp.gro) gro_.begin_burst();
}

void TcpLayer::wait_for_device(TcpConnection& connection) {
  device_waiters_.push_back(connection.weak_from_this());
}

void TcpLayer::resume_device_waiters() {
  // One that fills the device again stops the round; the rest keep their place. A connection
  // that waits again goes to the back (its output() appends it): each gets a turn.
  while (device_waiters_head_ != device_waiters_.size() && !device_.transmit_backlogged()) {
    std::shared_ptr<TcpConnection> connection = device_waiters_[device_waiters_head_++].lock();
    if (!connection) continue;  // closed meanwhile
    connection->waiting_for_device_ = false;
    connection->output();
    // Its delayed-ACK timer passed over the ACK while it waited: one still owed, because nothing
    // went out now to carry it, goes on the timer again (RFC 9293 §3.8.6.3 bounds the delay).
    if (!connection->waiting_for_device_ && connection->rcv_nxt_ != connection->last_ack_sent_)
      connection->schedule_ack(false);
  }
  if (device_waiters_head_ == device_waiters_.size()) {
    device_waiters_.clear();
    device_waiters_head_ = 0;
  } else if (device_waiters_head_ > device_waiters_.size() / 2) {
    device_waiters_.erase(device_waiters_.begin(), device_waiters_.begin() + static_cast<std::ptrdiff_t>(device_waiters_head_));
    device_waiters_head_ = 0;
  }
}

void TcpLayer::end_burst() { gro_.end_burst(); }

void TcpLayer::send_reset_for(const FourTuple& tuple, const TcpSegment& segment) {
  // RFC 9293 §3.10.7.1: <SEQ=SEG.ACK><CTL=RST> if ACK was set, otherwise
  // <SEQ=0><ACK=SEG.SEQ+SEG.LEN><CTL=RST,ACK>.
  TcpHeader rst;
  rst.source_port = tuple.local_port;
  rst.destination_port = tuple.remote_port;
  if (segment.header.has(kTcpAck)) {
    rst.seq = segment.header.ack;
    rst.flags = kTcpRst;
  } else {
    rst.ack = segment.header.seq + segment.length();
    rst.flags = kTcpRst | kTcpAck;
  }
  ++stats_.tcp_rst_sent;
  output_path_.send(tuple, rst, {});
}

bool TcpLayer::reopen_from_time_wait(TcpConnection& old, const FourTuple& tuple, TcpSegment& segment) {
  // RFC 1122 §4.2.2.13: a SYN for a tuple in TIME-WAIT may open a new incarnation when it is
  // provably new: its sequence number beyond everything the old one received, or (RFC 6191 §2)
  // its timestamp newer than the old one's TS.Recent. The new ISS starts beyond the window of
  // everything the old incarnation sent, so its duplicates cannot be taken for new data. A client
  // that cycles through its ephemeral ports faster than 2 MSL (Linux does this too) would
  // otherwise wait for TIME-WAIT, or fail, on every reuse. An old duplicate SYN leaves TIME-WAIT
  // as it was (the caller hands it to the connection).
  const TcpHeader& h = segment.header;
  if (!h.has(kTcpSyn) || h.has(kTcpAck) || h.has(kTcpRst)) return false;
  auto it = listeners_.find(tuple.local_port);
  if (it == listeners_.end()) return false;
  const bool newer_sequence = h.seq > old.rcv_nxt_;
  const bool newer_timestamp =
      old.ts_enabled_ && h.options.timestamp && timestamp_before(old.ts_recent_, h.options.timestamp->first);
  if (!newer_sequence && !newer_timestamp) return false;
  // Without room for a real connection the SYN gets no cookie here: a cookie ISS cannot promise
  // to lie beyond the old incarnation's sequence space.
  auto listener = it->second;  // the old connection's close event may stop the listener
  if (listener->acceptable() >= settings_.tcp.accept_backlog ||
      listener->half_open_ >= settings_.tcp.syn_backlog)
    return false;
  const SeqNumber iss = old.snd_max_ + 65535u + 2u;  // as Linux: past the largest window it could have used
  old.terminate(TcpError::None);                    // leaves the table (on_closed)
  ++stats_.tcp_time_wait_reopened;
  if (listener->closed_) return true;  // the SYN goes unanswered, as to any closed port mid-call
  listen_syn(*listener, tuple, std::move(segment), iss);
  return true;
}

void TcpLayer::listen_syn(TcpListener& listener, const FourTuple& tuple, TcpSegment&& segment,
                          SeqNumber iss) {
  if (listener.acceptable() >= settings_.tcp.accept_backlog) {
    ++stats_.tcp_syn_dropped_backlog;
    return;
  }
  if (listener.half_open_ >= settings_.tcp.syn_backlog) {
    if (!settings_.tcp.syn_cookies) {
      ++stats_.tcp_syn_dropped_backlog;
      return;
    }
    // RFC 4987 §3.6: answer statelessly; the ISN encodes what we need to rebuild the connection.
    uint16_t peer_mss = segment.header.options.mss.value_or(536);
    uint8_t index = 0;
    // What a segment to this peer may carry: the path MTU less 40 (IPv4) or 60 (IPv6) bytes of
    // IP and TCP header (RFC 9293 §3.7.1, RFC 8200 §5).
    const uint16_t our_mss = static_cast<uint16_t>(path_mtu(tuple) - (tuple.is_v6() ? 60u : 40u));
    for (uint8_t i = 0; i < 8; ++i)
      if (kCookieMss[i] <= peer_mss && kCookieMss[i] <= our_mss) index = i;
    uint32_t counter = static_cast<uint32_t>(timers_.now() / kCookiePeriod);
    TcpHeader synack;
    synack.source_port = tuple.local_port;
    synack.destination_port = tuple.remote_port;
    synack.seq = make_cookie(tuple, segment.header.seq.raw(), counter, index);
    synack.ack = segment.header.seq + 1;
    synack.flags = kTcpSyn | kTcpAck;
    synack.window = static_cast<uint16_t>(std::min<size_t>(settings_.tcp.rcv_buffer, 65535));
    synack.options.mss = our_mss;
    ++stats_.tcp_syn_cookies_sent;
    output_path_.send(tuple, synack, {});
    return;
  }
  auto connection = std::make_shared<TcpConnection>(*this, tuple, settings_.tcp);
  connections_.insert(tuple, connection);
  ++listener.half_open_;
  connection->half_open_listener_ = listeners_[listener.port()];
  connection->open_passive(segment, iss);
}

uint32_t TcpLayer::make_cookie(const FourTuple& tuple, uint32_t peer_seq, uint32_t counter,
                               uint8_t mss_index) const {
  uint32_t hash = static_cast<uint32_t>(keyed_hash(tuple, counter));
  return (counter & 31u) << 27 | uint32_t{mss_index} << 24 | ((hash + peer_seq) & 0xffffffu);
}

bool TcpLayer::accept_cookie(TcpListener& listener, const FourTuple& tuple, TcpSegment& segment) {
  // The cookie packs bits into the sequence number's 32 (make_cookie): raw values here.
  uint32_t cookie = (segment.header.ack - 1).raw();
  uint32_t peer_seq = (segment.header.seq - 1).raw();
  uint32_t now_counter = static_cast<uint32_t>(timers_.now() / kCookiePeriod);
  uint8_t index = static_cast<uint8_t>((cookie >> 24) & 7);
  for (uint32_t age = 0; age < 2; ++age) {  // valid for one to two periods
    uint32_t counter = now_counter - age;
    if (make_cookie(tuple, peer_seq, counter, index) != cookie) continue;
    if (listener.acceptable() >= settings_.tcp.accept_backlog) return false;
    auto connection = std::make_shared<TcpConnection>(*this, tuple, settings_.tcp);
    connections_.insert(tuple, connection);
    ++stats_.tcp_syn_cookies_accepted;
    ++stats_.tcp_connections_established;
    connection->open_from_cookie(segment, cookie, kCookieMss[index]);
    listener.accept_queue_.push_back(connection);
    if (listener.handler_) listener.handler_();
    // The ACK may carry data.
    if (!segment.payload.empty() || segment.header.has(kTcpFin)) connection->on_segment(std::move(segment));
    return true;
  }
  return false;
}

void TcpLayer::on_established(TcpConnection& connection) {
  if (connection.half_open_listener_.expired() && !connection.passive_) return;
  auto listener = connection.half_open_listener_.lock();
  connection.half_open_listener_.reset();
  if (!listener || listener->closed_) {
    connection.abort();
    return;
  }
  --listener->half_open_;
  listener->accept_queue_.push_back(connection.shared_from_this());
  if (listener->handler_) listener->handler_();
}

void TcpLayer::on_closed(TcpConnection& connection) {
  if (auto listener = connection.half_open_listener_.lock()) --listener->half_open_;
  connection.half_open_listener_.reset();
  auto* found = connections_.find(connection.tuple());
  if (!found || found->get() != &connection) return;
  graveyard_.push_back(connections_.take(connection.tuple()));
  if (!reaper_)
    reaper_ = timers_.schedule(Duration::zero(), [this] {
      reaper_ = 0;
      graveyard_.clear();
    });
}

void TcpLayer::on_unreachable(uint8_t code, uint16_t mtu, const Ipv4Header& quoted,
                              const uint8_t* l4, size_t l4_length) {
  // RFC 792: the quote holds at least the first 8 bytes of the segment: ports and sequence number.
  if (l4_length < tcp_field::Seq::kEnd) return;
  const TcpView quoted_tcp(l4, l4_length);
  FourTuple tuple{quoted.source, quoted_tcp.src_port(), quoted.destination, quoted_tcp.dst_port()};
  auto connection = find(tuple);
  if (!connection) return;
  // RFC 5927 §4.1: act only when the quoted sequence number is in flight.
  const SeqNumber seq = quoted_tcp.seq_number();
  if (!seq_in(seq, connection->snd_una_, connection->snd_max_ + 1)) return;
  if (code == IcmpHeader::kFragmentationNeeded) {
    if (mtu >= 68) connection->on_path_mtu(mtu);  // RFC 1191 §4
  } else if (code == IcmpHeader::kProtocolUnreachable || code == IcmpHeader::kPortUnreachable) {
    connection->on_unreachable();
  }
}

size_t TcpLayer::unfinished_connections() const {
  size_t unfinished = 0;
  connections_.for_each([&](const FourTuple&, const std::shared_ptr<TcpConnection>& connection) {
    unfinished += connection->state() != TcpState::TimeWait;
  });
  return unfinished;
}

size_t TcpLayer::unacknowledged_connections() const {
  // Our FIN is unacknowledged in FIN-WAIT-1, CLOSING and LAST-ACK (RFC 9293 §3.3.2); the send
  // buffer holds unsent and unacknowledged data.
  size_t count = 0;
  connections_.for_each([&](const FourTuple&, const std::shared_ptr<TcpConnection>& connection) {
    const TcpConnection& c = *connection;
    count += !c.send_buffer_.empty() || c.state() == TcpState::FinWait1 || c.state() == TcpState::Closing ||
             c.state() == TcpState::LastAck;
  });
  return count;
}

TcpQueuedBytes TcpLayer::queued_bytes() const {
  TcpQueuedBytes bytes;
  connections_.for_each([&](const FourTuple&, const std::shared_ptr<TcpConnection>& connection) {
    const TcpConnection& c = *connection;
    // The send buffer holds the unacknowledged bytes first, then the unsent ones; SND.NXT may
    // have moved back to SND.UNA after a timeout, so the split follows SND.NXT, not SND.MAX.
    const uint64_t buffered = c.send_buffer_.length();
    const uint64_t sent = std::min<uint64_t>(buffered, c.snd_nxt_ - c.snd_una_);
    bytes.unacknowledged += sent;
    bytes.unsent += buffered - sent;
    bytes.unread += c.receive_queue_.length();
  });
  return bytes;
}

std::vector<ConnectionInfo> TcpLayer::connections() const {
  std::vector<ConnectionInfo> out;
  out.reserve(connections_.size());
  connections_.for_each([&](const FourTuple& tuple, const std::shared_ptr<TcpConnection>& c) {
    out.push_back(ConnectionInfo{tuple, c->state(), c->cwnd(), c->ssthresh(), c->send_mss(), c->srtt(),
                                 c->rttvar(), c->rto(), c->retransmitted_segments(), c->timeouts(),
                                 c->bytes_received(), c->bytes_acked()});
  });
  auto key = [](const ConnectionInfo& i) {
    return std::tie(i.tuple.local_ip, i.tuple.local_port, i.tuple.remote_ip, i.tuple.remote_port);
  };
  std::sort(out.begin(), out.end(), [&](const ConnectionInfo& a, const ConnectionInfo& b) { return key(a) < key(b); });
  return out;
}

std::vector<uint16_t> TcpLayer::listening_ports() const {
  std::vector<uint16_t> out;
  for (const auto& [port, listener] : listeners_) out.push_back(port);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace bypass::inet

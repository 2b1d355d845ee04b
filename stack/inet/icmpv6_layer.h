// ICMPv6 (RFC 4443) for one stack instance: echo replies to echo requests (§4.2), rate-limited
// error generation with the §2.4 (e) exceptions, errors received about packets we sent (Packet
// Too Big updates the path MTU, RFC 8201 §4, once a TCP quote has validated, RFC 5927 §4.1; every
// error is handed to the transport), and the
// Neighbor Discovery messages passed to the neighbour cache or validated and ignored.
#pragma once

#include <functional>

#include "stack/inet/device.h"
#include "stack/inet/inet_options.h"
#include "stack/inet/inet_stats.h"
#include "stack/inet/ipv6_address_set.h"
#include "stack/inet/ipv6_path_mtu.h"
#include "stack/inet/neighbor_cache.h"
#include "stack/inet/timer_service.h"
#include "stack/inet/wire/icmpv6.h"
#include "stack/inet/wire/ipv6.h"

namespace bypass::inet {

class Ipv6Layer;

class Icmpv6Layer {
 public:
  // An echo reply addressed to us: `message` is the whole ICMPv6 message (checksum verified).
  using EchoReplyReceiver = std::function<void(const Ipv6Header&, const Icmpv6Header&, const BufferList& message)>;
  // An ICMPv6 error about a packet we sent (its quoted source is our address): the error's header
  // (type, code, MTU or pointer), the quoted IPv6 header, and the quoted bytes after it (extension
  // headers if it had any, then the upper-layer header; at least 8 bytes). For Packet Too Big the
  // path MTU is already updated when this runs (only for one whose quote validated, see below).
  using ErrorReceiver = std::function<void(const Icmpv6Header& error, const Ipv6Header& quoted,
                                           const uint8_t* after_header, size_t length)>;

  // Whether a quoted TCP segment (`quoted`, then `length` bytes from its TCP header on) belongs to
  // a connection and quotes a sequence number in flight (RFC 5927 §4.1). A Packet Too Big whose
  // quote fails it leaves the path MTU alone.
  using TcpQuoteValidator = std::function<bool(const Ipv6Header& quoted, const uint8_t* after_header, size_t length)>;

  Icmpv6Layer(const InetSettings& settings, TimerService& timers, PacketDevice& device, Ipv6Layer& ip,
              NeighborCache& neighbors, Ipv6AddressSet& addresses, Ipv6PathMtu& path_mtu, InetStats& stats);

  // `packet.data` is the ICMPv6 message; `ip` its packet's header (payload_length = its length);
  // `link_source` the Ethernet source of its frame, zero if unknown (reassembled).
  void receive(const Ipv6Header& ip, Packet&& packet, const MacAddress& link_source = {});
  // Sends `error` (type, code, rest) about `invoking`, the whole offending IPv6 packet whose
  // header is `invoking_header`, unless RFC 4443 §2.4 (e) forbids it or the rate limit (§2.4 (f))
  // is exhausted (counted). Returns whether it left.
  bool send_error(const Icmpv6Header& error, const Ipv6Header& invoking_header, const BufferList& invoking);

  void set_echo_reply_receiver(EchoReplyReceiver receiver) { echo_reply_ = std::move(receiver); }
  void set_error_receiver(ErrorReceiver receiver) { error_receiver_ = std::move(receiver); }
  void set_tcp_quote_validator(TcpQuoteValidator validator) { tcp_quote_validator_ = std::move(validator); }

  // Quoted bytes read from an error, enough for the IPv6 header, a few extension headers and the
  // first 8 bytes of a transport header (all RFC 5927 §4.1-style checks need).
  static constexpr size_t kQuotedBytes = Ipv6Header::kLength + 128;

 private:
  void reply_to_echo(const Ipv6Header& ip, const Icmpv6Header& request, const BufferList& message);
  void receive_error(const Icmpv6Header& icmp, const BufferList& message);
  // Router messages: a host validates them (RFC 4861 §6.1) and, having no autoconfiguration yet,
  // ignores them; invalid ones are counted.
  void receive_router_message(const Ipv6Header& ip, const Icmpv6Header& icmp, const BufferList& message);
  // Token bucket of RFC 4443 §2.4 (f): `icmp_errors_per_second`, bursts of `icmp_error_burst`.
  bool take_error_token();

  const InetSettings& settings_;
  TimerService& timers_;
  PacketDevice& device_;
  Ipv6Layer& ip_;
  NeighborCache& neighbors_;
  Ipv6AddressSet& addresses_;
  Ipv6PathMtu& path_mtu_;
  InetStats& stats_;
  uint32_t error_tokens_;
  TimePoint tokens_updated_{0};
  EchoReplyReceiver echo_reply_;
  ErrorReceiver error_receiver_;
  TcpQuoteValidator tcp_quote_validator_;
};

}  // namespace bypass::inet

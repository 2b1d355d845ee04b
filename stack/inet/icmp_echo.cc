#include "stack/inet/icmp_echo.h"

#include "base/log.h"
#include "stack/inet/ipv4_layer.h"

namespace bypass::inet {

IcmpEcho::~IcmpEcho() {
  for (auto& [k, request] : outstanding_) timers_.cancel(request.timer);
}

std::string IcmpEcho::request_data(size_t length) {
  std::string data(length, '\0');
  for (size_t i = 0; i < length; ++i) data[i] = static_cast<char>((i + 8) & 0xff);
  return data;
}

std::string IcmpEcho::request(Ipv4Address destination, uint16_t identifier, uint16_t sequence, size_t data_bytes,
                              Duration timeout, Callback callback) {
  if (data_bytes > kMaxDataBytes) return "data larger than " + std::to_string(kMaxDataBytes) + " bytes";
  const uint64_t k = key(destination, identifier, sequence);
  if (outstanding_.count(k)) return "identifier and sequence number already outstanding";
  Ipv4Address hop;
  if (!ip_.next_hop(destination, hop)) return "no route (outside the netmask and no gateway)";
  // RFC 792: identifier and sequence number go in the second word of the header.
  BufferList body;
  body.append_copy(request_data(data_bytes));
  BufferSegment head = BufferSegment::allocate(kFrameHeadroom + IcmpHeader::kLength);
  IcmpHeader{IcmpHeader::kEchoRequest, 0, 0, uint32_t{identifier} << 16 | sequence}.emit(
      reinterpret_cast<uint8_t*>(head.data()) + kFrameHeadroom, body);
  Packet frame;
  frame.data.append(std::move(head));
  frame.data.append(std::move(body));
  // Book-keeping before sending: on an in-memory wire the reply may arrive inside send().
  Outstanding& entry = outstanding_[k];
  entry.peer = destination;
  entry.data_bytes = data_bytes;
  entry.sent_at = timers_.now();
  entry.callback = std::move(callback);
  entry.timer = timers_.schedule(timeout, [this, k] { on_timeout(k); });
  ++stats_.icmp_echo_requests_sent;
  // Large requests are fragmented (RFC 791), as ping -s does.
  ip_.send(destination, IpProtocol::Icmp, std::move(frame), false);
  return {};
}

void IcmpEcho::on_timeout(uint64_t k) {
  auto it = outstanding_.find(k);
  if (it == outstanding_.end()) return;
  EchoResult result;
  result.outcome = EchoResult::Outcome::Timeout;
  result.peer = it->second.peer;
  result.identifier = static_cast<uint16_t>(k >> 16);
  result.sequence = static_cast<uint16_t>(k);
  Callback callback = std::move(it->second.callback);
  outstanding_.erase(it);
  if (callback) callback(result);
}

void IcmpEcho::on_reply(const Ipv4Header& ip, const IcmpHeader& icmp, const BufferList& message) {
  const auto identifier = static_cast<uint16_t>(icmp.rest >> 16);
  const auto sequence = static_cast<uint16_t>(icmp.rest);
  auto it = outstanding_.find(key(ip.source, identifier, sequence));
  if (it == outstanding_.end()) {
    // Late (after its timeout), duplicated, or someone else's: ping(8) would print "DUP!" or ignore.
    ++stats_.icmp_echo_replies_unmatched;
    BYPASS_LOG(Debug, "icmp", "echo reply from %s id %u seq %u matches no request", ip.source.to_string().c_str(),
               identifier, sequence);
    return;
  }
  ++stats_.icmp_echo_replies_received;
  Outstanding request = std::move(it->second);
  outstanding_.erase(it);
  timers_.cancel(request.timer);
  EchoResult result;
  result.outcome = EchoResult::Outcome::Reply;
  result.peer = ip.source;
  result.identifier = identifier;
  result.sequence = sequence;
  result.bytes = message.length();
  result.ttl = ip.ttl;
  result.rtt = timers_.now() - request.sent_at;
  const size_t data_length = message.length() - IcmpHeader::kLength;
  result.data_intact = data_length == request.data_bytes &&
                       message.sub(IcmpHeader::kLength, data_length).to_string() == request_data(data_length);
  if (request.callback) request.callback(result);
}

}  // namespace bypass::inet

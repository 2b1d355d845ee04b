// ICMP echo requests sent by this stack and the matching of their replies (RFC 792, "Echo or Echo
// Reply Message"): what ping(8) does, from inside the userspace stack. Replies are matched on
// (peer, identifier, sequence number); each request completes exactly once, with its reply or at
// its timeout. Runs on the owning worker's thread, like the rest of the stack.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>

#include "base/buffer_list.h"
#include "stack/inet/inet_stats.h"
#include "stack/inet/timer_service.h"
#include "stack/inet/wire/icmp.h"
#include "stack/inet/wire/ipv4.h"

namespace bypass::inet {

class Ipv4Layer;

struct EchoResult {
  enum class Outcome { Reply, Timeout };
  Outcome outcome = Outcome::Timeout;
  Ipv4Address peer;
  uint16_t identifier = 0;
  uint16_t sequence = 0;
  size_t bytes = 0;         // ICMP message length of the reply (header + data), as ping(8) prints it
  uint8_t ttl = 0;          // of the reply's IPv4 header
  Duration rtt{0};
  bool data_intact = true;  // RFC 792: the reply must return the request's data unchanged
};

class IcmpEcho {
 public:
  using Callback = std::function<void(const EchoResult&)>;

  IcmpEcho(Ipv4Layer& ip, TimerService& timers, InetStats& stats) : ip_(ip), timers_(timers), stats_(stats) {}
  ~IcmpEcho();  // outstanding requests are dropped without their callbacks
  IcmpEcho(const IcmpEcho&) = delete;
  IcmpEcho& operator=(const IcmpEcho&) = delete;

  // Sends one echo request carrying `data_bytes` bytes of data. Returns an empty string when the
  // request left, and `callback` will run exactly once (reply or timeout); otherwise the reason it
  // was not sent ("no route", "already outstanding") and `callback` never runs.
  std::string request(Ipv4Address destination, uint16_t identifier, uint16_t sequence, size_t data_bytes,
                      Duration timeout, Callback callback);
  // An echo reply for us (from Ipv4Layer); `message` is the whole ICMP message, checksum verified.
  void on_reply(const Ipv4Header& ip, const IcmpHeader& icmp, const BufferList& message);
  size_t outstanding() const { return outstanding_.size(); }

  // The data of a request of `length` bytes: byte i is (i + 8) mod 256, ping(8)'s pattern after its
  // 8-byte timestamp.
  static std::string request_data(size_t length);
  static constexpr size_t kMaxDataBytes = 65535 - Ipv4Header::kMinLength - IcmpHeader::kLength;

 private:
  struct Outstanding {
    Ipv4Address peer;
    size_t data_bytes = 0;
    TimePoint sent_at{0};
    TimerService::TimerId timer = 0;
    Callback callback;
  };
  static uint64_t key(Ipv4Address peer, uint16_t identifier, uint16_t sequence) {
    return uint64_t{peer.value} << 32 | uint32_t{identifier} << 16 | sequence;
  }
  void on_timeout(uint64_t key);

  Ipv4Layer& ip_;
  TimerService& timers_;
  InetStats& stats_;
  std::unordered_map<uint64_t, Outstanding> outstanding_;
};

}  // namespace bypass::inet

// Ceph's identity types as they appear on the wire (src/msg/msg_types.h):
//  - EntityName: entity_name_t, a type byte plus a number ("osd.3", "client.4127");
//  - EntityAddr: entity_addr_t, an address type (legacy v1, msgr2, any), a nonce and a sockaddr;
//  - EntityAddrVec: entity_addrvec_t, the list of addresses one entity listens on.
// Encoding follows the MSG_ADDR2 (nautilus and later) format that msgr2 requires.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "msgr/wire/codec.h"

namespace bypass::msgr {

// CEPH_ENTITY_TYPE_* (src/include/msgr.h).
enum class EntityType : uint8_t {
  Mon = 0x01,
  Mds = 0x02,
  Osd = 0x04,
  Client = 0x08,
  Mgr = 0x10,
  Auth = 0x20,
  Any = 0xff,
};

// "mon", "osd", "client", ... as Ceph prints them; "unknown" for any other value.
const char* entity_type_name(EntityType type);
// "mon", "osd", ... -> type; false when unknown.
bool parse_entity_type(std::string_view text, EntityType* out);

// Who a peer is (entity_name_t): its type and its number within that type.
struct EntityName {
  EntityType type = EntityType::Client;  // the role: mon, osd, client, ...
  int64_t num = 0;  // -1 (CEPH_ENTITY_NAME_NEW) for a client that has not been assigned one

  std::string to_string() const;  // "osd.12": type name, a dot, the number
  // "client.0", "osd.12", "mon.-1"; false on anything else.
  static bool parse(std::string_view text, EntityName* out);
  bool operator==(const EntityName&) const = default;  // same type and number

  // entity_name_t on the wire: __u8 type, __le64 num.
  void encode(wire::Encoder& enc) const;
  // Reads what encode() writes; throws wire::DecodeError on short input.
  static EntityName decode(wire::Decoder& dec);
};

// Where a peer listens (entity_addr_t): the protocol it speaks there, a nonce that tells
// restarted processes on the same address apart, and an IPv4 or IPv6 socket address.
struct EntityAddr {
  // entity_addr_t::TYPE_*.
  enum Type : uint32_t { kNone = 0, kLegacy = 1, kMsgr2 = 2, kAny = 3 };

  uint32_t type = kNone;  // a Type: which protocol the address speaks
  uint32_t nonce = 0;     // differs per process instance, so a restart is seen as a new peer
  sockaddr_storage storage{};  // family AF_UNSPEC means "no address" (blank)

  // An msgr2 address for the socket address `sa` (e.g. from getsockname); blank when `len` does
  // not fit sockaddr_storage.
  static EntityAddr msgr2(const sockaddr* sa, socklen_t len, uint32_t nonce);
  // "v2:1.2.3.4:3300/123", "v1:...", "any:...", "[::1]:6800" (no prefix means v2); nonce optional.
  static bool parse(std::string_view text, EntityAddr* out);

  int family() const { return storage.ss_family; }  // AF_INET, AF_INET6 or AF_UNSPEC
  // No specific IP: 0.0.0.0, :: (a wildcard bind) or no address at all.
  bool is_blank_ip() const;
  uint16_t port() const;  // in host byte order; 0 when there is no address
  void set_port(uint16_t port);  // host byte order; ignored when there is no address
  // The length of the sockaddr for its family (0 without an address), for bind/connect.
  socklen_t sockaddr_len() const;
  // The address as a sockaddr for bind/connect, valid for sockaddr_len() bytes.
  const sockaddr* sockaddr_ptr() const { return reinterpret_cast<const sockaddr*>(&storage); }
  // Same address and port (ignores nonce and type).
  bool same_ip_port(const EntityAddr& other) const;
  std::string ip_string() const;  // "127.0.0.1" or "::1" (no port); "-" without an address
  std::string ip_port_string() const;  // "127.0.0.1:6800" or "[::1]:6800" (SocketAddress::parse's form)
  std::string to_string() const;  // "v2:127.0.0.1:3300/0"
  bool operator==(const EntityAddr& other) const;  // type, nonce, family, IP and port all equal

  // entity_addr_t in the MSG_ADDR2 form: marker 1, then a versioned struct of type, nonce and
  // sockaddr (family as __le16).
  void encode(wire::Encoder& enc) const;
  // Accepts the MSG_ADDR2 form and the legacy (marker 0) form; throws wire::DecodeError on an
  // unknown marker, type or family, or a sockaddr length that does not match its family.
  static EntityAddr decode(wire::Decoder& dec);
};

// Every address one entity listens on (entity_addrvec_t), e.g. its msgr2 and legacy ports.
struct EntityAddrVec {
  std::vector<EntityAddr> addrs;  // in the order the entity advertises them

  bool empty() const { return addrs.empty(); }  // no address known (yet)
  // The msgr2 address, if any (else the first).
  const EntityAddr* msgr2_addr() const;
  std::string to_string() const;  // "[v2:1.2.3.4:3300/0,v1:1.2.3.4:6789/0]"
  bool operator==(const EntityAddrVec&) const = default;  // same addresses in the same order

  // entity_addrvec_t with MSG_ADDR2: marker 2, __le32 count, then each address.
  void encode(wire::Encoder& enc) const;
  // Reads what encode() writes, or a single entity_addr_t (marker 0 or 1) from older encoders;
  // a count above kMaxAddrs or an unknown marker throws wire::DecodeError.
  static EntityAddrVec decode(wire::Decoder& dec);
  // Most addresses decode() accepts, so a bogus count cannot make it allocate without bound.
  static constexpr uint32_t kMaxAddrs = 16;
};

}  // namespace bypass::msgr

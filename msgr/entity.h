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

const char* entity_type_name(EntityType type);
// "mon", "osd", ... -> type; false when unknown.
bool parse_entity_type(std::string_view text, EntityType* out);

struct EntityName {
  EntityType type = EntityType::Client;
  int64_t num = 0;  // -1 (CEPH_ENTITY_NAME_NEW) for a client that has not been assigned one

  std::string to_string() const;
  // "client.0", "osd.12", "mon.-1"; false on anything else.
  static bool parse(std::string_view text, EntityName* out);
  bool operator==(const EntityName&) const = default;

  void encode(wire::Encoder& enc) const;
  static EntityName decode(wire::Decoder& dec);
};

struct EntityAddr {
  // entity_addr_t::TYPE_*.
  enum Type : uint32_t { kNone = 0, kLegacy = 1, kMsgr2 = 2, kAny = 3 };

  uint32_t type = kNone;
  uint32_t nonce = 0;
  sockaddr_storage storage{};  // family AF_UNSPEC means "no address" (blank)

  static EntityAddr msgr2(const sockaddr* sa, socklen_t len, uint32_t nonce);
  // "v2:1.2.3.4:3300/123", "v1:...", "any:...", "[::1]:6800" (no prefix means v2); nonce optional.
  static bool parse(std::string_view text, EntityAddr* out);

  int family() const { return storage.ss_family; }
  bool is_blank_ip() const;
  uint16_t port() const;
  void set_port(uint16_t port);
  socklen_t sockaddr_len() const;
  const sockaddr* sockaddr_ptr() const { return reinterpret_cast<const sockaddr*>(&storage); }
  // Same address and port (ignores nonce and type).
  bool same_ip_port(const EntityAddr& other) const;
  std::string ip_string() const;
  std::string to_string() const;  // "v2:127.0.0.1:3300/0"
  bool operator==(const EntityAddr& other) const;

  void encode(wire::Encoder& enc) const;
  static EntityAddr decode(wire::Decoder& dec);
};

struct EntityAddrVec {
  std::vector<EntityAddr> addrs;

  bool empty() const { return addrs.empty(); }
  // The msgr2 address, if any (else the first).
  const EntityAddr* msgr2_addr() const;
  std::string to_string() const;  // "[v2:1.2.3.4:3300/0,v1:1.2.3.4:6789/0]"
  bool operator==(const EntityAddrVec&) const = default;

  void encode(wire::Encoder& enc) const;
  static EntityAddrVec decode(wire::Decoder& dec);
  static constexpr uint32_t kMaxAddrs = 16;
};

}  // namespace bypass::msgr

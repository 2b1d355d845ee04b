#include "msgr/entity.h"

#include <arpa/inet.h>

#include <charconv>
#include <cstring>

namespace bypass::msgr {

namespace {
constexpr struct {
  EntityType type;
  const char* name;
} kTypeNames[] = {
    {EntityType::Mon, "mon"},   {EntityType::Mds, "mds"},   {EntityType::Osd, "osd"},
    {EntityType::Client, "client"}, {EntityType::Mgr, "mgr"}, {EntityType::Auth, "auth"},
    {EntityType::Any, "any"},
};

template <typename T>
bool parse_number(std::string_view text, T* out) {
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}
}  // namespace

const char* entity_type_name(EntityType type) {
  for (const auto& t : kTypeNames)
    if (t.type == type) return t.name;
  return "unknown";
}

bool parse_entity_type(std::string_view text, EntityType* out) {
  for (const auto& t : kTypeNames)
    if (text == t.name) {
      *out = t.type;
      return true;
    }
  return false;
}

std::string EntityName::to_string() const {
  return std::string(entity_type_name(type)) + "." + std::to_string(num);
}

bool EntityName::parse(std::string_view text, EntityName* out) {
  size_t dot = text.find('.');
  if (dot == std::string_view::npos) return false;
  EntityName name;
  if (!parse_entity_type(text.substr(0, dot), &name.type)) return false;
  if (!parse_number(text.substr(dot + 1), &name.num)) return false;
  *out = name;
  return true;
}

// ceph_entity_name: __u8 type, __le64 num.
void EntityName::encode(wire::Encoder& enc) const {
  enc.u8(static_cast<uint8_t>(type));
  enc.i64(num);
}

EntityName EntityName::decode(wire::Decoder& dec) {
  EntityName name;
  name.type = static_cast<EntityType>(dec.u8("entity_name.type"));
  name.num = dec.i64("entity_name.num");
  return name;
}

EntityAddr EntityAddr::msgr2(const sockaddr* sa, socklen_t len, uint32_t nonce) {
  EntityAddr addr;
  addr.type = kMsgr2;
  addr.nonce = nonce;
  if (sa && len <= sizeof(addr.storage)) std::memcpy(&addr.storage, sa, len);
  return addr;
}

bool EntityAddr::parse(std::string_view text, EntityAddr* out) {
  EntityAddr addr;
  addr.type = kMsgr2;
  if (text.starts_with("v2:")) {
    text.remove_prefix(3);
  } else if (text.starts_with("v1:")) {
    addr.type = kLegacy;
    text.remove_prefix(3);
  } else if (text.starts_with("any:")) {
    addr.type = kAny;
    text.remove_prefix(4);
  }
  size_t slash = text.rfind('/');
  if (slash != std::string_view::npos) {
    if (!parse_number(text.substr(slash + 1), &addr.nonce)) return false;
    text = text.substr(0, slash);
  }
  std::string host;
  std::string_view port_text;
  if (text.starts_with("[")) {
    size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':')
      return false;
    host = std::string(text.substr(1, close - 1));
    port_text = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) return false;
    host = std::string(text.substr(0, colon));
    port_text = text.substr(colon + 1);
  }
  uint16_t port = 0;
  if (!parse_number(port_text, &port)) return false;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&addr.storage);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&addr.storage);
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
  } else if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
  } else {
    return false;
  }
  *out = addr;
  return true;
}

bool EntityAddr::is_blank_ip() const {
  if (family() == AF_INET)
    return reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr.s_addr == INADDR_ANY;
  if (family() == AF_INET6)
    return IN6_IS_ADDR_UNSPECIFIED(&reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr);
  return true;
}

uint16_t EntityAddr::port() const {
  if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
  if (family() == AF_INET6)
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
  return 0;
}

void EntityAddr::set_port(uint16_t port) {
  if (family() == AF_INET) reinterpret_cast<sockaddr_in*>(&storage)->sin_port = htons(port);
  if (family() == AF_INET6) reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port = htons(port);
}

socklen_t EntityAddr::sockaddr_len() const {
  if (family() == AF_INET) return sizeof(sockaddr_in);
  if (family() == AF_INET6) return sizeof(sockaddr_in6);
  return 0;
}

bool EntityAddr::same_ip_port(const EntityAddr& other) const {
  socklen_t len = sockaddr_len();
  return len == other.sockaddr_len() && std::memcmp(&storage, &other.storage, len) == 0;
}

std::string EntityAddr::ip_string() const {
  char text[INET6_ADDRSTRLEN] = "-";
  if (family() == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr, text,
              sizeof(text));
  else if (family() == AF_INET6)
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr, text,
              sizeof(text));
  return text;
}

std::string EntityAddr::ip_port_string() const {
  const std::string host = family() == AF_INET6 ? "[" + ip_string() + "]" : ip_string();
  return host + ":" + std::to_string(port());
}

std::string EntityAddr::to_string() const {
  const char* prefix = type == kLegacy ? "v1:" : type == kMsgr2 ? "v2:" : type == kAny ? "any:" : "-:";
  return prefix + ip_port_string() + "/" + std::to_string(nonce);
}

bool EntityAddr::operator==(const EntityAddr& other) const {
  return type == other.type && nonce == other.nonce && family() == other.family() &&
         same_ip_port(other);
}

// entity_addr_t::encode with CEPH_FEATURE_MSG_ADDR2: marker byte 1, then ENCODE_START(1, 1):
// __le32 type, __le32 nonce, __le32 sockaddr length, and (when non-zero) the sockaddr with its
// family as __le16 followed by the rest of the sockaddr as stored (port and address in network
// byte order).
void EntityAddr::encode(wire::Encoder& enc) const {
  enc.u8(1);
  wire::VersionedEncode v(enc, 1, 1);
  enc.u32(type);
  enc.u32(nonce);
  uint32_t len = sockaddr_len();
  enc.u32(len);
  if (len) {
    enc.u16(static_cast<uint16_t>(family()));
    enc.raw(reinterpret_cast<const char*>(&storage) + sizeof(sa_family_t), len - sizeof(sa_family_t));
  }
}

EntityAddr EntityAddr::decode(wire::Decoder& dec) {
  uint8_t marker = dec.u8("entity_addr.marker");
  if (marker == 0) {
    // Pre-nautilus encoding (ceph_entity_addr: __le32 type, __le32 nonce, 128-byte
    // sockaddr_storage with a big-endian family). msgr2 peers never send it, but we accept it.
    EntityAddr addr;
    dec.skip(3, "entity_addr.legacy_pad");
    addr.type = kLegacy;
    addr.nonce = dec.u32("entity_addr.nonce");
    std::string_view ss = dec.raw(128, "entity_addr.sockaddr_storage");
    uint16_t family = static_cast<uint16_t>((static_cast<uint8_t>(ss[0]) << 8) | static_cast<uint8_t>(ss[1]));
    if (family == AF_INET || family == AF_INET6) {
      std::memcpy(&addr.storage, ss.data(), family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6));
      addr.storage.ss_family = family;
    }
    return addr;
  }
  if (marker != 1) dec.fail("entity_addr.marker", "unknown marker " + std::to_string(marker));
  EntityAddr addr;
  wire::VersionedDecode v(dec, 1, "entity_addr");
  addr.type = dec.u32("entity_addr.type");
  if (addr.type > kAny) dec.fail("entity_addr.type", "unknown address type " + std::to_string(addr.type));
  addr.nonce = dec.u32("entity_addr.nonce");
  uint32_t len = dec.u32("entity_addr.sockaddr_len");
  if (len) {
    if (len < sizeof(uint16_t) || len > sizeof(addr.storage))
      dec.fail("entity_addr.sockaddr_len", "implausible sockaddr length " + std::to_string(len));
    uint16_t family = dec.u16("entity_addr.family");
    std::string_view rest = dec.raw(len - sizeof(uint16_t), "entity_addr.sockaddr");
    socklen_t expected = family == AF_INET ? sizeof(sockaddr_in) : family == AF_INET6 ? sizeof(sockaddr_in6) : 0;
    if (expected == 0)
      dec.fail("entity_addr.family", "unsupported address family " + std::to_string(family));
    if (len != expected)
      dec.fail("entity_addr.sockaddr_len", "length " + std::to_string(len) + " does not match family " +
                                              std::to_string(family));
    std::memcpy(reinterpret_cast<char*>(&addr.storage) + sizeof(sa_family_t), rest.data(), rest.size());
    addr.storage.ss_family = family;
  }
  return addr;
}

const EntityAddr* EntityAddrVec::msgr2_addr() const {
  for (const auto& a : addrs)
    if (a.type == EntityAddr::kMsgr2 || a.type == EntityAddr::kAny) return &a;
  return addrs.empty() ? nullptr : &addrs.front();
}

std::string EntityAddrVec::to_string() const {
  std::string out = "[";
  for (size_t i = 0; i < addrs.size(); ++i) {
    if (i) out += ",";
    out += addrs[i].to_string();
  }
  return out + "]";
}

// entity_addrvec_t::encode with MSG_ADDR2: marker byte 2, __le32 count, each entity_addr_t.
void EntityAddrVec::encode(wire::Encoder& enc) const {
  enc.u8(2);
  enc.u32(static_cast<uint32_t>(addrs.size()));
  for (const auto& a : addrs) a.encode(enc);
}

EntityAddrVec EntityAddrVec::decode(wire::Decoder& dec) {
  EntityAddrVec vec;
  // Peek the marker: 0 and 1 are a single entity_addr_t (older encoders), 2 a vector.
  std::string_view rest = dec.all().substr(dec.offset());
  if (rest.empty()) dec.fail("entity_addrvec.marker", "needs 1 byte, none left");
  uint8_t marker = static_cast<uint8_t>(rest[0]);
  if (marker == 0 || marker == 1) {
    vec.addrs.push_back(EntityAddr::decode(dec));
    return vec;
  }
  if (marker != 2) dec.fail("entity_addrvec.marker", "unknown marker " + std::to_string(marker));
  dec.u8("entity_addrvec.marker");
  uint32_t count = dec.u32("entity_addrvec.count");
  if (count > kMaxAddrs)
    dec.fail("entity_addrvec.count", "count " + std::to_string(count) + " exceeds limit " +
                                         std::to_string(kMaxAddrs));
  for (uint32_t i = 0; i < count; ++i) vec.addrs.push_back(EntityAddr::decode(dec));
  return vec;
}

}  // namespace bypass::msgr

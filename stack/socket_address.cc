// SocketAddress: parsing, printing and sockaddr conversion for IPv4 and IPv6 endpoints.
#include <arpa/inet.h>

#include <charconv>
#include <cstring>

#include "stack/network_stack.h"

namespace bypass {

namespace {

// Parses a decimal port 0..65535 with no sign, spaces or trailing characters.
bool parse_port(std::string_view text, uint16_t* port) {
  if (text.empty() || text.size() > 5) return false;
  unsigned value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value > 65535) return false;
  *port = static_cast<uint16_t>(value);
  return true;
}

}  // namespace

SocketAddress SocketAddress::ipv4(uint32_t host_order_ip, uint16_t port) {
  SocketAddress addr;
  auto* sin = reinterpret_cast<sockaddr_in*>(&addr.storage_);
  sin->sin_family = AF_INET;
  sin->sin_addr.s_addr = htonl(host_order_ip);
  sin->sin_port = htons(port);
  return addr;
}

SocketAddress SocketAddress::ipv6(const std::array<uint8_t, 16>& octets, uint16_t port) {
  SocketAddress addr;
  auto* sin6 = reinterpret_cast<sockaddr_in6*>(&addr.storage_);
  sin6->sin6_family = AF_INET6;
  std::memcpy(&sin6->sin6_addr, octets.data(), octets.size());
  sin6->sin6_port = htons(port);
  return addr;
}

SocketAddress SocketAddress::from_sockaddr(const sockaddr* sa, socklen_t len) {
  SocketAddress addr;
  if (sa == nullptr) return addr;
  if (sa->sa_family == AF_INET && len >= static_cast<socklen_t>(sizeof(sockaddr_in))) {
    std::memcpy(&addr.storage_, sa, sizeof(sockaddr_in));
  } else if (sa->sa_family == AF_INET6 && len >= static_cast<socklen_t>(sizeof(sockaddr_in6))) {
    std::memcpy(&addr.storage_, sa, sizeof(sockaddr_in6));
  }
  return addr;
}

bool SocketAddress::parse(std::string_view text, SocketAddress* out) {
  std::string_view host;
  std::string_view port_text;
  bool bracketed = false;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return false;
    }
    host = text.substr(1, close - 1);
    port_text = text.substr(close + 2);
    bracketed = true;
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) return false;
    host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
    // An unbracketed IPv6 literal is ambiguous ("::1:80"); require brackets.
    if (host.find(':') != std::string_view::npos) return false;
  }
  uint16_t port = 0;
  if (host.empty() || host.size() >= INET6_ADDRSTRLEN || !parse_port(port_text, &port)) return false;
  const std::string host_str(host);

  SocketAddress addr;
  if (bracketed) {
    auto* sin6 = reinterpret_cast<sockaddr_in6*>(&addr.storage_);
    if (inet_pton(AF_INET6, host_str.c_str(), &sin6->sin6_addr) != 1) return false;
    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = htons(port);
  } else {
    auto* sin = reinterpret_cast<sockaddr_in*>(&addr.storage_);
    if (inet_pton(AF_INET, host_str.c_str(), &sin->sin_addr) != 1) return false;
    sin->sin_family = AF_INET;
    sin->sin_port = htons(port);
  }
  *out = addr;
  return true;
}

uint32_t SocketAddress::ipv4_host_order() const {
  return ntohl(reinterpret_cast<const sockaddr_in*>(&storage_)->sin_addr.s_addr);
}

std::array<uint8_t, 16> SocketAddress::ipv6_octets() const {
  std::array<uint8_t, 16> octets;
  std::memcpy(octets.data(), &reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_addr, octets.size());
  return octets;
}

uint16_t SocketAddress::port() const {
  switch (family()) {
    case AF_INET: return ntohs(reinterpret_cast<const sockaddr_in*>(&storage_)->sin_port);
    case AF_INET6: return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_port);
    default: return 0;
  }
}

void SocketAddress::set_port(uint16_t port) {
  switch (family()) {
    case AF_INET: reinterpret_cast<sockaddr_in*>(&storage_)->sin_port = htons(port); break;
    case AF_INET6: reinterpret_cast<sockaddr_in6*>(&storage_)->sin6_port = htons(port); break;
    default: break;
  }
}

socklen_t SocketAddress::sockaddr_len() const {
  switch (family()) {
    case AF_INET: return sizeof(sockaddr_in);
    case AF_INET6: return sizeof(sockaddr_in6);
    default: return 0;
  }
}

std::string SocketAddress::to_string() const {
  char host[INET6_ADDRSTRLEN] = {};
  switch (family()) {
    case AF_INET:
      inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage_)->sin_addr, host, sizeof(host));
      return std::string(host) + ":" + std::to_string(port());
    case AF_INET6:
      inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_addr, host,
                sizeof(host));
      return "[" + std::string(host) + "]:" + std::to_string(port());
    default:
      return "<unset>";
  }
}

bool SocketAddress::operator==(const SocketAddress& other) const {
  if (family() != other.family()) return false;
  switch (family()) {
    case AF_INET: {
      const auto* a = reinterpret_cast<const sockaddr_in*>(&storage_);
      const auto* b = reinterpret_cast<const sockaddr_in*>(&other.storage_);
      return a->sin_port == b->sin_port && a->sin_addr.s_addr == b->sin_addr.s_addr;
    }
    case AF_INET6: {
      const auto* a = reinterpret_cast<const sockaddr_in6*>(&storage_);
      const auto* b = reinterpret_cast<const sockaddr_in6*>(&other.storage_);
      return a->sin6_port == b->sin6_port &&
             std::memcmp(&a->sin6_addr, &b->sin6_addr, sizeof(in6_addr)) == 0 &&
             a->sin6_scope_id == b->sin6_scope_id;
    }
    default:
      return true;  // both unset
  }
}

}  // namespace bypass

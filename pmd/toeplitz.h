// Toeplitz hashing as NICs do it for RSS (Microsoft RSS specification), with a symmetric key so
// that both directions of a flow hash alike, and the RETA that maps a hash to a worker.
//
// Hardware and software agree: with hardware RSS the NIC computes the same hash with the same key
// and RETA, and where the port has no RSS the software redirect path computes it here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace bypass::pmd {

// 0x6d5a repeated: every 16-bit window of the key is the same, so swapping source and destination
// (addresses and ports, each a multiple of 16 bits) leaves the hash unchanged.
std::vector<uint8_t> symmetric_rss_key(size_t length = 40);

// Toeplitz hash of `input` (bytes in network order) under `key`; the key must be at least
// input.size() + 4 bytes long.
uint32_t toeplitz_hash(std::span<const uint8_t> key, std::span<const uint8_t> input);

// Hash of an IPv4 TCP/UDP 4-tuple in the order NICs use (src addr, dst addr, src port, dst port).
// Addresses and ports are in host byte order.
uint32_t toeplitz_ipv4_tuple(std::span<const uint8_t> key, uint32_t src_addr, uint32_t dst_addr, uint16_t src_port,
                             uint16_t dst_port);

// The same for IPv6 (RFC 8200 addresses, 16 bytes each in network order): 36 bytes of input, so
// the key must be at least 40 bytes.
uint32_t toeplitz_ipv6_tuple(std::span<const uint8_t> key, std::span<const uint8_t, 16> src_addr,
                             std::span<const uint8_t, 16> dst_addr, uint16_t src_port, uint16_t dst_port);

// Addresses only, source then destination, as NICs hash fragments and other protocols
// (RTE_ETH_RSS_IPV4, RTE_ETH_RSS_IPV6).
uint32_t toeplitz_ipv4_addresses(std::span<const uint8_t> key, uint32_t src_addr, uint32_t dst_addr);
uint32_t toeplitz_ipv6_addresses(std::span<const uint8_t> key, std::span<const uint8_t, 16> src_addr,
                                 std::span<const uint8_t, 16> dst_addr);

// The redirection table: hash -> worker, spreading entries round-robin over `workers`.
class RssSteering {
 public:
  RssSteering(unsigned workers, size_t reta_size = 512, size_t key_length = 40);

  const std::vector<uint8_t>& key() const { return key_; }
  const std::vector<uint16_t>& reta() const { return reta_; }
  unsigned workers() const { return workers_; }

  // Hardware indexes the RETA with the hash's low bits (reta sizes are powers of two).
  unsigned worker_for_hash(uint32_t hash) const { return reta_[hash % reta_.size()]; }
  unsigned worker_for_ipv4(uint32_t src_addr, uint32_t dst_addr, uint16_t src_port, uint16_t dst_port) const {
    return worker_for_hash(toeplitz_ipv4_tuple(key_, src_addr, dst_addr, src_port, dst_port));
  }
  unsigned worker_for_ipv4_addresses(uint32_t src_addr, uint32_t dst_addr) const {
    return worker_for_hash(toeplitz_ipv4_addresses(key_, src_addr, dst_addr));
  }
  unsigned worker_for_ipv6_addresses(std::span<const uint8_t, 16> src_addr, std::span<const uint8_t, 16> dst_addr) const {
    return worker_for_hash(toeplitz_ipv6_addresses(key_, src_addr, dst_addr));
  }
  unsigned worker_for_ipv6(std::span<const uint8_t, 16> src_addr, std::span<const uint8_t, 16> dst_addr,
                           uint16_t src_port, uint16_t dst_port) const {
    return worker_for_hash(toeplitz_ipv6_tuple(key_, src_addr, dst_addr, src_port, dst_port));
  }

 private:
  unsigned workers_;
  std::vector<uint8_t> key_;
  std::vector<uint16_t> reta_;
};

}  // namespace bypass::pmd

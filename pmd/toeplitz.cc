#include "pmd/toeplitz.h"

#include <algorithm>
#include <stdexcept>

namespace bypass::pmd {

std::vector<uint8_t> symmetric_rss_key(size_t length) {
  std::vector<uint8_t> key(length);
  for (size_t i = 0; i < length; ++i) key[i] = (i % 2 == 0) ? 0x6d : 0x5a;
  return key;
}

uint32_t toeplitz_hash(std::span<const uint8_t> key, std::span<const uint8_t> input) {
  if (key.size() < input.size() + 4) throw std::invalid_argument("toeplitz_hash: key shorter than input + 4 bytes");
  uint32_t result = 0;
  // `window` holds the 32 key bits starting at the current input bit; shift in one key bit per input bit.
  uint32_t window = (uint32_t{key[0]} << 24) | (uint32_t{key[1]} << 16) | (uint32_t{key[2]} << 8) | key[3];
  for (size_t byte = 0; byte < input.size(); ++byte) {
    const uint8_t next_key_byte = key[byte + 4];
    for (int bit = 7; bit >= 0; --bit) {
      if (input[byte] & (1u << bit)) result ^= window;
      window = (window << 1) | ((next_key_byte >> bit) & 1u);
    }
  }
  return result;
}

uint32_t toeplitz_ipv4_tuple(std::span<const uint8_t> key, uint32_t src_addr, uint32_t dst_addr, uint16_t src_port,
                             uint16_t dst_port) {
  const uint8_t input[12] = {
      uint8_t(src_addr >> 24), uint8_t(src_addr >> 16), uint8_t(src_addr >> 8), uint8_t(src_addr),
      uint8_t(dst_addr >> 24), uint8_t(dst_addr >> 16), uint8_t(dst_addr >> 8), uint8_t(dst_addr),
      uint8_t(src_port >> 8),  uint8_t(src_port),       uint8_t(dst_port >> 8), uint8_t(dst_port)};
  return toeplitz_hash(key, input);
}

uint32_t toeplitz_ipv6_tuple(std::span<const uint8_t> key, std::span<const uint8_t, 16> src_addr,
                             std::span<const uint8_t, 16> dst_addr, uint16_t src_port, uint16_t dst_port) {
  uint8_t input[36];
  std::copy(src_addr.begin(), src_addr.end(), input);
  std::copy(dst_addr.begin(), dst_addr.end(), input + 16);
  input[32] = uint8_t(src_port >> 8);
  input[33] = uint8_t(src_port);
  input[34] = uint8_t(dst_port >> 8);
  input[35] = uint8_t(dst_port);
  return toeplitz_hash(key, input);
}

uint32_t toeplitz_ipv4_addresses(std::span<const uint8_t> key, uint32_t src_addr, uint32_t dst_addr) {
  const uint8_t input[8] = {uint8_t(src_addr >> 24), uint8_t(src_addr >> 16), uint8_t(src_addr >> 8), uint8_t(src_addr),
                            uint8_t(dst_addr >> 24), uint8_t(dst_addr >> 16), uint8_t(dst_addr >> 8), uint8_t(dst_addr)};
  return toeplitz_hash(key, input);
}

uint32_t toeplitz_ipv6_addresses(std::span<const uint8_t> key, std::span<const uint8_t, 16> src_addr,
                                 std::span<const uint8_t, 16> dst_addr) {
  uint8_t input[32];
  std::copy(src_addr.begin(), src_addr.end(), input);
  std::copy(dst_addr.begin(), dst_addr.end(), input + 16);
  return toeplitz_hash(key, input);
}

RssSteering::RssSteering(unsigned workers, size_t reta_size, size_t key_length)
    : workers_(workers ? workers : 1), key_(symmetric_rss_key(key_length)), reta_(reta_size ? reta_size : 1) {
  for (size_t i = 0; i < reta_.size(); ++i) reta_[i] = static_cast<uint16_t>(i % workers_);
}

}  // namespace bypass::pmd

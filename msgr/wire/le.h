// Little-endian loads and stores of fixed-size wire fields (frame preambles, ceph_msg_header2):
// one memcpy each on little-endian hosts, which the compiler turns into a single move.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace bypass::msgr::wire {

template <typename T>
T byteswap_if_big_endian(T v) {
  static_assert(std::is_unsigned_v<T>);
  if constexpr (std::endian::native == std::endian::little || sizeof(T) == 1) {
    return v;
  } else {
    T out = 0;
    for (size_t i = 0; i < sizeof(T); ++i) out = static_cast<T>((out << 8) | ((v >> (8 * i)) & 0xff));
    return out;
  }
}

template <typename T>
void store_le(char* at, T v) {
  v = byteswap_if_big_endian(v);
  std::memcpy(at, &v, sizeof(T));
}

template <typename T>
T load_le(const char* at) {
  T v;
  std::memcpy(&v, at, sizeof(T));
  return byteswap_if_big_endian(v);
}

}  // namespace bypass::msgr::wire

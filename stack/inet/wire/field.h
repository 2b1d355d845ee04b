// Named header fields and the byte views built on them (as smoltcp's `field` modules): each
// protocol's header names every field once, by offset and width, and its view reads and writes
// them over a byte span. Everything is inline and compiles to the same loads and stores as the
// literal offsets it replaces.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "stack/inet/wire/bytes.h"

namespace bypass::inet {

// `Width` bytes at `Offset` from the start of a header, in network byte order. Widths 1, 2 and 4
// are unsigned integers; 6 is a MAC address, 16 an IPv6 address.
template <size_t Offset, size_t Width>
struct Field {
  static constexpr size_t kOffset = Offset;
  static constexpr size_t kWidth = Width;
  static constexpr size_t kEnd = Offset + Width;  // the header length this field needs

  static auto get(const uint8_t* header) {
    const uint8_t* p = header + Offset;
    if constexpr (Width == 1) return p[0];
    else if constexpr (Width == 2) return load_be16(p);
    else if constexpr (Width == 4) return load_be32(p);
    else if constexpr (Width == 6) {
      MacAddress mac;
      std::memcpy(mac.bytes.data(), p, 6);
      return mac;
    } else {
      static_assert(Width == Ipv6Address::kLength, "field widths are 1, 2, 4, 6 or 16 bytes");
      return Ipv6Address::from_bytes(p);
    }
  }
  template <typename Value>
  static void set(uint8_t* header, const Value& value) {
    uint8_t* p = header + Offset;
    if constexpr (Width == 1) p[0] = static_cast<uint8_t>(value);
    else if constexpr (Width == 2) store_be16(p, static_cast<uint16_t>(value));
    else if constexpr (Width == 4) store_be32(p, static_cast<uint32_t>(value));
    else if constexpr (Width == 6) std::memcpy(p, value.bytes.data(), 6);
    else value.store(p);
  }
};

// Bits of an integer field: (field >> Shift) & Mask, e.g. IPv4's IHL in the low 4 bits of byte 0.
template <typename Whole, unsigned Shift, uint32_t Mask>
struct BitField {
  static constexpr size_t kEnd = Whole::kEnd;
  static uint32_t get(const uint8_t* header) { return (uint32_t{Whole::get(header)} >> Shift) & Mask; }
  static void set(uint8_t* header, uint32_t value) {
    const uint32_t kept = uint32_t{Whole::get(header)} & ~(Mask << Shift);
    Whole::set(header, kept | (value & Mask) << Shift);
  }
};

// A view over the bytes of one header (`Byte` is uint8_t to write, const uint8_t to read only).
// It owns nothing and checks nothing on access: a view's check_len() (or the parse() it serves)
// says whether the bytes hold the fields before any is read.
template <typename Byte>
class HeaderView {
 public:
  HeaderView(Byte* data, size_t size) : data_(data), size_(size) {}

  Byte* data() const { return data_; }
  size_t size() const { return size_; }

  template <typename F>
  auto get() const { return F::get(data_); }
  template <typename F, typename Value>
    requires(!std::is_const_v<Byte>)
  void set(const Value& value) const { F::set(data_, value); }

 private:
  Byte* data_;
  size_t size_;
};

}  // namespace bypass::inet

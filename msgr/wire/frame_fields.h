// How a record's fields go on the wire, generated from one list per record.
//
// A record (a control frame, or a value nested in one such as WireTime) declares its members and,
// once, the order they travel in: a `static constexpr auto fields()` returning a tuple of
// field("name", &Record::member) entries (plus a limit for variable-length members). From that one
// list encode_fields() writes the record, decode_fields() reads it back naming the field in any
// DecodeError, and fixed_wire_size() says whether it has a fixed size (and can be encoded on the
// stack). Ceph declares its msgr2 frames the same way (src/msg/async/frames_v2.h,
// ControlFrame<C, Args...>), so a mistake cannot be made twice, the same way, in an encoder and a
// decoder; the golden frames a real Ceph monitor sent (tests/unit/msgr/ceph_frames) catch the
// mistakes one list can still hold.
#pragma once

#include <array>
#include <concepts>
#include <cstring>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "msgr/wire/codec.h"

namespace bypass::msgr::wire {

// The wire form of one member type: encode(), decode(), whether a field of it needs a limit
// (kBounded) and its size when fixed (kFixedSize, else kVariableSize). Specialized below; a member
// type without one does not compile.
template <typename T> struct FieldCodec;

constexpr size_t kVariableSize = std::numeric_limits<size_t>::max();

// One entry of a record's field list.
template <typename Record, typename T>
struct Field {
  const char* name;   // as DecodeError reports it
  T Record::*member;
  uint32_t limit;     // bounded types: the most bytes (string) or elements (vector) a decoder accepts
};

// A field of fixed size, or of a type that bounds its own lengths (EntityAddrVec).
template <typename Record, typename T>
  requires(!FieldCodec<T>::kBounded)
constexpr Field<Record, T> field(const char* name, T Record::*member) {
  return {name, member, 0};
}
// A variable-length field: `limit` bounds what a peer can make the decoder allocate, checked
// before anything is allocated.
template <typename Record, typename T>
  requires FieldCodec<T>::kBounded
constexpr Field<Record, T> field(const char* name, T Record::*member, uint32_t limit) {
  return {name, member, limit};
}

// A type that declares its field list.
template <typename T>
concept Record = requires { T::fields(); };

namespace detail {
// Converts to anything, so T{AnyMember{}, ...} brace-initializes an aggregate with as many of them
// as it has members and no more (never called: only asked about in unevaluated requires).
struct AnyMember {
  template <typename T> operator T() const;
};
template <typename T, typename... Members>
constexpr size_t member_count() {
  if constexpr (requires { T{Members{}..., AnyMember{}}; })
    return member_count<T, Members..., AnyMember>();
  else
    return sizeof...(Members);
}
}  // namespace detail

// True when the field list names as many fields as the record has members: a member added to a
// frame but not to its list (so never sent) fails to compile.
template <Record R>
constexpr bool every_member_listed() {
  return detail::member_count<R>() == std::tuple_size_v<decltype(R::fields())>;
}

// The record's encoded size when every field has a fixed size, else kVariableSize.
template <Record R>
constexpr size_t fixed_wire_size() {
  return std::apply(
      [](const auto&... f) {
        size_t total = 0;
        bool fixed = true;
        ((FieldCodec<std::remove_cvref_t<decltype(std::declval<R>().*f.member)>>::kFixedSize == kVariableSize
              ? void(fixed = false)
              : void(total += FieldCodec<std::remove_cvref_t<decltype(std::declval<R>().*f.member)>>::kFixedSize)),
         ...);
        return fixed ? total : kVariableSize;
      },
      R::fields());
}

// Writes the record's fields in list order. `Out` is an Encoder, or a FlatEncoder for records of
// fixed size.
template <Record R, typename Out>
void encode_fields(Out& out, const R& record) {
  static_assert(every_member_listed<R>(), "a member of this record is missing from its fields() list");
  std::apply(
      [&](const auto&... f) {
        (FieldCodec<std::remove_cvref_t<decltype(record.*f.member)>>::encode(out, record.*f.member), ...);
      },
      R::fields());
}

// Reads the record's fields in list order; throws DecodeError naming the first field that is
// short or malformed.
template <Record R>
void decode_fields(Decoder& in, R& record) {
  static_assert(every_member_listed<R>(), "a member of this record is missing from its fields() list");
  std::apply(
      [&](const auto&... f) {
        ((record.*f.member = FieldCodec<std::remove_cvref_t<decltype(record.*f.member)>>::decode(in, f.name, f.limit)),
         ...);
      },
      R::fields());
}

// Integers, enums and bool: little-endian two's complement of their size (__u8, __le16/32/64);
// bool is one byte, any non-zero value reading as true (Ceph's encoding).
template <typename T>
  requires std::integral<T> || std::is_enum_v<T>
struct FieldCodec<T> {
  static constexpr bool kBounded = false;
  static constexpr size_t kFixedSize = sizeof(T);
  template <typename Out>
  static void encode(Out& out, T v) {
    if constexpr (std::is_same_v<T, bool>) {
      out.boolean(v);
    } else {
      using Integer = typename std::conditional_t<std::is_enum_v<T>, std::underlying_type<T>, std::type_identity<T>>::type;
      using Unsigned = std::make_unsigned_t<Integer>;
      const auto bits = static_cast<Unsigned>(v);
      if constexpr (sizeof(T) == 1) out.u8(bits);
      else if constexpr (sizeof(T) == 2) out.u16(bits);
      else if constexpr (sizeof(T) == 4) out.u32(bits);
      else out.u64(bits);
    }
  }
  static T decode(Decoder& in, const char* name, uint32_t) {
    if constexpr (std::is_same_v<T, bool>) return in.boolean(name);
    else if constexpr (sizeof(T) == 1) return static_cast<T>(in.u8(name));
    else if constexpr (sizeof(T) == 2) return static_cast<T>(in.u16(name));
    else if constexpr (sizeof(T) == 4) return static_cast<T>(in.u32(name));
    else return static_cast<T>(in.u64(name));
  }
};

// Fixed-size byte strings (sha256_digest_t): the bytes as they are, no length.
template <size_t N>
struct FieldCodec<std::array<uint8_t, N>> {
  static constexpr bool kBounded = false;
  static constexpr size_t kFixedSize = N;
  template <typename Out>
  static void encode(Out& out, const std::array<uint8_t, N>& v) {
    out.raw(v.data(), N);
  }
  static std::array<uint8_t, N> decode(Decoder& in, const char* name, uint32_t) {
    std::array<uint8_t, N> v;
    std::string_view bytes = in.raw(N, name);
    std::memcpy(v.data(), bytes.data(), N);
    return v;
  }
};

// std::string and bufferlist: __le32 length, then the bytes.
template <>
struct FieldCodec<std::string> {
  static constexpr bool kBounded = true;
  static constexpr size_t kFixedSize = kVariableSize;
  static void encode(Encoder& out, const std::string& v) { out.blob(v); }
  static std::string decode(Decoder& in, const char* name, uint32_t limit) {
    uint32_t len = in.u32(name);
    if (len > limit)
      in.fail(name, "length " + std::to_string(len) + " exceeds the limit of " + std::to_string(limit) + " bytes");
    return std::string(in.raw(len, name));
  }
};

// std::vector<uint32_t>: __le32 count, then the elements.
template <>
struct FieldCodec<std::vector<uint32_t>> {
  static constexpr bool kBounded = true;
  static constexpr size_t kFixedSize = kVariableSize;
  static void encode(Encoder& out, const std::vector<uint32_t>& v) { out.u32_vector(v); }
  static std::vector<uint32_t> decode(Decoder& in, const char* name, uint32_t limit) {
    return in.u32_vector(name, limit);
  }
};

// Types with their own encode(Encoder&) and static decode(Decoder&) (entity_addr_t,
// entity_addrvec_t): they check their own lengths and name their own parts in errors.
template <typename T>
  requires requires(const T& v, Encoder& out, Decoder& in) {
    v.encode(out);
    { T::decode(in) } -> std::same_as<T>;
  }
struct FieldCodec<T> {
  static constexpr bool kBounded = false;
  static constexpr size_t kFixedSize = kVariableSize;
  static void encode(Encoder& out, const T& v) { v.encode(out); }
  static T decode(Decoder& in, const char*, uint32_t) { return T::decode(in); }
};

// A nested record (WireTime): its own fields in its own order.
template <Record T>
struct FieldCodec<T> {
  static constexpr bool kBounded = false;
  static constexpr size_t kFixedSize = fixed_wire_size<T>();
  template <typename Out>
  static void encode(Out& out, const T& v) {
    encode_fields(out, v);
  }
  static T decode(Decoder& in, const char*, uint32_t) {
    T v;
    decode_fields(in, v);
    return v;
  }
};

// A readable form of a record for logs and test failures, from the same list:
// "{method=2, preferred_modes=[2, 1], auth_payload=<22 bytes 0a08000000050000...>}". 64-bit
// unsigned values (features, cookies) print in hex.
template <Record R>
std::string describe_fields(const R& record);

namespace detail {
inline std::string hex_bytes(const void* data, size_t len, size_t max_shown) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  const auto* bytes = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < len && i < max_shown; ++i) {
    out += kDigits[bytes[i] >> 4];
    out += kDigits[bytes[i] & 0xf];
  }
  return len > max_shown ? out + "..." : out;
}

template <typename T>
std::string describe_value(const T& v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? "true" : "false";
  } else if constexpr (std::is_same_v<T, uint64_t>) {
    char text[19];
    std::snprintf(text, sizeof(text), "0x%llx", static_cast<unsigned long long>(v));
    return text;
  } else if constexpr (std::is_enum_v<T>) {
    return std::to_string(static_cast<std::underlying_type_t<T>>(v));
  } else if constexpr (std::integral<T>) {
    return std::to_string(v);
  } else if constexpr (Record<T>) {
    return describe_fields(v);
  } else if constexpr (std::is_same_v<T, std::string>) {
    return "<" + std::to_string(v.size()) + " bytes " + hex_bytes(v.data(), v.size(), 8) + ">";
  } else if constexpr (std::is_same_v<T, std::vector<uint32_t>>) {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
    return out + "]";
  } else if constexpr (requires { v.data(); v.size(); }) {
    return hex_bytes(v.data(), v.size(), v.size());
  } else {
    return v.to_string();  // EntityAddr, EntityAddrVec
  }
}
}  // namespace detail

template <Record R>
std::string describe_fields(const R& record) {
  std::string out = "{";
  std::apply(
      [&](const auto&... f) {
        ((out += (out.size() > 1 ? ", " : "") + std::string(f.name) + "=" + detail::describe_value(record.*f.member)),
         ...);
      },
      R::fields());
  return out + "}";
}

}  // namespace bypass::msgr::wire

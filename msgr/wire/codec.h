// Ceph's little-endian wire encoding for the primitive types used in msgr2 payloads.
//
// Encoder appends to a BufferList. Decoder reads a contiguous byte range and throws DecodeError
// naming the field and offset whenever the input is too short or a length is implausible, so a
// malformed payload can never read out of bounds or trigger a huge allocation.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "base/buffer_list.h"

namespace bypass::msgr::wire {

// Thrown by Decoder for malformed input; what() names the structure, field and offset.
class DecodeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Appends Ceph-encoded primitives to a BufferList. Integers are written little-endian byte by
// byte, so the output is the same on any host and needs no alignment.
class Encoder {
 public:
  // Appends to `out`, which must outlive the Encoder.
  explicit Encoder(BufferList& out) : out_(out) {}

  void u8(uint8_t v) { out_.append_copy(&v, 1); }  // __u8
  void u16(uint16_t v) { put_le(v); }  // __le16
  void u32(uint32_t v) { put_le(v); }  // __le32
  void u64(uint64_t v) { put_le(v); }  // __le64
  void i32(int32_t v) { put_le(static_cast<uint32_t>(v)); }  // two's complement __le32
  void i64(int64_t v) { put_le(static_cast<uint64_t>(v)); }  // two's complement __le64
  void boolean(bool v) { u8(v ? 1 : 0); }  // one byte, 0 or 1 (Ceph's encoding of bool)
  // `len` bytes as they are, with no length prefix (fixed-size fields).
  void raw(const void* data, size_t len) {
    if (len) out_.append_copy(data, len);
  }
  // `bytes` as they are, with no length prefix.
  void raw(std::string_view bytes) { raw(bytes.data(), bytes.size()); }
  // Ceph's encoding of bufferlist / std::string: __le32 length, then the bytes.
  void blob(std::string_view bytes) {
    u32(static_cast<uint32_t>(bytes.size()));
    raw(bytes);
  }
  // As blob(std::string_view), but shares the buffers of `bytes` instead of copying them.
  void blob(const BufferList& bytes) {
    u32(static_cast<uint32_t>(bytes.length()));
    out_.append(bytes);
  }
  // std::vector<uint32_t>: __le32 count, then the elements.
  void u32_vector(const std::vector<uint32_t>& values) {
    u32(static_cast<uint32_t>(values.size()));
    for (uint32_t v : values) u32(v);
  }
  // Reserve a __le32 to patch later (ENCODE_START's length field); returns its address.
  char* hole_u32() { return out_.append_hole(4); }
  // Bytes in the output BufferList so far (including what it held before this Encoder).
  size_t length() const { return out_.length(); }
  // Writes `v` as __le32 at `at`, a hole from hole_u32(), once the length it holds is known.
  static void store_u32(char* at, uint32_t v) {
    for (int i = 0; i < 4; ++i) at[i] = static_cast<char>(v >> (8 * i));
  }

 private:
  template <typename T>
  void put_le(T v) {
    char bytes[sizeof(T)];
    for (size_t i = 0; i < sizeof(T); ++i) bytes[i] = static_cast<char>(v >> (8 * i));
    out_.append_copy(bytes, sizeof(T));
  }
  BufferList& out_;
};

// Writes the same fixed-size primitives as Encoder into a caller's array of exactly the encoded
// size (fixed-size control frames such as ACK, encoded on the stack: nothing is allocated).
class FlatEncoder {
 public:
  // `out` must hold at least as many bytes as are written (fixed_wire_size of what is encoded).
  explicit FlatEncoder(char* out) : at_(out) {}

  void u8(uint8_t v) { *at_++ = static_cast<char>(v); }  // __u8
  void u16(uint16_t v) { put_le(v); }  // __le16
  void u32(uint32_t v) { put_le(v); }  // __le32
  void u64(uint64_t v) { put_le(v); }  // __le64
  void boolean(bool v) { u8(v ? 1 : 0); }  // one byte, 0 or 1
  // `len` bytes as they are, with no length prefix.
  void raw(const void* data, size_t len) {
    if (len) std::memcpy(at_, data, len);
    at_ += len;
  }

 private:
  template <typename T>
  void put_le(T v) {
    for (size_t i = 0; i < sizeof(T); ++i) *at_++ = static_cast<char>(v >> (8 * i));
  }
  char* at_;
};

// Reads Ceph-encoded primitives from a contiguous byte range. Every read names its field so a
// short or implausible input throws a DecodeError that says what was being read and where.
class Decoder {
 public:
  // `what` names the structure being decoded, for error messages ("CLIENT_IDENT").
  Decoder(std::string_view bytes, std::string what) : data_(bytes), what_(std::move(what)) {}

  uint8_t u8(const char* field) { return static_cast<uint8_t>(get_le<uint8_t>(field)); }  // __u8
  uint16_t u16(const char* field) { return get_le<uint16_t>(field); }  // __le16
  uint32_t u32(const char* field) { return get_le<uint32_t>(field); }  // __le32
  uint64_t u64(const char* field) { return get_le<uint64_t>(field); }  // __le64
  // A two's complement __le32.
  int32_t i32(const char* field) { return static_cast<int32_t>(get_le<uint32_t>(field)); }
  // A two's complement __le64.
  int64_t i64(const char* field) { return static_cast<int64_t>(get_le<uint64_t>(field)); }
  bool boolean(const char* field) { return u8(field) != 0; }  // any non-zero byte is true
  // The next `len` bytes, without copying: the view points into the decoded range.
  std::string_view raw(size_t len, const char* field) {
    need(len, field);
    std::string_view v = data_.substr(pos_, len);
    pos_ += len;
    return v;
  }
  // __le32 length, then that many bytes (Ceph's std::string / bufferlist), copied out. The
  // length is checked against the remaining input before anything is allocated.
  std::string blob(const char* field) {
    uint32_t len = u32(field);
    return std::string(raw(len, field));
  }
  // A vector of __le32; `max_count` bounds the claimed count before anything is allocated.
  std::vector<uint32_t> u32_vector(const char* field, uint32_t max_count = 64) {
    uint32_t count = u32(field);
    if (count > max_count) fail(field, "count " + std::to_string(count) + " exceeds limit " +
                                           std::to_string(max_count));
    need(size_t{count} * 4, field);
    std::vector<uint32_t> values(count);
    for (auto& v : values) v = u32(field);
    return values;
  }
  // Steps over `len` bytes (padding, fields this version ignores); throws if they are missing.
  void skip(size_t len, const char* field) { raw(len, field); }

  size_t offset() const { return pos_; }  // bytes consumed so far, as error messages report it
  // Bytes left before the end (or before the current versioned struct's end, inside one).
  size_t remaining() const { return data_.size() - pos_; }
  bool at_end() const { return pos_ == data_.size(); }  // lets callers reject trailing garbage
  const std::string& what() const { return what_; }  // the structure named at construction
  // Restrict decoding to the next `len` bytes (a versioned struct's body); returns the saved end.
  size_t push_limit(size_t len, const char* field) {
    need(len, field);
    size_t saved = data_.size();
    data_ = data_.substr(0, pos_ + len);
    return saved;
  }
  // Leave a versioned struct: skip any unread tail (newer versions append fields) and restore.
  void pop_limit(size_t saved_end, std::string_view full) {
    pos_ = data_.size();
    data_ = full.substr(0, saved_end);
  }
  // The whole range currently readable (from the start, up to any versioned struct's limit);
  // VersionedDecode saves it to restore with pop_limit().
  std::string_view all() const { return data_; }

  // Throws DecodeError naming the structure, `field`, the current offset and `why`. Public so
  // callers report semantic errors (an unknown type, a bad count) in the same form.
  [[noreturn]] void fail(const char* field, const std::string& why) const {
    throw DecodeError(what_ + ": field '" + field + "' at offset " + std::to_string(pos_) + ": " +
                      why);
  }

 private:
  void need(size_t len, const char* field) const {
    if (len > data_.size() - pos_)
      fail(field, "needs " + std::to_string(len) + " bytes, only " +
                      std::to_string(data_.size() - pos_) + " left");
  }
  template <typename T>
  T get_le(const char* field) {
    need(sizeof(T), field);
    T v = 0;
    for (size_t i = 0; i < sizeof(T); ++i)
      v |= static_cast<T>(static_cast<T>(static_cast<uint8_t>(data_[pos_ + i])) << (8 * i));
    pos_ += sizeof(T);
    return v;
  }

  std::string_view data_;
  size_t pos_ = 0;
  std::string what_;
};

// Ceph's ENCODE_START/DECODE_START framing for versioned structs:
// __u8 struct_v, __u8 struct_compat, __le32 struct_len, then struct_len bytes of body.
class VersionedEncode {
 public:
  // Writes the header with a length hole; the destructor fills the length in, so the body is
  // whatever `enc` receives while this object lives.
  VersionedEncode(Encoder& enc, uint8_t version, uint8_t compat) : enc_(enc) {
    enc_.u8(version);
    enc_.u8(compat);
    len_at_ = enc_.hole_u32();
    start_ = enc_.length();
  }
  ~VersionedEncode() { Encoder::store_u32(len_at_, static_cast<uint32_t>(enc_.length() - start_)); }
  VersionedEncode(const VersionedEncode&) = delete;
  VersionedEncode& operator=(const VersionedEncode&) = delete;

 private:
  Encoder& enc_;
  char* len_at_;
  size_t start_;
};

// Reads a versioned struct's header and confines `dec` to its body while this object lives;
// the destructor skips any fields a newer encoder appended, so old readers stay compatible.
class VersionedDecode {
 public:
  // Throws when the encoder's struct_compat is newer than `max_understood`.
  VersionedDecode(Decoder& dec, uint8_t max_understood, const char* field)
      : dec_(dec), full_(dec.all()) {
    version_ = dec_.u8(field);
    uint8_t compat = dec_.u8(field);
    if (compat > max_understood)
      dec_.fail(field, "struct_compat " + std::to_string(compat) + " is newer than supported " +
                           std::to_string(max_understood));
    uint32_t len = dec_.u32(field);
    saved_end_ = dec_.push_limit(len, field);
  }
  ~VersionedDecode() { dec_.pop_limit(saved_end_, full_); }
  VersionedDecode(const VersionedDecode&) = delete;
  VersionedDecode& operator=(const VersionedDecode&) = delete;
  // The encoder's struct_v: which optional trailing fields the body carries.
  uint8_t version() const { return version_; }

 private:
  Decoder& dec_;
  std::string_view full_;
  size_t saved_end_ = 0;
  uint8_t version_ = 0;
};

}  // namespace bypass::msgr::wire

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

class DecodeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Encoder {
 public:
  explicit Encoder(BufferList& out) : out_(out) {}

  void u8(uint8_t v) { out_.append_copy(&v, 1); }
  void u16(uint16_t v) { put_le(v); }
  void u32(uint32_t v) { put_le(v); }
  void u64(uint64_t v) { put_le(v); }
  void i32(int32_t v) { put_le(static_cast<uint32_t>(v)); }
  void i64(int64_t v) { put_le(static_cast<uint64_t>(v)); }
  void boolean(bool v) { u8(v ? 1 : 0); }
  void raw(const void* data, size_t len) {
    if (len) out_.append_copy(data, len);
  }
  void raw(std::string_view bytes) { raw(bytes.data(), bytes.size()); }
  // Ceph's encoding of bufferlist / std::string: __le32 length, then the bytes.
  void blob(std::string_view bytes) {
    u32(static_cast<uint32_t>(bytes.size()));
    raw(bytes);
  }
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
  size_t length() const { return out_.length(); }
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

class Decoder {
 public:
  // `what` names the structure being decoded, for error messages ("CLIENT_IDENT").
  Decoder(std::string_view bytes, std::string what) : data_(bytes), what_(std::move(what)) {}

  uint8_t u8(const char* field) { return static_cast<uint8_t>(get_le<uint8_t>(field)); }
  uint16_t u16(const char* field) { return get_le<uint16_t>(field); }
  uint32_t u32(const char* field) { return get_le<uint32_t>(field); }
  uint64_t u64(const char* field) { return get_le<uint64_t>(field); }
  int32_t i32(const char* field) { return static_cast<int32_t>(get_le<uint32_t>(field)); }
  int64_t i64(const char* field) { return static_cast<int64_t>(get_le<uint64_t>(field)); }
  bool boolean(const char* field) { return u8(field) != 0; }
  std::string_view raw(size_t len, const char* field) {
    need(len, field);
    std::string_view v = data_.substr(pos_, len);
    pos_ += len;
    return v;
  }
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
  void skip(size_t len, const char* field) { raw(len, field); }

  size_t offset() const { return pos_; }
  size_t remaining() const { return data_.size() - pos_; }
  bool at_end() const { return pos_ == data_.size(); }
  const std::string& what() const { return what_; }
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
  std::string_view all() const { return data_; }

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
  uint8_t version() const { return version_; }

 private:
  Decoder& dec_;
  std::string_view full_;
  size_t saved_end_ = 0;
  uint8_t version_ = 0;
};

}  // namespace bypass::msgr::wire

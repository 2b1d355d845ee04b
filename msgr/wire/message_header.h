// ceph_msg_header2 (src/include/msgr.h): segment 0 of a MESSAGE frame, 41 bytes packed:
//   __le64 seq, __le64 tid, __le16 type, __le16 priority, __le16 version,
//   __le32 data_pre_padding_len, __le16 data_off, __le64 ack_seq, __u8 flags,
//   __le16 compat_version, __le16 reserved.
// The front/middle/data lengths travel in the frame preamble instead of the header.
#pragma once

#include <cstdint>
#include <string_view>

#include "msgr/wire/codec.h"

namespace bypass::msgr::wire {

constexpr size_t kMessageHeader2Size = 41;

struct MessageHeader2 {
  uint64_t seq = 0;
  uint64_t tid = 0;
  uint16_t type = 0;
  uint16_t priority = 0;
  uint16_t version = 1;
  uint32_t data_pre_padding_len = 0;
  uint16_t data_off = 0;
  uint64_t ack_seq = 0;
  uint8_t flags = 0;
  uint16_t compat_version = 1;
  uint16_t reserved = 0;

  bool operator==(const MessageHeader2&) const = default;
  // Writes the kMessageHeader2Size bytes to `out` (the send path encodes into a stack buffer).
  void encode_to(char* out) const;
  void encode(BufferList& out) const;
  // Throws DecodeError unless `bytes` is exactly one header.
  static MessageHeader2 decode(std::string_view bytes);
};

}  // namespace bypass::msgr::wire

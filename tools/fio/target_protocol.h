// The messages between a sending job and the receiver (msgr2 message types of this engine only).
//
// A sending job opens one object per fio file (its name and size), then reads and writes at
// offsets in it. Every request carries fio's io in its tid; the reply carries the same tid.
//   OpenRequest  front: name, size                 -> OpenReply front: status, object, error text
//   IoRequest    front: op, object, offset, length -> IoReply   front: status
//                data:  a write's payload                       data:  a read's payload
// Fronts are little-endian (msgr/wire/codec.h); status is 0 or a negative errno.
#pragma once

#include <cstdint>
#include <string>

#include "base/buffer_list.h"
#include "msgr/message.h"

namespace bypass::fio {

constexpr uint16_t kOpenRequest = 0x7c01;
constexpr uint16_t kOpenReply = 0x7c02;
constexpr uint16_t kIoRequest = 0x7c03;
constexpr uint16_t kIoReply = 0x7c04;

enum class IoOp : uint8_t { read = 0, write = 1 };

struct OpenRequest {
  std::string name;  // fio's file name: with the session, it names the object
  uint64_t size = 0;
  void encode(BufferList& front) const;
  static OpenRequest decode(const msgr::Message& m);  // throws msgr::wire::DecodeError
};

struct OpenReply {
  int32_t status = 0;
  uint64_t object = 0;  // the handle IoRequest names
  std::string error;    // why, when status < 0
  void encode(BufferList& front) const;
  static OpenReply decode(const msgr::Message& m);  // throws msgr::wire::DecodeError
};

struct IoRequest {
  IoOp op = IoOp::read;
  uint64_t object = 0;
  uint64_t offset = 0;
  uint32_t length = 0;  // a write's equals its data's length
  void encode(BufferList& front) const;
  static IoRequest decode(const msgr::Message& m);  // throws msgr::wire::DecodeError
};

struct IoReply {
  int32_t status = 0;
  void encode(BufferList& front) const;
  static IoReply decode(const msgr::Message& m);  // throws msgr::wire::DecodeError
};

}  // namespace bypass::fio

// The request/reply protocol shared by reqrep_server and reqrep_client: two registered message
// types whose fields are encoded into the front segment, the request's bytes riding in the data
// segment (which the messenger keeps zero-copy).
#pragma once

#include <bypass/msgr/message.h>
#include <bypass/msgr/wire/codec.h>

#include <cstdint>
#include <memory>
#include <string>

namespace example {

// Application message types: any 16-bit value the peers agree on (Ceph's own stay below 0x4000).
constexpr uint16_t kChecksumRequest = 0x4a01;
constexpr uint16_t kChecksumReply = 0x4a02;

// "Checksum these bytes": the bytes are in data(), `id` matches the reply to the request.
class ChecksumRequest : public bypass::msgr::Message {
 public:
  ChecksumRequest() : Message(kChecksumRequest) {}
  uint64_t id = 0;

  void encode_payload(uint64_t) override {
    front().clear();
    bypass::msgr::wire::Encoder enc(front());
    enc.u64(id);
  }
  void decode_payload() override {
    const std::string bytes = front().to_string();
    bypass::msgr::wire::Decoder dec(bytes, "ChecksumRequest");
    id = dec.u64("id");
  }
  std::string name() const override { return "checksum_request(" + std::to_string(id) + ")"; }
};

class ChecksumReply : public bypass::msgr::Message {
 public:
  ChecksumReply() : Message(kChecksumReply) {}
  uint64_t id = 0;
  uint64_t length = 0;
  uint32_t checksum = 0;

  void encode_payload(uint64_t) override {
    front().clear();
    bypass::msgr::wire::Encoder enc(front());
    enc.u64(id);
    enc.u64(length);
    enc.u32(checksum);
  }
  void decode_payload() override {
    const std::string bytes = front().to_string();
    bypass::msgr::wire::Decoder dec(bytes, "ChecksumReply");
    id = dec.u64("id");
    length = dec.u64("length");
    checksum = dec.u32("checksum");
  }
  std::string name() const override { return "checksum_reply(" + std::to_string(id) + ")"; }
};

// Fletcher-style sum over the bytes of `data`: cheap, and order-sensitive so a shuffled or
// truncated payload shows.
inline uint32_t checksum_of(const std::string& data) {
  uint32_t a = 1, b = 0;
  for (unsigned char c : data) {
    a = (a + c) % 65521;
    b = (b + a) % 65521;
  }
  return b << 16 | a;
}

}  // namespace example

#include "msgr/wire/message_header.h"

#include <string>

#include "msgr/wire/le.h"

namespace bypass::msgr::wire {

namespace {
// Field offsets in the packed 41-byte ceph_msg_header2.
constexpr size_t kSeq = 0, kTid = 8, kType = 16, kPriority = 18, kVersion = 20, kDataPrePadding = 22,
                 kDataOff = 26, kAckSeq = 28, kFlags = 36, kCompatVersion = 37, kReserved = 39;

template <typename T>
void put(char* at, T v) {
  store_le(at, v);
}
template <typename T>
T get(const char* at) {
  return load_le<T>(at);
}
}  // namespace

void MessageHeader2::encode_to(char* out) const {
  put(out + kSeq, seq);
  put(out + kTid, tid);
  put(out + kType, type);
  put(out + kPriority, priority);
  put(out + kVersion, version);
  put(out + kDataPrePadding, data_pre_padding_len);
  put(out + kDataOff, data_off);
  put(out + kAckSeq, ack_seq);
  put(out + kFlags, flags);
  put(out + kCompatVersion, compat_version);
  put(out + kReserved, reserved);
}

void MessageHeader2::encode(BufferList& out) const { encode_to(out.append_hole(kMessageHeader2Size)); }

MessageHeader2 MessageHeader2::decode(std::string_view bytes) {
  if (bytes.size() != kMessageHeader2Size)
    throw DecodeError("ceph_msg_header2: header segment is " + std::to_string(bytes.size()) + " bytes, expected " +
                      std::to_string(kMessageHeader2Size));
  const char* at = bytes.data();
  MessageHeader2 h;
  h.seq = get<uint64_t>(at + kSeq);
  h.tid = get<uint64_t>(at + kTid);
  h.type = get<uint16_t>(at + kType);
  h.priority = get<uint16_t>(at + kPriority);
  h.version = get<uint16_t>(at + kVersion);
  h.data_pre_padding_len = get<uint32_t>(at + kDataPrePadding);
  h.data_off = get<uint16_t>(at + kDataOff);
  h.ack_seq = get<uint64_t>(at + kAckSeq);
  h.flags = get<uint8_t>(at + kFlags);
  h.compat_version = get<uint16_t>(at + kCompatVersion);
  h.reserved = get<uint16_t>(at + kReserved);
  return h;
}

}  // namespace bypass::msgr::wire

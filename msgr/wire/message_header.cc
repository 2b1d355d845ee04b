#include "msgr/wire/message_header.h"

namespace bypass::msgr::wire {

void MessageHeader2::encode(BufferList& out) const {
  Encoder enc(out);
  enc.u64(seq);
  enc.u64(tid);
  enc.u16(type);
  enc.u16(priority);
  enc.u16(version);
  enc.u32(data_pre_padding_len);
  enc.u16(data_off);
  enc.u64(ack_seq);
  enc.u8(flags);
  enc.u16(compat_version);
  enc.u16(reserved);
}

MessageHeader2 MessageHeader2::decode(std::string_view bytes) {
  Decoder dec(bytes, "ceph_msg_header2");
  if (bytes.size() != kMessageHeader2Size)
    dec.fail("<size>", "header segment is " + std::to_string(bytes.size()) + " bytes, expected " +
                           std::to_string(kMessageHeader2Size));
  MessageHeader2 h;
  h.seq = dec.u64("seq");
  h.tid = dec.u64("tid");
  h.type = dec.u16("type");
  h.priority = dec.u16("priority");
  h.version = dec.u16("version");
  h.data_pre_padding_len = dec.u32("data_pre_padding_len");
  h.data_off = dec.u16("data_off");
  h.ack_seq = dec.u64("ack_seq");
  h.flags = dec.u8("flags");
  h.compat_version = dec.u16("compat_version");
  h.reserved = dec.u16("reserved");
  return h;
}

}  // namespace bypass::msgr::wire

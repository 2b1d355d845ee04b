#include "msgr/mon_auth.h"

#include "msgr/wire/codec.h"

namespace bypass::msgr {

MonAuth::MonAuth(uint32_t protocol, std::string auth_payload)
    : Message(kMsgAuth), protocol_(protocol), auth_payload_(std::move(auth_payload)) {}

void MonAuth::encode_payload(uint64_t) {
  wire::Encoder enc(front());
  enc.u64(0);                         // paxos version: none known
  enc.u16(static_cast<uint16_t>(-1));  // deprecated session_mon
  enc.u64(0);                         // deprecated session_mon_tid
  enc.u32(protocol_);
  enc.blob(auth_payload_);
  enc.u32(0);  // monmap_epoch
}

void MonAuth::decode_payload() {
  std::string bytes = front().to_string();
  wire::Decoder dec(bytes, "MAuth");
  dec.u64("version");
  dec.u16("session_mon");
  dec.u64("session_mon_tid");
  protocol_ = dec.u32("protocol");
  auth_payload_ = dec.blob("auth_payload");
}

void MonAuthReply::encode_payload(uint64_t) {
  wire::Encoder enc(front());
  enc.u32(protocol);
  enc.i32(result);
  enc.u64(global_id);
  enc.blob(result_bl);
  enc.blob(result_msg);
}

void MonAuthReply::decode_payload() {
  std::string bytes = front().to_string();
  wire::Decoder dec(bytes, "MAuthReply");
  protocol = dec.u32("protocol");
  result = dec.i32("result");
  global_id = dec.u64("global_id");
  result_bl = dec.blob("result_bl");
  result_msg = dec.blob("result_msg");
}

}  // namespace bypass::msgr

// MAuth / MAuthReply (CEPH_MSG_AUTH, CEPH_MSG_AUTH_REPLY): on an authenticated msgr2 monitor
// session, how a cephx client asks for (or renews) service tickets with GET_PRINCIPAL_SESSION_KEY.
#pragma once

#include <cstdint>
#include <string>

#include "msgr/message.h"

namespace bypass::msgr {

constexpr uint16_t kMsgAuth = 17;       // CEPH_MSG_AUTH
constexpr uint16_t kMsgAuthReply = 18;  // CEPH_MSG_AUTH_REPLY

// front = PaxosServiceMessage header (__le64 version, __le16 session_mon -1, __le64 session_mon_tid),
// __le32 protocol, bufferlist auth_payload, __le32 monmap_epoch.
class MonAuth : public Message {
 public:
  MonAuth() : Message(kMsgAuth) {}
  MonAuth(uint32_t protocol, std::string auth_payload);
  void encode_payload(uint64_t features) override;
  void decode_payload() override;
  uint32_t protocol() const { return protocol_; }
  const std::string& auth_payload() const { return auth_payload_; }

 private:
  uint32_t protocol_ = 0;
  std::string auth_payload_;
};

// front = __le32 protocol, __s32 result, __le64 global_id, bufferlist result_bl, string result_msg.
class MonAuthReply : public Message {
 public:
  MonAuthReply() : Message(kMsgAuthReply) {}
  void encode_payload(uint64_t features) override;
  void decode_payload() override;

  uint32_t protocol = 0;
  int32_t result = 0;
  uint64_t global_id = 0;
  std::string result_bl;
  std::string result_msg;
};

}  // namespace bypass::msgr

// Payloads of msgr2 control frames (every tag except MESSAGE), in Ceph's encoding
// (src/msg/async/frames_v2.h). Each struct encodes to / decodes from the single payload segment.
// decode() throws DecodeError naming the frame and field on short or malformed input and rejects
// trailing garbage.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "msgr/entity.h"
#include "msgr/wire/codec.h"
#include "msgr/wire/frame.h"

namespace bypass::msgr::wire {

// CEPH_AUTH_* method ids and CEPH_CON_MODE_*.
constexpr uint32_t kAuthNone = 1;
constexpr uint32_t kAuthCephx = 2;
// Bypass's own shared-secret method (HMAC-SHA256 challenge-response). The id is outside Ceph's
// assigned range so a Ceph peer answers AUTH_BAD_METHOD instead of misinterpreting it.
constexpr uint32_t kAuthSharedSecret = 0x4250;
constexpr uint32_t kConModeUnknown = 0;
constexpr uint32_t kConModeCrc = 1;
constexpr uint32_t kConModeSecure = 2;

// CEPH_MSG_CONNECT_LOSSY: the sender's policy is lossy.
constexpr uint64_t kIdentFlagLossy = 1;

struct HelloFrame {
  static constexpr Tag tag = Tag::Hello;
  EntityType entity_type = EntityType::Client;
  EntityAddr peer_addr;  // the address the sender sees for the receiver
};

struct AuthRequestFrame {
  static constexpr Tag tag = Tag::AuthRequest;
  uint32_t method = kAuthNone;
  std::vector<uint32_t> preferred_modes;
  std::string auth_payload;
};

struct AuthBadMethodFrame {
  static constexpr Tag tag = Tag::AuthBadMethod;
  uint32_t method = 0;
  int32_t result = 0;
  std::vector<uint32_t> allowed_methods;
  std::vector<uint32_t> allowed_modes;
};

struct AuthReplyMoreFrame {
  static constexpr Tag tag = Tag::AuthReplyMore;
  std::string auth_payload;
};

struct AuthRequestMoreFrame {
  static constexpr Tag tag = Tag::AuthRequestMore;
  std::string auth_payload;
};

struct AuthDoneFrame {
  static constexpr Tag tag = Tag::AuthDone;
  uint64_t global_id = 0;
  uint32_t con_mode = kConModeCrc;
  std::string auth_payload;
};

struct AuthSignatureFrame {
  static constexpr Tag tag = Tag::AuthSignature;
  std::array<uint8_t, 32> signature{};  // HMAC-SHA256 of the peer's pre-auth bytes (zeros: no key)
};

struct ClientIdentFrame {
  static constexpr Tag tag = Tag::ClientIdent;
  EntityAddrVec addrs;     // the client's own addresses
  EntityAddr target_addr;  // the server address the client connected to
  int64_t global_id = 0;   // the client's entity number (entity_name_t num)
  uint64_t global_seq = 0;
  uint64_t supported_features = 0;
  uint64_t required_features = 0;
  uint64_t flags = 0;
  uint64_t cookie = 0;
};

struct ServerIdentFrame {
  static constexpr Tag tag = Tag::ServerIdent;
  EntityAddrVec addrs;
  int64_t global_id = 0;
  uint64_t global_seq = 0;
  uint64_t supported_features = 0;
  uint64_t required_features = 0;
  uint64_t flags = 0;
  uint64_t cookie = 0;
};

struct IdentMissingFeaturesFrame {
  static constexpr Tag tag = Tag::IdentMissingFeatures;
  uint64_t features = 0;
};

struct SessionReconnectFrame {
  static constexpr Tag tag = Tag::SessionReconnect;
  EntityAddrVec addrs;
  uint64_t client_cookie = 0;
  uint64_t server_cookie = 0;
  uint64_t global_seq = 0;
  uint64_t connect_seq = 0;
  uint64_t msg_seq = 0;  // last message sequence the client received
};

struct SessionResetFrame {
  static constexpr Tag tag = Tag::SessionReset;
  bool full = false;
};

struct SessionRetryFrame {
  static constexpr Tag tag = Tag::SessionRetry;
  uint64_t connect_seq = 0;
};

struct SessionRetryGlobalFrame {
  static constexpr Tag tag = Tag::SessionRetryGlobal;
  uint64_t global_seq = 0;
};

struct SessionReconnectOkFrame {
  static constexpr Tag tag = Tag::SessionReconnectOk;
  uint64_t msg_seq = 0;  // last message sequence the server received
};

struct WaitFrame {
  static constexpr Tag tag = Tag::Wait;
};

// utime_t on the wire: __le32 seconds, __le32 nanoseconds.
struct WireTime {
  uint32_t sec = 0;
  uint32_t nsec = 0;
  bool operator==(const WireTime&) const = default;
};

struct Keepalive2Frame {
  static constexpr Tag tag = Tag::Keepalive2;
  WireTime timestamp;
};

struct Keepalive2AckFrame {
  static constexpr Tag tag = Tag::Keepalive2Ack;
  WireTime timestamp;
};

struct AckFrame {
  static constexpr Tag tag = Tag::Ack;
  uint64_t seq = 0;
};

#define BYPASS_CONTROL_FRAME_CODEC(T) \
  void encode(const T& f, BufferList& out); \
  T decode_##T(std::string_view payload);

BYPASS_CONTROL_FRAME_CODEC(HelloFrame)
BYPASS_CONTROL_FRAME_CODEC(AuthRequestFrame)
BYPASS_CONTROL_FRAME_CODEC(AuthBadMethodFrame)
BYPASS_CONTROL_FRAME_CODEC(AuthReplyMoreFrame)
BYPASS_CONTROL_FRAME_CODEC(AuthRequestMoreFrame)
BYPASS_CONTROL_FRAME_CODEC(AuthDoneFrame)
BYPASS_CONTROL_FRAME_CODEC(AuthSignatureFrame)
BYPASS_CONTROL_FRAME_CODEC(ClientIdentFrame)
BYPASS_CONTROL_FRAME_CODEC(ServerIdentFrame)
BYPASS_CONTROL_FRAME_CODEC(IdentMissingFeaturesFrame)
BYPASS_CONTROL_FRAME_CODEC(SessionReconnectFrame)
BYPASS_CONTROL_FRAME_CODEC(SessionResetFrame)
BYPASS_CONTROL_FRAME_CODEC(SessionRetryFrame)
BYPASS_CONTROL_FRAME_CODEC(SessionRetryGlobalFrame)
BYPASS_CONTROL_FRAME_CODEC(SessionReconnectOkFrame)
BYPASS_CONTROL_FRAME_CODEC(WaitFrame)
BYPASS_CONTROL_FRAME_CODEC(Keepalive2Frame)
BYPASS_CONTROL_FRAME_CODEC(Keepalive2AckFrame)
BYPASS_CONTROL_FRAME_CODEC(AckFrame)
#undef BYPASS_CONTROL_FRAME_CODEC

// Typed decode by frame struct: decode_control<ClientIdentFrame>(payload).
template <typename T> T decode_control(std::string_view payload);

}  // namespace bypass::msgr::wire

// msgr2 control frames (every tag but MESSAGE), each declared once: ControlFrame<tag> holds the
// frame's members and its fields() list, the order they travel in (Ceph src/msg/async/frames_v2.h).
// Its encoding, its decoding, its name (tag_name) and its decode errors ("CLIENT_IDENT: field
// 'flags' at offset 70: needs 8 bytes, only 3 left") all follow from that list; see
// docs/msgr2-frames.md for how to add one. A control frame is one segment, its payload.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "msgr/entity.h"
#include "msgr/wire/codec.h"
#include "msgr/wire/frame.h"
#include "msgr/wire/frame_fields.h"

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

// What a peer may make a decoder allocate: an auth method's payload, a list of methods or modes.
constexpr uint32_t kMaxAuthPayload = 64 * 1024;
constexpr uint32_t kMaxListed = 64;

// The control frame of a tag; declared below for every tag Bypass sends or reads (an undeclared
// one, MESSAGE or COMPRESSION_*, is an incomplete type).
template <Tag> struct ControlFrame;

template <>
struct ControlFrame<Tag::Hello> {
  EntityType entity_type = EntityType::Client;
  EntityAddr peer_addr;  // the address the sender sees for the receiver
  static constexpr auto fields() {
    return std::tuple{field("entity_type", &ControlFrame::entity_type), field("peer_addr", &ControlFrame::peer_addr)};
  }
};
using HelloFrame = ControlFrame<Tag::Hello>;

template <>
struct ControlFrame<Tag::AuthRequest> {
  uint32_t method = kAuthNone;
  std::vector<uint32_t> preferred_modes;
  std::string auth_payload;
  static constexpr auto fields() {
    return std::tuple{field("method", &ControlFrame::method),
                      field("preferred_modes", &ControlFrame::preferred_modes, kMaxListed),
                      field("auth_payload", &ControlFrame::auth_payload, kMaxAuthPayload)};
  }
};
using AuthRequestFrame = ControlFrame<Tag::AuthRequest>;

template <>
struct ControlFrame<Tag::AuthBadMethod> {
  uint32_t method = 0;
  int32_t result = 0;  // a negative errno
  std::vector<uint32_t> allowed_methods;
  std::vector<uint32_t> allowed_modes;
  static constexpr auto fields() {
    return std::tuple{field("method", &ControlFrame::method), field("result", &ControlFrame::result),
                      field("allowed_methods", &ControlFrame::allowed_methods, kMaxListed),
                      field("allowed_modes", &ControlFrame::allowed_modes, kMaxListed)};
  }
};
using AuthBadMethodFrame = ControlFrame<Tag::AuthBadMethod>;

template <>
struct ControlFrame<Tag::AuthReplyMore> {
  std::string auth_payload;
  static constexpr auto fields() {
    return std::tuple{field("auth_payload", &ControlFrame::auth_payload, kMaxAuthPayload)};
  }
};
using AuthReplyMoreFrame = ControlFrame<Tag::AuthReplyMore>;

template <>
struct ControlFrame<Tag::AuthRequestMore> {
  std::string auth_payload;
  static constexpr auto fields() {
    return std::tuple{field("auth_payload", &ControlFrame::auth_payload, kMaxAuthPayload)};
  }
};
using AuthRequestMoreFrame = ControlFrame<Tag::AuthRequestMore>;

template <>
struct ControlFrame<Tag::AuthDone> {
  uint64_t global_id = 0;
  uint32_t con_mode = kConModeCrc;
  std::string auth_payload;
  static constexpr auto fields() {
    return std::tuple{field("global_id", &ControlFrame::global_id), field("con_mode", &ControlFrame::con_mode),
                      field("auth_payload", &ControlFrame::auth_payload, kMaxAuthPayload)};
  }
};
using AuthDoneFrame = ControlFrame<Tag::AuthDone>;

template <>
struct ControlFrame<Tag::AuthSignature> {
  std::array<uint8_t, 32> signature{};  // HMAC-SHA256 of the peer's pre-auth bytes (zeros: no key)
  static constexpr auto fields() { return std::tuple{field("signature", &ControlFrame::signature)}; }
};
using AuthSignatureFrame = ControlFrame<Tag::AuthSignature>;

template <>
struct ControlFrame<Tag::ClientIdent> {
  EntityAddrVec addrs;     // the client's own addresses
  EntityAddr target_addr;  // the server address the client connected to
  int64_t global_id = 0;   // the client's entity number (entity_name_t num)
  uint64_t global_seq = 0;
  uint64_t supported_features = 0;
  uint64_t required_features = 0;
  uint64_t flags = 0;
  uint64_t cookie = 0;
  static constexpr auto fields() {
    return std::tuple{field("addrs", &ControlFrame::addrs),
                      field("target_addr", &ControlFrame::target_addr),
                      field("global_id", &ControlFrame::global_id),
                      field("global_seq", &ControlFrame::global_seq),
                      field("supported_features", &ControlFrame::supported_features),
                      field("required_features", &ControlFrame::required_features),
                      field("flags", &ControlFrame::flags),
                      field("client_cookie", &ControlFrame::cookie)};
  }
};
using ClientIdentFrame = ControlFrame<Tag::ClientIdent>;

template <>
struct ControlFrame<Tag::ServerIdent> {
  EntityAddrVec addrs;
  int64_t global_id = 0;
  uint64_t global_seq = 0;
  uint64_t supported_features = 0;
  uint64_t required_features = 0;
  uint64_t flags = 0;
  uint64_t cookie = 0;
  static constexpr auto fields() {
    return std::tuple{field("addrs", &ControlFrame::addrs),
                      field("global_id", &ControlFrame::global_id),
                      field("global_seq", &ControlFrame::global_seq),
                      field("supported_features", &ControlFrame::supported_features),
                      field("required_features", &ControlFrame::required_features),
                      field("flags", &ControlFrame::flags),
                      field("server_cookie", &ControlFrame::cookie)};
  }
};
using ServerIdentFrame = ControlFrame<Tag::ServerIdent>;

template <>
struct ControlFrame<Tag::IdentMissingFeatures> {
  uint64_t features = 0;
  static constexpr auto fields() { return std::tuple{field("features", &ControlFrame::features)}; }
};
using IdentMissingFeaturesFrame = ControlFrame<Tag::IdentMissingFeatures>;

template <>
struct ControlFrame<Tag::SessionReconnect> {
  EntityAddrVec addrs;
  uint64_t client_cookie = 0;
  uint64_t server_cookie = 0;
  uint64_t global_seq = 0;
  uint64_t connect_seq = 0;
  uint64_t msg_seq = 0;  // last message sequence the client received
  static constexpr auto fields() {
    return std::tuple{field("addrs", &ControlFrame::addrs),
                      field("client_cookie", &ControlFrame::client_cookie),
                      field("server_cookie", &ControlFrame::server_cookie),
                      field("global_seq", &ControlFrame::global_seq),
                      field("connect_seq", &ControlFrame::connect_seq),
                      field("msg_seq", &ControlFrame::msg_seq)};
  }
};
using SessionReconnectFrame = ControlFrame<Tag::SessionReconnect>;

template <>
struct ControlFrame<Tag::SessionReset> {
  bool full = false;
  static constexpr auto fields() { return std::tuple{field("full", &ControlFrame::full)}; }
};
using SessionResetFrame = ControlFrame<Tag::SessionReset>;

template <>
struct ControlFrame<Tag::SessionRetry> {
  uint64_t connect_seq = 0;
  static constexpr auto fields() { return std::tuple{field("connect_seq", &ControlFrame::connect_seq)}; }
};
using SessionRetryFrame = ControlFrame<Tag::SessionRetry>;

template <>
struct ControlFrame<Tag::SessionRetryGlobal> {
  uint64_t global_seq = 0;
  static constexpr auto fields() { return std::tuple{field("global_seq", &ControlFrame::global_seq)}; }
};
using SessionRetryGlobalFrame = ControlFrame<Tag::SessionRetryGlobal>;

template <>
struct ControlFrame<Tag::SessionReconnectOk> {
  uint64_t msg_seq = 0;  // last message sequence the server received
  static constexpr auto fields() { return std::tuple{field("msg_seq", &ControlFrame::msg_seq)}; }
};
using SessionReconnectOkFrame = ControlFrame<Tag::SessionReconnectOk>;

template <>
struct ControlFrame<Tag::Wait> {
  static constexpr auto fields() { return std::tuple{}; }
};
using WaitFrame = ControlFrame<Tag::Wait>;

// utime_t on the wire: __le32 seconds, __le32 nanoseconds.
struct WireTime {
  uint32_t sec = 0;
  uint32_t nsec = 0;
  bool operator==(const WireTime&) const = default;
  static constexpr auto fields() { return std::tuple{field("sec", &WireTime::sec), field("nsec", &WireTime::nsec)}; }
};

template <>
struct ControlFrame<Tag::Keepalive2> {
  WireTime timestamp;
  static constexpr auto fields() { return std::tuple{field("timestamp", &ControlFrame::timestamp)}; }
};
using Keepalive2Frame = ControlFrame<Tag::Keepalive2>;

template <>
struct ControlFrame<Tag::Keepalive2Ack> {
  WireTime timestamp;  // the KEEPALIVE2's, echoed
  static constexpr auto fields() { return std::tuple{field("timestamp", &ControlFrame::timestamp)}; }
};
using Keepalive2AckFrame = ControlFrame<Tag::Keepalive2Ack>;

template <>
struct ControlFrame<Tag::Ack> {
  uint64_t seq = 0;  // the last message sequence received
  static constexpr auto fields() { return std::tuple{field("seq", &ControlFrame::seq)}; }
};
using AckFrame = ControlFrame<Tag::Ack>;

// ---- What follows is generated from the declarations above: nothing to add for a new frame. ----

namespace detail {
template <typename F> struct ControlFrameTag;
template <Tag T> struct ControlFrameTag<ControlFrame<T>> {
  static constexpr Tag value = T;
};
}  // namespace detail

// A declared control frame: ControlFrame<T> with its fields() list.
template <typename F>
concept ControlFrameType = requires {
  detail::ControlFrameTag<F>::value;
  F::fields();
};

// The tag a control frame travels under.
template <ControlFrameType F>
constexpr Tag frame_tag = detail::ControlFrameTag<F>::value;

// Appends the frame's payload to `out`.
template <ControlFrameType F>
void encode(const F& frame, BufferList& out) {
  Encoder enc(out);
  encode_fields(enc, frame);
}

// A frame whose fields all have a fixed size (ACK, KEEPALIVE2), encoded into an array.
template <ControlFrameType F>
  requires(fixed_wire_size<F>() != kVariableSize)
std::array<char, fixed_wire_size<F>()> encode_flat(const F& frame) {
  std::array<char, fixed_wire_size<F>()> bytes;
  FlatEncoder enc(bytes.data());
  encode_fields(enc, frame);
  return bytes;
}

// Reads a frame from its whole payload. Throws DecodeError naming the frame and the field when the
// payload is short or a field is malformed, and when bytes are left over after the last field.
template <ControlFrameType F>
F decode_control(std::string_view payload) {
  Decoder dec(payload, tag_name(frame_tag<F>));
  F frame;
  decode_fields(dec, frame);
  if (!dec.at_end()) dec.fail("<end>", std::to_string(dec.remaining()) + " unexpected trailing bytes");
  return frame;
}

// As above, from a received segment; a fixed-size frame of the right length is read through a
// copy on the stack (ACK on the data path allocates nothing).
template <ControlFrameType F>
F decode_control(const BufferList& payload) {
  if constexpr (fixed_wire_size<F>() != kVariableSize) {
    std::array<char, fixed_wire_size<F>()> bytes;
    if (payload.length() == bytes.size()) {
      payload.copy_out(0, bytes.size(), bytes.data());
      return decode_control<F>(std::string_view(bytes.data(), bytes.size()));
    }
  }
  return decode_control<F>(std::string_view(payload.to_string()));
}

// "CLIENT_IDENT{addrs=[v2:127.0.0.1:0/7], ...}": the frame's name and fields, for logs and tests.
template <ControlFrameType F>
std::string describe(const F& frame) {
  return tag_name(frame_tag<F>) + describe_fields(frame);
}

// Calls visit.template operator()<F>() with the control frame declared for `tag` and returns true;
// returns false, calling nothing, for a tag with none (MESSAGE, COMPRESSION_*, unknown values).
template <typename Visitor>
bool visit_control_frame(Tag tag, Visitor&& visit) {
  return [&]<uint8_t... Values>(std::integer_sequence<uint8_t, Values...>) {
    auto one = [&]<uint8_t V>() {
      if constexpr (ControlFrameType<ControlFrame<Tag{V}>>) {
        if (tag != Tag{V}) return false;
        visit.template operator()<ControlFrame<Tag{V}>>();
        return true;
      } else {
        return false;
      }
    };
    return (one.template operator()<Values>() || ...);
  }(std::make_integer_sequence<uint8_t, kLastTag + 1>{});
}

// Calls visit.template operator()<F>() once for every declared control frame, in tag order.
template <typename Visitor>
void for_each_control_frame(Visitor&& visit) {
  for (uint8_t v = kFirstTag; v <= kLastTag; ++v) visit_control_frame(Tag{v}, visit);
}

}  // namespace bypass::msgr::wire

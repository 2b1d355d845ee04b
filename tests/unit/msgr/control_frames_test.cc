// Every control-frame tag: encode -> frame (crc and secure) -> parse -> decode gives the same
// fields, and truncated or padded payloads are rejected with the frame's name in the error. What
// the declarations cannot get wrong the same way on both sides is checked against real Ceph's
// frames in ceph_frames_test.cc.
#include <gtest/gtest.h>

#include <set>

#include "msgr/wire/control_frames.h"

namespace bypass::msgr::wire {
namespace {

EntityAddr addr(const char* text) {
  EntityAddr a;
  EXPECT_TRUE(EntityAddr::parse(text, &a)) << text;
  return a;
}

std::set<Tag> round_tripped;  // every frame through_wire() carried

template <typename T>
T through_wire(const T& in, bool secure) {
  round_tripped.insert(frame_tag<T>);
  FrameAssembler tx;
  FrameReader rx;
  if (secure) {
    AesKey key{};
    key[0] = 7;
    AesNonce nonce{};
    tx.set_cipher(std::make_unique<AesGcmStream>(key, nonce, true));
    rx.set_cipher(std::make_unique<AesGcmStream>(key, nonce, false));
  }
  BufferList payload;
  encode(in, payload);
  BufferList wire;
  tx.assemble_control(frame_tag<T>, payload, wire);
  Frame frame;
  EXPECT_TRUE(rx.read(wire, &frame));
  EXPECT_EQ(frame.tag, frame_tag<T>);
  std::string bytes = frame.segments[0].to_string();
  // Every strict prefix must fail to decode, as must trailing junk.
  for (size_t n = 0; n < bytes.size(); ++n)
    EXPECT_THROW(decode_control<T>(std::string_view(bytes).substr(0, n)), DecodeError) << tag_name(frame_tag<T>) << " " << n;
  EXPECT_THROW(decode_control<T>(bytes + "junk"), DecodeError);
  return decode_control<T>(bytes);
}

class ControlFrames : public ::testing::TestWithParam<bool> {};

TEST_P(ControlFrames, EveryTagRoundTrips) {
  const bool secure = GetParam();
  {
    HelloFrame f{EntityType::Mon, addr("v2:127.0.0.1:40000/0")};
    auto g = through_wire(f, secure);
    EXPECT_EQ(g.entity_type, f.entity_type);
    EXPECT_EQ(g.peer_addr, f.peer_addr);
  }
  {
    AuthRequestFrame f{kAuthSharedSecret, {kConModeSecure, kConModeCrc}, std::string("\x00\x01payload", 9)};
    auto g = through_wire(f, secure);
    EXPECT_EQ(g.method, f.method);
    EXPECT_EQ(g.preferred_modes, f.preferred_modes);
    EXPECT_EQ(g.auth_payload, f.auth_payload);
  }
  {
    AuthBadMethodFrame f{kAuthCephx, -13, {kAuthNone}, {kConModeCrc}};
    auto g = through_wire(f, secure);
    EXPECT_EQ(g.method, f.method);
    EXPECT_EQ(g.result, -13);
    EXPECT_EQ(g.allowed_methods, f.allowed_methods);
    EXPECT_EQ(g.allowed_modes, f.allowed_modes);
  }
  EXPECT_EQ(through_wire(AuthReplyMoreFrame{"challenge"}, secure).auth_payload, "challenge");
  EXPECT_EQ(through_wire(AuthRequestMoreFrame{"answer"}, secure).auth_payload, "answer");
  {
    AuthDoneFrame f{4127, kConModeSecure, "proof"};
    auto g = through_wire(f, secure);
    EXPECT_EQ(g.global_id, 4127u);
    EXPECT_EQ(g.con_mode, kConModeSecure);
    EXPECT_EQ(g.auth_payload, "proof");
  }
  {
    AuthSignatureFrame f;
    for (size_t i = 0; i < f.signature.size(); ++i) f.signature[i] = static_cast<uint8_t>(i);
    EXPECT_EQ(through_wire(f, secure).signature, f.signature);
  }
  {
    ClientIdentFrame f;
    f.addrs.addrs = {addr("v2:127.0.0.1:0/99")};
    f.target_addr = addr("v2:127.0.0.1:3300/0");
    f.global_id = 12;
    f.global_seq = 3;
    f.supported_features = 0x3f01cfbffffdffffull;
    f.required_features = 0x800000000001ull;
    f.flags = kIdentFlagLossy;
    f.cookie = 0xdeadbeef;
    auto g = through_wire(f, secure);
    EXPECT_EQ(g.addrs, f.addrs);
    EXPECT_EQ(g.target_addr, f.target_addr);
    EXPECT_EQ(g.global_id, 12);
    EXPECT_EQ(g.global_seq, 3u);
    EXPECT_EQ(g.supported_features, f.supported_features);
    EXPECT_EQ(g.required_features, f.required_features);
    EXPECT_EQ(g.flags, kIdentFlagLossy);
    EXPECT_EQ(g.cookie, 0xdeadbeefu);
  }
  {
    ServerIdentFrame f;
    f.addrs.addrs = {addr("v2:127.0.0.1:3300/0"), addr("v1:127.0.0.1:6789/0")};
    f.global_id = -1;
    f.global_seq = 9;
    f.supported_features = 1;
    f.required_features = 2;
    f.flags = 0;
    f.cookie = 77;
    auto g = through_wire(f, secure);
    EXPECT_EQ(g.addrs, f.addrs);
    EXPECT_EQ(g.global_id, -1);
    EXPECT_EQ(g.cookie, 77u);
  }
  EXPECT_EQ(through_wire(IdentMissingFeaturesFrame{0x40}, secure).features, 0x40u);
  {
    SessionReconnectFrame f{{{addr("v2:127.0.0.1:1/1")}}, 1, 2, 3, 4, 5};
    auto g = through_wire(f, secure);
    EXPECT_EQ(g.addrs, f.addrs);
    EXPECT_EQ(g.client_cookie, 1u);
    EXPECT_EQ(g.server_cookie, 2u);
    EXPECT_EQ(g.global_seq, 3u);
    EXPECT_EQ(g.connect_seq, 4u);
    EXPECT_EQ(g.msg_seq, 5u);
  }
  EXPECT_TRUE(through_wire(SessionResetFrame{true}, secure).full);
  EXPECT_EQ(through_wire(SessionRetryFrame{8}, secure).connect_seq, 8u);
  EXPECT_EQ(through_wire(SessionRetryGlobalFrame{9}, secure).global_seq, 9u);
  EXPECT_EQ(through_wire(SessionReconnectOkFrame{10}, secure).msg_seq, 10u);
  through_wire(WaitFrame{}, secure);
  EXPECT_EQ(through_wire(Keepalive2Frame{{5, 6}}, secure).timestamp, (WireTime{5, 6}));
  EXPECT_EQ(through_wire(Keepalive2AckFrame{{7, 8}}, secure).timestamp, (WireTime{7, 8}));
  EXPECT_EQ(through_wire(AckFrame{123456789}, secure).seq, 123456789u);

  // A frame declared without a case above fails here.
  std::set<Tag> declared;
  for_each_control_frame([&]<typename F>() { declared.insert(frame_tag<F>); });
  EXPECT_EQ(round_tripped, declared);
}

INSTANTIATE_TEST_SUITE_P(CrcAndSecure, ControlFrames, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "secure" : "crc"; });

// The message of the DecodeError decoding `payload` as F throws ("" when it decodes).
template <typename F>
std::string decode_error(std::string_view payload) {
  try {
    decode_control<F>(payload);
  } catch (const DecodeError& e) {
    return e.what();
  }
  return "";
}

TEST(ControlFrames, DecodeErrorsNameTheFrameAndTheField) {
  ClientIdentFrame ident;
  ident.addrs.addrs = {addr("v2:127.0.0.1:0/99")};
  ident.target_addr = addr("v2:127.0.0.1:3300/0");
  BufferList bl;
  encode(ident, bl);
  const std::string bytes = bl.to_string();
  // Cut in the middle of the flags (the second to last field): 8 + 8 bytes from the end.
  EXPECT_EQ(decode_error<ClientIdentFrame>(std::string_view(bytes).substr(0, bytes.size() - 12)),
            "CLIENT_IDENT: field 'flags' at offset " + std::to_string(bytes.size() - 16) + ": needs 8 bytes, only 4 left");
  EXPECT_EQ(decode_error<ClientIdentFrame>(bytes + "xy"),
            "CLIENT_IDENT: field '<end>' at offset " + std::to_string(bytes.size()) + ": 2 unexpected trailing bytes");
  // A nested record's field names itself.
  EXPECT_EQ(decode_error<Keepalive2Frame>(std::string(6, '\0')), "KEEPALIVE2: field 'nsec' at offset 4: needs 4 bytes, only 2 left");
  EXPECT_EQ(decode_error<WaitFrame>("x"), "WAIT: field '<end>' at offset 0: 1 unexpected trailing bytes");
}

TEST(ControlFrames, FixedSizeFramesEncodeFlatAsTheyEncodeToABufferList) {
  size_t fixed = 0;
  for_each_control_frame([&]<typename F>() {
    if constexpr (fixed_wire_size<F>() != kVariableSize) {
      ++fixed;
      F frame{};
      BufferList bl;
      encode(frame, bl);
      const auto flat = encode_flat(frame);
      EXPECT_EQ(std::string(flat.data(), flat.size()), bl.to_string()) << tag_name(frame_tag<F>);
      // And a received segment of that size decodes through the stack copy.
      EXPECT_NO_THROW(decode_control<F>(bl)) << tag_name(frame_tag<F>);
    }
  });
  // AUTH_SIGNATURE, IDENT_MISSING_FEATURES, SESSION_RESET, SESSION_RETRY, SESSION_RETRY_GLOBAL,
  // SESSION_RECONNECT_OK, WAIT, KEEPALIVE2, KEEPALIVE2_ACK, ACK.
  EXPECT_EQ(fixed, 10u);
  const auto ack = encode_flat(AckFrame{0x0102030405060708});
  EXPECT_EQ(std::string(ack.data(), ack.size()), std::string("\x08\x07\x06\x05\x04\x03\x02\x01", 8));
  BufferList wrong_size;
  wrong_size.append_copy(std::string_view("\x01\x02\x03"));
  EXPECT_THROW(decode_control<AckFrame>(wrong_size), DecodeError);
}

TEST(ControlFrames, VisitFindsTheDeclaredFrameOfATag) {
  std::string seen;
  EXPECT_TRUE(visit_control_frame(Tag::ServerIdent, [&]<typename F>() { seen = tag_name(frame_tag<F>); }));
  EXPECT_EQ(seen, "SERVER_IDENT");
  for (Tag none : {Tag::Message, Tag::CompressionRequest, Tag::CompressionDone, static_cast<Tag>(0), static_cast<Tag>(99)})
    EXPECT_FALSE(visit_control_frame(none, [&]<typename F>() { ADD_FAILURE() << tag_name(frame_tag<F>); }));
}

TEST(ControlFrames, DescribeListsTheFieldsInWireOrder) {
  EXPECT_EQ(describe(AuthBadMethodFrame{kAuthNone, -95, {kAuthCephx}, {kConModeSecure, kConModeCrc}}),
            "AUTH_BAD_METHOD{method=1, result=-95, allowed_methods=[2], allowed_modes=[2, 1]}");
  EXPECT_EQ(describe(Keepalive2Frame{{5, 6}}), "KEEPALIVE2{timestamp={sec=5, nsec=6}}");
  EXPECT_EQ(describe(AuthReplyMoreFrame{std::string("\x01\xab", 2)}), "AUTH_REPLY_MORE{auth_payload=<2 bytes 01ab>}");
}

TEST(ControlFrames, OversizedAuthPayloadAndVectorRejected) {
  BufferList bl;
  Encoder enc(bl);
  enc.u32(kAuthNone);
  enc.u32(0);            // no modes
  enc.u32(1u << 30);     // claims a 1 GiB payload
  EXPECT_EQ(decode_error<AuthRequestFrame>(bl.to_string()),
            "AUTH_REQUEST: field 'auth_payload' at offset 12: length 1073741824 exceeds the limit of 65536 bytes");
  BufferList bl2;
  Encoder enc2(bl2);
  enc2.u32(kAuthNone);
  enc2.u32(100000);  // absurd count of modes
  EXPECT_EQ(decode_error<AuthRequestFrame>(bl2.to_string()),
            "AUTH_REQUEST: field 'preferred_modes' at offset 8: count 100000 exceeds limit 64");
}

TEST(ControlFrames, TagNames) {
  EXPECT_STREQ(tag_name(Tag::Hello), "HELLO");
  EXPECT_STREQ(tag_name(Tag::ClientIdent), "CLIENT_IDENT");
  EXPECT_STREQ(tag_name(Tag::Ack), "ACK");
  EXPECT_STREQ(tag_name(static_cast<Tag>(99)), "UNKNOWN");
}

}  // namespace
}  // namespace bypass::msgr::wire

// Every control-frame tag: encode -> frame (crc and secure) -> parse -> decode gives the same
// fields, and truncated or padded payloads are rejected with the frame's name in the error.
#include <gtest/gtest.h>

#include "msgr/wire/control_frames.h"

namespace bypass::msgr::wire {
namespace {

EntityAddr addr(const char* text) {
  EntityAddr a;
  EXPECT_TRUE(EntityAddr::parse(text, &a)) << text;
  return a;
}

template <typename T>
T through_wire(const T& in, bool secure) {
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
  tx.assemble_control(T::tag, payload, wire);
  Frame frame;
  EXPECT_TRUE(rx.read(wire, &frame));
  EXPECT_EQ(frame.tag, T::tag);
  std::string bytes = frame.segments[0].to_string();
  // Every strict prefix must fail to decode, as must trailing junk.
  for (size_t n = 0; n < bytes.size(); ++n)
    EXPECT_THROW(decode_control<T>(std::string_view(bytes).substr(0, n)), DecodeError) << tag_name(T::tag) << " " << n;
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
}

INSTANTIATE_TEST_SUITE_P(CrcAndSecure, ControlFrames, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "secure" : "crc"; });

TEST(ControlFrames, OversizedAuthPayloadAndVectorRejected) {
  BufferList bl;
  Encoder enc(bl);
  enc.u32(kAuthNone);
  enc.u32(0);            // no modes
  enc.u32(1u << 30);     // claims a 1 GiB payload
  EXPECT_THROW(decode_AuthRequestFrame(bl.to_string()), DecodeError);
  BufferList bl2;
  Encoder enc2(bl2);
  enc2.u32(kAuthNone);
  enc2.u32(100000);  // absurd count of modes
  EXPECT_THROW(decode_AuthRequestFrame(bl2.to_string()), DecodeError);
}

TEST(ControlFrames, TagNames) {
  EXPECT_STREQ(tag_name(Tag::Hello), "HELLO");
  EXPECT_STREQ(tag_name(Tag::ClientIdent), "CLIENT_IDENT");
  EXPECT_STREQ(tag_name(Tag::Ack), "ACK");
  EXPECT_STREQ(tag_name(static_cast<Tag>(99)), "UNKNOWN");
}

}  // namespace
}  // namespace bypass::msgr::wire

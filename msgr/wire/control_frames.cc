#include "msgr/wire/control_frames.h"

namespace bypass::msgr::wire {

namespace {
constexpr uint32_t kMaxAuthPayload = 64 * 1024;

void finish(Decoder& dec) {
  if (!dec.at_end())
    dec.fail("<end>", std::to_string(dec.remaining()) + " unexpected trailing bytes");
}

std::string auth_blob(Decoder& dec, const char* field) {
  uint32_t len = dec.u32(field);
  if (len > kMaxAuthPayload)
    dec.fail(field, "auth payload of " + std::to_string(len) + " bytes exceeds " + std::to_string(kMaxAuthPayload));
  return std::string(dec.raw(len, field));
}

void encode_time(Encoder& enc, const WireTime& t) {
  enc.u32(t.sec);
  enc.u32(t.nsec);
}
WireTime decode_time(Decoder& dec) {
  WireTime t;
  t.sec = dec.u32("timestamp.sec");
  t.nsec = dec.u32("timestamp.nsec");
  return t;
}
}  // namespace

void encode(const HelloFrame& f, BufferList& out) {
  Encoder enc(out);
  enc.u8(static_cast<uint8_t>(f.entity_type));
  f.peer_addr.encode(enc);
}
HelloFrame decode_HelloFrame(std::string_view payload) {
  Decoder dec(payload, "HELLO");
  HelloFrame f;
  f.entity_type = static_cast<EntityType>(dec.u8("entity_type"));
  f.peer_addr = EntityAddr::decode(dec);
  finish(dec);
  return f;
}

void encode(const AuthRequestFrame& f, BufferList& out) {
  Encoder enc(out);
  enc.u32(f.method);
  enc.u32_vector(f.preferred_modes);
  enc.blob(f.auth_payload);
}
AuthRequestFrame decode_AuthRequestFrame(std::string_view payload) {
  Decoder dec(payload, "AUTH_REQUEST");
  AuthRequestFrame f;
  f.method = dec.u32("method");
  f.preferred_modes = dec.u32_vector("preferred_modes");
  f.auth_payload = auth_blob(dec, "auth_payload");
  finish(dec);
  return f;
}

void encode(const AuthBadMethodFrame& f, BufferList& out) {
  Encoder enc(out);
  enc.u32(f.method);
  enc.i32(f.result);
  enc.u32_vector(f.allowed_methods);
  enc.u32_vector(f.allowed_modes);
}
AuthBadMethodFrame decode_AuthBadMethodFrame(std::string_view payload) {
  Decoder dec(payload, "AUTH_BAD_METHOD");
  AuthBadMethodFrame f;
  f.method = dec.u32("method");
  f.result = dec.i32("result");
  f.allowed_methods = dec.u32_vector("allowed_methods");
  f.allowed_modes = dec.u32_vector("allowed_modes");
  finish(dec);
  return f;
}

void encode(const AuthReplyMoreFrame& f, BufferList& out) { Encoder(out).blob(f.auth_payload); }
AuthReplyMoreFrame decode_AuthReplyMoreFrame(std::string_view payload) {
  Decoder dec(payload, "AUTH_REPLY_MORE");
  AuthReplyMoreFrame f;
  f.auth_payload = auth_blob(dec, "auth_payload");
  finish(dec);
  return f;
}

void encode(const AuthRequestMoreFrame& f, BufferList& out) { Encoder(out).blob(f.auth_payload); }
AuthRequestMoreFrame decode_AuthRequestMoreFrame(std::string_view payload) {
  Decoder dec(payload, "AUTH_REQUEST_MORE");
  AuthRequestMoreFrame f;
  f.auth_payload = auth_blob(dec, "auth_payload");
  finish(dec);
  return f;
}

void encode(const AuthDoneFrame& f, BufferList& out) {
  Encoder enc(out);
  enc.u64(f.global_id);
  enc.u32(f.con_mode);
  enc.blob(f.auth_payload);
}
AuthDoneFrame decode_AuthDoneFrame(std::string_view payload) {
  Decoder dec(payload, "AUTH_DONE");
  AuthDoneFrame f;
  f.global_id = dec.u64("global_id");
  f.con_mode = dec.u32("con_mode");
  f.auth_payload = auth_blob(dec, "auth_payload");
  finish(dec);
  return f;
}

// sha256_digest_t encodes as its 32 raw bytes.
void encode(const AuthSignatureFrame& f, BufferList& out) { Encoder(out).raw(f.signature.data(), f.signature.size()); }
AuthSignatureFrame decode_AuthSignatureFrame(std::string_view payload) {
  Decoder dec(payload, "AUTH_SIGNATURE");
  AuthSignatureFrame f;
  std::string_view sig = dec.raw(f.signature.size(), "signature");
  std::memcpy(f.signature.data(), sig.data(), sig.size());
  finish(dec);
  return f;
}

void encode(const ClientIdentFrame& f, BufferList& out) {
  Encoder enc(out);
  f.addrs.encode(enc);
  f.target_addr.encode(enc);
  enc.i64(f.global_id);
  enc.u64(f.global_seq);
  enc.u64(f.supported_features);
  enc.u64(f.required_features);
  enc.u64(f.flags);
  enc.u64(f.cookie);
}
ClientIdentFrame decode_ClientIdentFrame(std::string_view payload) {
  Decoder dec(payload, "CLIENT_IDENT");
  ClientIdentFrame f;
  f.addrs = EntityAddrVec::decode(dec);
  f.target_addr = EntityAddr::decode(dec);
  f.global_id = dec.i64("global_id");
  f.global_seq = dec.u64("global_seq");
  f.supported_features = dec.u64("supported_features");
  f.required_features = dec.u64("required_features");
  f.flags = dec.u64("flags");
  f.cookie = dec.u64("client_cookie");
  finish(dec);
  return f;
}

void encode(const ServerIdentFrame& f, BufferList& out) {
  Encoder enc(out);
  f.addrs.encode(enc);
  enc.i64(f.global_id);
  enc.u64(f.global_seq);
  enc.u64(f.supported_features);
  enc.u64(f.required_features);
  enc.u64(f.flags);
  enc.u64(f.cookie);
}
ServerIdentFrame decode_ServerIdentFrame(std::string_view payload) {
  Decoder dec(payload, "SERVER_IDENT");
  ServerIdentFrame f;
  f.addrs = EntityAddrVec::decode(dec);
  f.global_id = dec.i64("global_id");
  f.global_seq = dec.u64("global_seq");
  f.supported_features = dec.u64("supported_features");
  f.required_features = dec.u64("required_features");
  f.flags = dec.u64("flags");
  f.cookie = dec.u64("server_cookie");
  finish(dec);
  return f;
}

void encode(const IdentMissingFeaturesFrame& f, BufferList& out) { Encoder(out).u64(f.features); }
IdentMissingFeaturesFrame decode_IdentMissingFeaturesFrame(std::string_view payload) {
  Decoder dec(payload, "IDENT_MISSING_FEATURES");
  IdentMissingFeaturesFrame f;
  f.features = dec.u64("features");
  finish(dec);
  return f;
}

void encode(const SessionReconnectFrame& f, BufferList& out) {
  Encoder enc(out);
  f.addrs.encode(enc);
  enc.u64(f.client_cookie);
  enc.u64(f.server_cookie);
  enc.u64(f.global_seq);
  enc.u64(f.connect_seq);
  enc.u64(f.msg_seq);
}
SessionReconnectFrame decode_SessionReconnectFrame(std::string_view payload) {
  Decoder dec(payload, "SESSION_RECONNECT");
  SessionReconnectFrame f;
  f.addrs = EntityAddrVec::decode(dec);
  f.client_cookie = dec.u64("client_cookie");
  f.server_cookie = dec.u64("server_cookie");
  f.global_seq = dec.u64("global_seq");
  f.connect_seq = dec.u64("connect_seq");
  f.msg_seq = dec.u64("msg_seq");
  finish(dec);
  return f;
}

void encode(const SessionResetFrame& f, BufferList& out) { Encoder(out).boolean(f.full); }
SessionResetFrame decode_SessionResetFrame(std::string_view payload) {
  Decoder dec(payload, "SESSION_RESET");
  SessionResetFrame f;
  f.full = dec.boolean("full");
  finish(dec);
  return f;
}

void encode(const SessionRetryFrame& f, BufferList& out) { Encoder(out).u64(f.connect_seq); }
SessionRetryFrame decode_SessionRetryFrame(std::string_view payload) {
  Decoder dec(payload, "SESSION_RETRY");
  SessionRetryFrame f;
  f.connect_seq = dec.u64("connect_seq");
  finish(dec);
  return f;
}

void encode(const SessionRetryGlobalFrame& f, BufferList& out) { Encoder(out).u64(f.global_seq); }
SessionRetryGlobalFrame decode_SessionRetryGlobalFrame(std::string_view payload) {
  Decoder dec(payload, "SESSION_RETRY_GLOBAL");
  SessionRetryGlobalFrame f;
  f.global_seq = dec.u64("global_seq");
  finish(dec);
  return f;
}

void encode(const SessionReconnectOkFrame& f, BufferList& out) { Encoder(out).u64(f.msg_seq); }
SessionReconnectOkFrame decode_SessionReconnectOkFrame(std::string_view payload) {
  Decoder dec(payload, "SESSION_RECONNECT_OK");
  SessionReconnectOkFrame f;
  f.msg_seq = dec.u64("msg_seq");
  finish(dec);
  return f;
}

void encode(const WaitFrame&, BufferList&) {}
WaitFrame decode_WaitFrame(std::string_view payload) {
  Decoder dec(payload, "WAIT");
  finish(dec);
  return {};
}

void encode(const Keepalive2Frame& f, BufferList& out) {
  Encoder enc(out);
  encode_time(enc, f.timestamp);
}
Keepalive2Frame decode_Keepalive2Frame(std::string_view payload) {
  Decoder dec(payload, "KEEPALIVE2");
  Keepalive2Frame f;
  f.timestamp = decode_time(dec);
  finish(dec);
  return f;
}

void encode(const Keepalive2AckFrame& f, BufferList& out) {
  Encoder enc(out);
  encode_time(enc, f.timestamp);
}
Keepalive2AckFrame decode_Keepalive2AckFrame(std::string_view payload) {
  Decoder dec(payload, "KEEPALIVE2_ACK");
  Keepalive2AckFrame f;
  f.timestamp = decode_time(dec);
  finish(dec);
  return f;
}

void encode(const AckFrame& f, BufferList& out) { Encoder(out).u64(f.seq); }
AckFrame decode_AckFrame(std::string_view payload) {
  Decoder dec(payload, "ACK");
  AckFrame f;
  f.seq = dec.u64("seq");
  finish(dec);
  return f;
}

#define BYPASS_DECODE_CONTROL(T) \
  template <> T decode_control<T>(std::string_view payload) { return decode_##T(payload); }
BYPASS_DECODE_CONTROL(HelloFrame)
BYPASS_DECODE_CONTROL(AuthRequestFrame)
BYPASS_DECODE_CONTROL(AuthBadMethodFrame)
BYPASS_DECODE_CONTROL(AuthReplyMoreFrame)
BYPASS_DECODE_CONTROL(AuthRequestMoreFrame)
BYPASS_DECODE_CONTROL(AuthDoneFrame)
BYPASS_DECODE_CONTROL(AuthSignatureFrame)
BYPASS_DECODE_CONTROL(ClientIdentFrame)
BYPASS_DECODE_CONTROL(ServerIdentFrame)
BYPASS_DECODE_CONTROL(IdentMissingFeaturesFrame)
BYPASS_DECODE_CONTROL(SessionReconnectFrame)
BYPASS_DECODE_CONTROL(SessionResetFrame)
BYPASS_DECODE_CONTROL(SessionRetryFrame)
BYPASS_DECODE_CONTROL(SessionRetryGlobalFrame)
BYPASS_DECODE_CONTROL(SessionReconnectOkFrame)
BYPASS_DECODE_CONTROL(WaitFrame)
BYPASS_DECODE_CONTROL(Keepalive2Frame)
BYPASS_DECODE_CONTROL(Keepalive2AckFrame)
BYPASS_DECODE_CONTROL(AckFrame)
#undef BYPASS_DECODE_CONTROL

}  // namespace bypass::msgr::wire

#include "msgr/handshake.h"

#include <algorithm>
#include <cerrno>

#include "base/log.h"
#include "msgr/handshake_auth.h"

namespace bypass::msgr {

using wire::Tag;

namespace {
constexpr int kMaxAuthAttempts = 3;
constexpr int kMaxSessionRetries = 16;

std::array<uint8_t, 32> transcript_signature(const std::string& key, const BufferList& transcript) {
  if (key.empty()) return {};  // no key (auth none): Ceph sends an all-zero signature
  BufferList copy = transcript;
  return auth::hmac_sha256(key, std::string_view(copy.c_str(), copy.length()));
}

}  // namespace

Handshake::Handshake(Role role, HandshakeSettings settings)
    : role_(role), settings_(std::move(settings)) {
  reader_ = std::make_unique<wire::FrameReader>(settings_.limits);
  assembler_ = std::make_unique<wire::FrameAssembler>();
}

Handshake::~Handshake() = default;

std::unique_ptr<Handshake> Handshake::client(HandshakeSettings settings, EntityAddr target,
                                             ClientSession session, ClientHooks hooks) {
  std::unique_ptr<Handshake> h(new Handshake(Role::Client, std::move(settings)));
  h->target_or_peer_ = target;
  h->session_ = session;
  h->client_hooks_ = std::move(hooks);
  return h;
}

std::unique_ptr<Handshake> Handshake::server(HandshakeSettings settings, EntityAddr peer,
                                             ServerHooks hooks) {
  std::unique_ptr<Handshake> h(new Handshake(Role::Server, std::move(settings)));
  h->target_or_peer_ = peer;
  h->server_hooks_ = std::move(hooks);
  return h;
}

const char* Handshake::state_name() const {
  switch (state_) {
    case State::Banner: return "banner";
    case State::Hello: return "hello";
    case State::Auth: return "auth";
    case State::AuthSignature: return "auth-signature";
    case State::Ident: return "ident";
    case State::Done: return "ready";
    case State::Failed: return "failed";
  }
  return "?";
}

void Handshake::fail(const std::string& why) {
  error_ = std::string("in ") + state_name() + ": " + why;
  state_ = State::Failed;
  status_ = Status::Failed;
  throw wire::FrameError(why);
}

void Handshake::send(Tag tag, const BufferList& payload, BufferList& out) {
  BufferList bytes;
  assembler_->assemble_control(tag, payload, bytes);
  if (recording_) sent_transcript_.append(bytes);
  out.append(std::move(bytes));
}

void Handshake::start(BufferList& out) {
  BufferList bytes;
  wire::Banner{}.encode(bytes);
  sent_transcript_.append(bytes);
  out.append(std::move(bytes));
}

Handshake::Status Handshake::feed(BufferList& in, BufferList& out) {
  if (status_ != Status::NeedMore) return status_;
  try {
    if (state_ == State::Banner) {
      BufferList before = in;
      wire::Banner peer;
      bool done = banner_reader_.read(in, &peer);
      received_transcript_.append(before.sub(0, before.length() - in.length()));
      if (!done) return status_;
      std::string why = wire::check_banner_features(wire::Banner{}, peer);
      if (!why.empty()) fail("banner: " + why);
      state_ = State::Hello;
      if (role_ == Role::Client) {
        send_frame(wire::HelloFrame{settings_.my_name.type, target_or_peer_}, out);
      }
    }
    // One frame at a time: after AUTH_DONE/AUTH_SIGNATURE the transcript and the cipher change,
    // and after the last handshake frame the rest of `in` belongs to the link.
    while (state_ != State::Done) {
      BufferList before = in;
      wire::Frame frame;
      bool got = reader_->read(in, &frame);
      if (recording_) received_transcript_.append(before.sub(0, before.length() - in.length()));
      if (!got) break;
      handle_frame(frame, out);
    }
  } catch (const std::exception& e) {
    if (error_.empty()) error_ = std::string("in ") + state_name() + ": " + e.what();
    state_ = State::Failed;
    status_ = Status::Failed;
    return status_;
  }
  if (state_ == State::Done) status_ = Status::Done;
  return status_;
}

void Handshake::handle_frame(wire::Frame& frame, BufferList& out) {
  if (frame.aborted) return;  // the sender abandoned it
  expect(frame.num_segments == 1, std::string(wire::tag_name(frame.tag)) + " frame with " +
                                      std::to_string(frame.num_segments) + " segments during handshake");
  std::string payload = frame.segments[0].to_string();
  if (role_ == Role::Client)
    client_frame(frame.tag, payload, out);
  else
    server_frame(frame.tag, payload, out);
}

void Handshake::send_auth_request(BufferList& out) {
  wire::AuthRequestFrame req;
  req.method = settings_.auth.method;
  req.preferred_modes = client_modes();
  client_auth_ = make_client_auth(settings_.auth, settings_.my_name, result_.peer_name.type, peer_label());
  req.auth_payload = client_auth_->request_payload();
  send_frame(req, out);
}

std::string Handshake::peer_label() const {
  switch (result_.peer_name.type) {
    case EntityType::Mon: return "the monitor";
    case EntityType::Osd: return "the osd";
    case EntityType::Mgr: return "the mgr";
    case EntityType::Mds: return "the mds";
    default: return "the server";
  }
}

namespace {
std::string mode_name(uint32_t mode) {
  return mode == wire::kConModeCrc ? "crc" : mode == wire::kConModeSecure ? "secure" : "mode " + std::to_string(mode);
}
template <typename F> std::string join(const std::vector<uint32_t>& v, F name) {
  std::string s;
  for (uint32_t x : v) s += (s.empty() ? "" : ", ") + name(x);
  return s.empty() ? "nothing" : s;
}
std::string errno_name(int32_t result) {
  switch (-result) {
    case EPERM: return "EPERM";
    case EACCES: return "EACCES";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case EINVAL: return "EINVAL";
    case EIO: return "EIO";
    default: return "error " + std::to_string(result);
  }
}
}  // namespace

// AUTH_BAD_METHOD says what the peer wants; turn it into a sentence about our configuration.
void Handshake::fail_bad_method(const wire::AuthBadMethodFrame& bad) {
  const std::string peer = peer_label();
  const uint32_t ours = settings_.auth.method;
  const bool method_allowed = std::find(bad.allowed_methods.begin(), bad.allowed_methods.end(), ours) !=
                              bad.allowed_methods.end();
  if (!method_allowed) {
    std::string wants = join(bad.allowed_methods, auth_method_name);
    fail(peer + " requires " + wants + "; Bypass was configured with " + auth_method_name(ours) +
         " (ms.auth)" + (bad.allowed_methods.size() > 1 ? " [it accepts " + wants + "]" : ""));
  }
  if (client_auth_) {
    std::string why = client_auth_->explain_refusal(peer, errno_name(bad.result));
    if (!why.empty()) fail(why);
  }
  // The method suits the peer, so the refusal is about the modes.
  fail(peer + " refused " + auth_method_name(ours) + " (" + errno_name(bad.result) + "); it allows modes [" +
       join(bad.allowed_modes, mode_name) + "] and Bypass offered [" + join(client_modes(), mode_name) + "] (" +
       (result_.peer_name.type == EntityType::Mon ? "ms.mon_client_mode" : "ms.client_mode") + ", ms.mode)");
}

void Handshake::install_keys(const auth::SessionKeys& keys) {
  result_.session_key = keys.session_key;
  if (result_.con_mode != wire::kConModeSecure) return;
  const bool client = role_ == Role::Client;
  const wire::AesNonce& rx = client ? keys.client_rx_nonce : keys.server_rx_nonce;
  const wire::AesNonce& tx = client ? keys.server_rx_nonce : keys.client_rx_nonce;
  uint64_t budget = settings_.auth.rekey_after_frames;
  reader_->set_cipher(std::make_unique<wire::AesGcmStream>(keys.aes_key, rx, false, budget));
  assembler_->set_cipher(std::make_unique<wire::AesGcmStream>(keys.aes_key, tx, true, budget));
}

// Both sides sign what they received so far; from here on frames use the negotiated mode.
void Handshake::finish_auth(BufferList& out) {
  wire::AuthSignatureFrame sig;
  sig.signature = transcript_signature(result_.session_key, received_transcript_);
  recording_ = false;
  send_frame(sig, out);
  state_ = State::AuthSignature;
}

void Handshake::send_client_session(BufferList& out) {
  EntityAddrVec mine = settings_.my_addrs;
  if (mine.empty()) {
    // An unbound client identifies with the address the server saw, port 0.
    EntityAddr seen = result_.my_addr_seen_by_peer;
    seen.type = EntityAddr::kMsgr2;
    seen.set_port(0);
    mine.addrs.push_back(seen);
  }
  if (session_.server_cookie) {
    wire::SessionReconnectFrame f;
    f.addrs = mine;
    f.client_cookie = session_.client_cookie;
    f.server_cookie = session_.server_cookie;
    f.global_seq = session_.global_seq;
    f.connect_seq = session_.connect_seq;
    f.msg_seq = session_.in_seq;
    send_frame(f, out);
  } else {
    wire::ClientIdentFrame f;
    f.addrs = mine;
    f.target_addr = target_or_peer_;
    // cephx: the monitor assigned us a global id; other services know us by it from the ticket.
    f.global_id = result_.auth_global_id ? static_cast<int64_t>(result_.auth_global_id) : settings_.my_name.num;
    f.global_seq = session_.global_seq;
    f.supported_features = settings_.features;
    f.required_features = settings_.required_features;
    f.flags = settings_.lossy ? wire::kIdentFlagLossy : 0;
    f.cookie = session_.client_cookie;
    send_frame(f, out);
  }
  state_ = State::Ident;
}

void Handshake::client_frame(Tag tag, std::string_view payload, BufferList& out) {
  switch (state_) {
    case State::Hello: {
      expect(tag == Tag::Hello, std::string("expected HELLO, got ") + wire::tag_name(tag));
      auto hello = wire::decode_control<wire::HelloFrame>(payload);
      result_.peer_name.type = hello.entity_type;
      result_.my_addr_seen_by_peer = hello.peer_addr;
      state_ = State::Auth;
      send_auth_request(out);
      return;
    }
    case State::Auth: {
      if (tag == Tag::AuthBadMethod) fail_bad_method(wire::decode_control<wire::AuthBadMethodFrame>(payload));
      if (tag == Tag::AuthReplyMore) {
        expect(++auth_attempts_ <= kMaxAuthAttempts, "too many auth rounds");
        auto more = wire::decode_control<wire::AuthReplyMoreFrame>(payload);
        std::string answer = client_auth_->answer_challenge(more.auth_payload);
        send_frame(wire::AuthRequestMoreFrame{answer}, out);
        return;
      }
      expect(tag == Tag::AuthDone, std::string("expected AUTH_DONE, got ") + wire::tag_name(tag));
      auto done = wire::decode_control<wire::AuthDoneFrame>(payload);
      expect(done.con_mode == wire::kConModeCrc || done.con_mode == wire::kConModeSecure,
             "server chose unknown connection mode " + std::to_string(done.con_mode));
      result_.con_mode = done.con_mode;
      install_keys(client_auth_->finish(done, result_));
      finish_auth(out);
      return;
    }
    case State::AuthSignature: {
      expect(tag == Tag::AuthSignature, std::string("expected AUTH_SIGNATURE, got ") + wire::tag_name(tag));
      auto sig = wire::decode_control<wire::AuthSignatureFrame>(payload);
      expect(sig.signature == transcript_signature(result_.session_key, sent_transcript_),
             "peer's AUTH_SIGNATURE does not match what we sent (tampered handshake?)");
      send_client_session(out);
      return;
    }
    case State::Ident: {
      switch (tag) {
        case Tag::ServerIdent: {
          auto ident = wire::decode_control<wire::ServerIdentFrame>(payload);
          uint64_t missing = settings_.required_features & ~ident.supported_features;
          expect(missing == 0, "server lacks required features " + std::to_string(missing));
          // A zero cookie is legal: lossy servers keep no session to resume (Ceph sends 0).
          result_.peer_addrs = ident.addrs;
          result_.peer_name.num = ident.global_id;
          result_.peer_features = ident.supported_features;
          result_.peer_global_seq = ident.global_seq;
          result_.peer_lossy = ident.flags & wire::kIdentFlagLossy;
          result_.client_cookie = session_.client_cookie;
          result_.server_cookie = ident.cookie;
          result_.connect_seq = session_.connect_seq;
          state_ = State::Done;
          return;
        }
        case Tag::SessionReconnectOk: {
          expect(session_.server_cookie != 0, "SESSION_RECONNECT_OK without a reconnect");
          auto ok = wire::decode_control<wire::SessionReconnectOkFrame>(payload);
          result_.reconnected = true;
          result_.peer_in_seq = ok.msg_seq;
          result_.client_cookie = session_.client_cookie;
          result_.server_cookie = session_.server_cookie;
          result_.connect_seq = session_.connect_seq;
          result_.peer_addrs = EntityAddrVec{{target_or_peer_}};
          state_ = State::Done;
          return;
        }
        case Tag::SessionReset: {
          auto reset = wire::decode_control<wire::SessionResetFrame>(payload);
          expect(++retries_ <= kMaxSessionRetries, "too many session retries");
          if (client_hooks_.session_reset) client_hooks_.session_reset(reset.full);
          session_.server_cookie = 0;
          session_.connect_seq = 0;
          session_.in_seq = 0;
          send_client_session(out);
          return;
        }
        case Tag::SessionRetry: {
          auto retry = wire::decode_control<wire::SessionRetryFrame>(payload);
          expect(++retries_ <= kMaxSessionRetries, "too many session retries");
          session_.connect_seq = retry.connect_seq + 1;
          send_client_session(out);
          return;
        }
        case Tag::SessionRetryGlobal: {
          auto retry = wire::decode_control<wire::SessionRetryGlobalFrame>(payload);
          expect(++retries_ <= kMaxSessionRetries, "too many session retries");
          session_.global_seq = client_hooks_.next_global_seq ? client_hooks_.next_global_seq(retry.global_seq)
                                                              : retry.global_seq + 1;
          send_client_session(out);
          return;
        }
        case Tag::IdentMissingFeatures: {
          auto missing = wire::decode_control<wire::IdentMissingFeaturesFrame>(payload);
          fail("server says we lack required features " + std::to_string(missing.features));
        }
        case Tag::Wait:
          wire::decode_control<wire::WaitFrame>(payload);
          fail("server asked us to WAIT (connection race)");
        default:
          fail(std::string("unexpected ") + wire::tag_name(tag) + " while waiting for SERVER_IDENT");
      }
    }
    default:
      fail(std::string("unexpected ") + wire::tag_name(tag) + " frame in state " + state_name());
  }
}

// The modes we accept as a server: ms.service_mode, less what our auth method cannot provide
// (secure needs a key, which auth none does not yield).
std::vector<uint32_t> Handshake::server_modes() const {
  std::vector<uint32_t> modes = settings_.auth.service_modes;
  if (modes.empty()) modes = {wire::kConModeCrc, wire::kConModeSecure};
  if (!find_auth_method(settings_.auth.method)->yields_key) std::erase(modes, wire::kConModeSecure);
  return modes;
}

// The modes we offer, by the peer type its HELLO named: ms.mon_client_mode or ms.client_mode.
std::vector<uint32_t> Handshake::client_modes() const {
  const AuthSettings& a = settings_.auth;
  std::vector<uint32_t> modes = result_.peer_name.type == EntityType::Mon ? a.mon_client_modes : a.client_modes;
  if (modes.empty()) {
    modes = {a.mode, a.mode == wire::kConModeSecure ? wire::kConModeCrc : wire::kConModeSecure};
  }
  const AuthMethodInfo* method = find_auth_method(a.method);
  if (method && !method->yields_key) std::erase(modes, wire::kConModeSecure);
  return modes;
}

void Handshake::server_auth_request(const wire::AuthRequestFrame& req, BufferList& out) {
  const std::vector<uint32_t> modes = server_modes();
  if (req.method != settings_.auth.method || find_auth_method(req.method) == nullptr) {
    send_frame(wire::AuthBadMethodFrame{req.method, -EOPNOTSUPP, {settings_.auth.method}, modes}, out);
    return;
  }
  // Pick the client's most preferred mode that the method can provide.
  uint32_t mode = wire::kConModeUnknown;
  for (uint32_t m : req.preferred_modes) {
    if (std::find(modes.begin(), modes.end(), m) != modes.end()) {
      mode = m;
      break;
    }
  }
  if (mode == wire::kConModeUnknown) {
    send_frame(wire::AuthBadMethodFrame{req.method, -EOPNOTSUPP, {settings_.auth.method}, modes}, out);
    return;
  }
  result_.con_mode = mode;
  server_auth_ = make_server_auth(req.method, settings_.auth, settings_.my_name);
  std::optional<std::string> challenge;
  try {
    challenge = server_auth_->start(req.auth_payload);
  } catch (const auth::AuthError& e) {
    refuse(server_auth_->refusal_at_start(), e.what(), out);
  }
  if (!challenge) {
    // A method without rounds (none): done at once, without a key.
    send_frame(wire::AuthDoneFrame{0, mode, ""}, out);
    finish_auth(out);
    return;
  }
  send_frame(wire::AuthReplyMoreFrame{*challenge}, out);
}

// An auth::AuthError ends the handshake; `error` non-zero tells the client in AUTH_BAD_METHOD.
void Handshake::refuse(int32_t error, const std::string& why, BufferList& out) {
  if (error != 0)
    send_frame(wire::AuthBadMethodFrame{settings_.auth.method, error, {settings_.auth.method}, server_modes()}, out);
  fail(why);
}

void Handshake::server_auth_more(std::string_view payload, BufferList& out) {
  expect(server_auth_ != nullptr, "AUTH_REQUEST_MORE before AUTH_REQUEST");
  auth::SessionKeys keys;
  ServerAuth::Done done;
  try {
    done = server_auth_->authenticate(payload, result_.con_mode == wire::kConModeSecure, &keys, result_);
  } catch (const auth::AuthError& e) {
    refuse(server_auth_->refusal_at_proof(), e.what(), out);
  }
  send_frame(wire::AuthDoneFrame{done.global_id, result_.con_mode, done.payload}, out);
  install_keys(keys);
  finish_auth(out);
}

void Handshake::server_frame(Tag tag, std::string_view payload, BufferList& out) {
  switch (state_) {
    case State::Hello: {
      expect(tag == Tag::Hello, std::string("expected HELLO, got ") + wire::tag_name(tag));
      auto hello = wire::decode_control<wire::HelloFrame>(payload);
      result_.peer_name.type = hello.entity_type;
      result_.my_addr_seen_by_peer = hello.peer_addr;
      send_frame(wire::HelloFrame{settings_.my_name.type, target_or_peer_}, out);
      state_ = State::Auth;
      return;
    }
    case State::Auth: {
      if (tag == Tag::AuthRequestMore) {
        server_auth_more(wire::decode_control<wire::AuthRequestMoreFrame>(payload).auth_payload, out);
        return;
      }
      expect(tag == Tag::AuthRequest, std::string("expected AUTH_REQUEST, got ") + wire::tag_name(tag));
      expect(++auth_attempts_ <= kMaxAuthAttempts, "too many auth attempts");
      server_auth_request(wire::decode_control<wire::AuthRequestFrame>(payload), out);
      return;
    }
    case State::AuthSignature: {
      expect(tag == Tag::AuthSignature, std::string("expected AUTH_SIGNATURE, got ") + wire::tag_name(tag));
      auto sig = wire::decode_control<wire::AuthSignatureFrame>(payload);
      expect(sig.signature == transcript_signature(result_.session_key, sent_transcript_),
             "peer's AUTH_SIGNATURE does not match what we sent (tampered handshake?)");
      state_ = State::Ident;
      return;
    }
    case State::Ident: {
      if (tag == Tag::ClientIdent) {
        auto ident = wire::decode_control<wire::ClientIdentFrame>(payload);
        uint64_t missing = settings_.required_features & ~ident.supported_features;
        if (missing) {
          send_frame(wire::IdentMissingFeaturesFrame{missing}, out);
          fail("client lacks required features " + std::to_string(missing));
        }
        result_.peer_addrs = ident.addrs;
        result_.peer_name.num = ident.global_id;
        result_.peer_features = ident.supported_features;
        result_.peer_global_seq = ident.global_seq;
        result_.peer_lossy = ident.flags & wire::kIdentFlagLossy;
        result_.client_cookie = ident.cookie;
        std::string why = "refused";
        std::optional<uint64_t> cookie =
            server_hooks_.accept_session ? server_hooks_.accept_session(ident, result_, &why) : std::optional<uint64_t>(1);
        if (!cookie) fail("refused CLIENT_IDENT from " + result_.peer_name.to_string() + ": " + why);
        result_.server_cookie = *cookie;
        BYPASS_LOG(Info, "msgr", "CLIENT_IDENT from %s addrs %s target %s features 0x%llx flags 0x%llx cookie %llu",
                   result_.peer_name.to_string().c_str(), ident.addrs.to_string().c_str(),
                   ident.target_addr.to_string().c_str(), static_cast<unsigned long long>(ident.supported_features),
                   static_cast<unsigned long long>(ident.flags), static_cast<unsigned long long>(ident.cookie));
        wire::ServerIdentFrame reply;
        reply.addrs = settings_.my_addrs;
        reply.global_id = settings_.my_name.num;
        reply.global_seq = session_.global_seq;
        reply.supported_features = settings_.features;
        reply.required_features = settings_.required_features;
        reply.flags = settings_.lossy ? wire::kIdentFlagLossy : 0;
        reply.cookie = *cookie;
        send_frame(reply, out);
        state_ = State::Done;
        return;
      }
      expect(tag == Tag::SessionReconnect, std::string("expected CLIENT_IDENT or SESSION_RECONNECT, got ") + wire::tag_name(tag));
      expect(++retries_ <= kMaxSessionRetries, "too many reconnect attempts");
      auto rc = wire::decode_control<wire::SessionReconnectFrame>(payload);
      result_.peer_addrs = rc.addrs;
      result_.client_cookie = rc.client_cookie;
      result_.server_cookie = rc.server_cookie;
      result_.peer_global_seq = rc.global_seq;
      result_.connect_seq = rc.connect_seq;
      result_.peer_in_seq = rc.msg_seq;
      ReconnectDecision d = server_hooks_.reconnect ? server_hooks_.reconnect(rc, result_) : ReconnectDecision{};
      switch (d.kind) {
        case ReconnectDecision::Ok:
          send_frame(wire::SessionReconnectOkFrame{d.value}, out);
          result_.reconnected = true;
          state_ = State::Done;
          return;
        case ReconnectDecision::Reset:
          send_frame(wire::SessionResetFrame{d.full_reset}, out);
          return;
        case ReconnectDecision::RetrySession:
          send_frame(wire::SessionRetryFrame{d.value}, out);
          return;
        case ReconnectDecision::RetryGlobal:
          send_frame(wire::SessionRetryGlobalFrame{d.value}, out);
          return;
      }
      return;
    }
    default:
      fail(std::string("unexpected ") + wire::tag_name(tag) + " frame in state " + state_name());
  }
}

}  // namespace bypass::msgr

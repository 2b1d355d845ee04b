// The msgr2.1 connection handshake as a byte-in/byte-out state machine (no sockets, no threads):
// banner exchange, HELLO, authentication (AUTH_REQUEST .. AUTH_DONE, AUTH_SIGNATURE) and the
// session step (CLIENT_IDENT/SERVER_IDENT for a new session, SESSION_RECONNECT and its answers
// for an existing one). Feeding it bytes appends the bytes to send; once done() the link takes
// over the frame reader/assembler (already switched to secure mode if negotiated).
//
// Being free of I/O it is driven the same way by the real connection, by unit tests that connect
// two instances back to back, and by the fuzzer.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "msgr/auth/cephx_client.h"
#include "msgr/auth/cephx_server.h"
#include "msgr/auth/shared_secret.h"
#include "msgr/entity.h"
#include "msgr/wire/banner.h"
#include "msgr/wire/control_frames.h"
#include "msgr/wire/frame.h"

namespace bypass::msgr {

class ClientAuth;
class ServerAuth;

// Ceph feature bits we advertise in CLIENT_IDENT/SERVER_IDENT (CEPH_FEATURES_ALL of pacific) and
// those we insist on: MSG_ADDR2 (bit 59, entity_addrvec_t encoding) and SERVER_NAUTILUS (bit 61)
// are what msgr2 frames assume.
constexpr uint64_t kCephFeatureMsgAddr2 = 1ull << 59;
constexpr uint64_t kCephFeatureServerNautilus = 1ull << 61;
constexpr uint64_t kCephFeaturesAll = 0x3f01cfbdfffdffffull;  // what pacific's ceph CLI advertises
constexpr uint64_t kCephFeaturesRequired = kCephFeatureMsgAddr2;

struct AuthSettings {
  uint32_t method = wire::kAuthNone;     // kAuthNone, kAuthCephx or kAuthSharedSecret
  std::string secret;                    // shared_secret only
  uint32_t mode = wire::kConModeCrc;     // preferred: kConModeCrc or kConModeSecure
  // Modes per peer type, in order of preference (Ceph's ms_mon_client_mode, ms_client_mode,
  // ms_service_mode); empty: `mode` first, then the other one (a server: whatever the method
  // can provide).
  std::vector<uint32_t> mon_client_modes;  // we connect to a monitor
  std::vector<uint32_t> client_modes;      // we connect to any other service
  std::vector<uint32_t> service_modes;     // a client connects to us
  uint64_t rekey_after_frames = wire::AesGcmStream::kMaxUnits;
  // cephx: who we are and our key (client), the clients' keys (server).
  std::shared_ptr<const auth::Keyring> keyring;
  auth::CephxEntity cephx_name;
  // cephx client: the tickets the monitor handed out, for connections to other services.
  std::shared_ptr<auth::CephxTicketStore> tickets;
  // cephx server: the secrets our tickets are sealed with, and how long the tickets are valid.
  std::shared_ptr<const auth::CephxServiceSecrets> cephx_secrets;
  std::chrono::seconds cephx_ticket_ttl{3600};
  // cephx client: services (CEPH_ENTITY_TYPE_* bits) to get tickets for from the monitor.
  uint32_t cephx_want = 0x01 | 0x04 | 0x10;  // mon, osd, mgr
};

struct HandshakeSettings {
  EntityName my_name;
  EntityAddrVec my_addrs;
  uint64_t features = kCephFeaturesAll;
  uint64_t required_features = kCephFeaturesRequired;
  bool lossy = false;  // our policy (sent as CEPH_MSG_CONNECT_LOSSY)
  AuthSettings auth;
  wire::FrameLimits limits;
};

// What a client asks for: a fresh session, or to resume one.
struct ClientSession {
  uint64_t client_cookie = 0;
  uint64_t server_cookie = 0;  // non-zero: reconnect
  uint64_t global_seq = 0;
  uint64_t connect_seq = 0;
  uint64_t in_seq = 0;  // last message sequence we received
};

// The server's answer to SESSION_RECONNECT.
struct ReconnectDecision {
  enum Kind { Ok, Reset, RetrySession, RetryGlobal } kind = Reset;
  uint64_t value = 0;  // Ok: server's in_seq; RetrySession: connect_seq; RetryGlobal: global_seq
  bool full_reset = true;
};

struct HandshakeResult {
  EntityName peer_name;
  EntityAddrVec peer_addrs;
  EntityAddr my_addr_seen_by_peer;  // from the peer's HELLO
  uint64_t peer_features = 0;
  uint64_t peer_global_seq = 0;
  bool peer_lossy = false;
  uint32_t con_mode = wire::kConModeCrc;
  uint64_t client_cookie = 0;
  uint64_t server_cookie = 0;
  uint64_t connect_seq = 0;
  bool reconnected = false;
  uint64_t peer_in_seq = 0;  // reconnect: the last of our messages the peer received
  std::string session_key;
  uint64_t auth_global_id = 0;  // cephx: the global id the monitor assigned in AUTH_DONE
  auth::CephxMonSession cephx_mon_session;  // cephx, monitor-style (either end)
};

class Handshake {
 public:
  enum class Role { Client, Server };
  enum class Status { NeedMore, Done, Failed };

  struct ServerHooks {
    // A new session: returns the server cookie to send, or nullopt to refuse (the reason goes
    // into *why).
    std::function<std::optional<uint64_t>(const wire::ClientIdentFrame&, const HandshakeResult&,
                                          std::string* why)> accept_session;
    std::function<ReconnectDecision(const wire::SessionReconnectFrame&, const HandshakeResult&)>
        reconnect;
  };
  struct ClientHooks {
    // SESSION_RESET from the server: forget the old session (lossless replay is impossible).
    std::function<void(bool full)> session_reset;
    // SESSION_RETRY_GLOBAL: returns a global_seq larger than `at_least`.
    std::function<uint64_t(uint64_t at_least)> next_global_seq;
  };

  // Client: `target` is the server address we connected to; `session` what to ask for.
  static std::unique_ptr<Handshake> client(HandshakeSettings settings, EntityAddr target,
                                           ClientSession session, ClientHooks hooks);
  // Server: `peer` is the address the socket reports for the client.
  static std::unique_ptr<Handshake> server(HandshakeSettings settings, EntityAddr peer,
                                           ServerHooks hooks);

  ~Handshake();

  // Appends our banner to `out`.
  void start(BufferList& out);
  // Consumes bytes from `in`, appends what to send to `out`.
  Status feed(BufferList& in, BufferList& out);

  Status status() const { return status_; }
  const std::string& error() const { return error_; }
  const HandshakeResult& result() const { return result_; }
  std::unique_ptr<wire::FrameReader> take_reader() { return std::move(reader_); }
  std::unique_ptr<wire::FrameAssembler> take_assembler() { return std::move(assembler_); }
  // Name of the step we are waiting in, for logs.
  const char* state_name() const;

 private:
  enum class State { Banner, Hello, Auth, AuthSignature, Ident, Done, Failed };

  Handshake(Role role, HandshakeSettings settings);
  void handle_frame(wire::Frame& frame, BufferList& out);
  void client_frame(wire::Tag tag, std::string_view payload, BufferList& out);
  void server_frame(wire::Tag tag, std::string_view payload, BufferList& out);
  void send(wire::Tag tag, const BufferList& payload, BufferList& out);
  template <typename F> void send_frame(const F& frame, BufferList& out) {
    BufferList payload;
    wire::encode(frame, payload);
    send(wire::frame_tag<F>, payload, out);
  }
  void send_auth_request(BufferList& out);
  [[noreturn]] void fail_bad_method(const wire::AuthBadMethodFrame& bad);
  std::string peer_label() const;
  std::vector<uint32_t> server_modes() const;
  std::vector<uint32_t> client_modes() const;
  void server_auth_request(const wire::AuthRequestFrame& req, BufferList& out);
  void server_auth_more(std::string_view payload, BufferList& out);
  [[noreturn]] void refuse(int32_t error, const std::string& why, BufferList& out);
  void finish_auth(BufferList& out);
  void send_client_session(BufferList& out);
  void install_keys(const auth::SessionKeys& keys);
  [[noreturn]] void fail(const std::string& why);
  void expect(bool ok, const std::string& why) {
    if (!ok) fail(why);
  }

  Role role_;
  HandshakeSettings settings_;
  State state_ = State::Banner;
  Status status_ = Status::NeedMore;
  std::string error_;
  HandshakeResult result_;
  EntityAddr target_or_peer_;
  ClientSession session_;
  ClientHooks client_hooks_;
  ServerHooks server_hooks_;
  wire::BannerReader banner_reader_;
  std::unique_ptr<wire::FrameReader> reader_;
  std::unique_ptr<wire::FrameAssembler> assembler_;
  // The AUTH phase's method (msgr/handshake_auth.h), chosen when it begins.
  std::unique_ptr<ClientAuth> client_auth_;
  std::unique_ptr<ServerAuth> server_auth_;
  bool recording_ = true;  // pre-auth transcript, signed in AUTH_SIGNATURE
  BufferList sent_transcript_;
  BufferList received_transcript_;
  int auth_attempts_ = 0;
  int retries_ = 0;
};

}  // namespace bypass::msgr

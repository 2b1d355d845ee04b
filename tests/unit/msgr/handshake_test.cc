// Two Handshake state machines wired back to back in memory: every auth method and mode, a
// wrong secret, reconnect answers, and byte-by-byte delivery.
#include <gtest/gtest.h>

#include "msgr/handshake.h"

namespace bypass::msgr {
namespace {

EntityAddr addr(const char* text) {
  EntityAddr a;
  EXPECT_TRUE(EntityAddr::parse(text, &a));
  return a;
}

struct Pair {
  std::unique_ptr<Handshake> client, server;
  BufferList c2s, s2c;
  int server_sessions = 0;
  ReconnectDecision decision;

  Pair(AuthSettings client_auth, AuthSettings server_auth, ClientSession session = {},
       EntityType server_type = EntityType::Osd) {
    HandshakeSettings cs;
    cs.my_name = {EntityType::Client, 5};
    cs.auth = client_auth;
    HandshakeSettings ss;
    ss.my_name = {server_type, 1};
    ss.my_addrs.addrs = {addr("v2:127.0.0.1:6800/9")};
    ss.auth = server_auth;
    Handshake::ServerHooks sh;
    sh.accept_session = [this](const wire::ClientIdentFrame&, const HandshakeResult&, std::string*) {
      ++server_sessions;
      return std::optional<uint64_t>(777);
    };
    sh.reconnect = [this](const wire::SessionReconnectFrame&, const HandshakeResult&) { return decision; };
    client = Handshake::client(cs, addr("v2:127.0.0.1:6800/9"), session, {});
    server = Handshake::server(ss, addr("v2:127.0.0.1:40000/0"), sh);
    client->start(c2s);
    server->start(s2c);
  }

  // Deliver bytes in `chunk`-sized pieces until both are done or stuck.
  void pump(size_t chunk = 1 << 20) {
    BufferList to_server, to_client;
    for (int i = 0; i < 100000; ++i) {
      bool moved = false;
      if (!c2s.empty()) {
        size_t n = std::min(chunk, c2s.length());
        c2s.splice_front(n, to_server);
        server->feed(to_server, s2c);
        moved = true;
      }
      if (!s2c.empty()) {
        size_t n = std::min(chunk, s2c.length());
        s2c.splice_front(n, to_client);
        client->feed(to_client, c2s);
        moved = true;
      }
      if (!moved) return;
    }
  }
};

AuthSettings none() { return {}; }
AuthSettings shared(const char* secret, uint32_t mode) {
  AuthSettings a;
  a.method = wire::kAuthSharedSecret;
  a.secret = secret;
  a.mode = mode;
  return a;
}

// client.admin with cephx, a random key in its keyring and an empty ticket store; a server given
// the same settings (its own tickets dropped) knows that key.
AuthSettings cephx_admin_with_a_new_key(uint32_t mode) {
  AuthSettings a;
  a.method = wire::kAuthCephx;
  a.mode = mode;
  a.cephx_name = {0x08, "admin"};
  a.keyring = std::make_shared<const auth::Keyring>(auth::Keyring::parse(
      "[client.admin]\n\tkey = " + auth::CephxKey::random().to_base64() + "\n", "test.keyring"));
  a.tickets = std::make_shared<auth::CephxTicketStore>();
  return a;
}

TEST(Handshake, AuthNoneCrc) {
  Pair run(none(), none());
  run.pump();
  ASSERT_EQ(run.client->status(), Handshake::Status::Done) << run.client->error();
  ASSERT_EQ(run.server->status(), Handshake::Status::Done) << run.server->error();
  EXPECT_EQ(run.server_sessions, 1);
  EXPECT_EQ(run.client->result().server_cookie, 777u);
  EXPECT_EQ(run.client->result().peer_name.to_string(), "osd.1");
  EXPECT_EQ(run.server->result().peer_name.to_string(), "client.5");
  EXPECT_EQ(run.client->result().con_mode, wire::kConModeCrc);
  EXPECT_EQ(run.client->result().my_addr_seen_by_peer.to_string(), "v2:127.0.0.1:40000/0");
}

// Auth none yields no key (the method table in handshake_auth.cc): a client preferring secure
// mode offers crc only, and the server keeps secure out of what it accepts.
TEST(Handshake, AuthNoneWithSecurePreferredSettlesOnCrc) {
  AuthSettings secure_first = none();
  secure_first.mode = wire::kConModeSecure;
  Pair run(secure_first, secure_first);
  run.pump();
  ASSERT_EQ(run.client->status(), Handshake::Status::Done) << run.client->error();
  ASSERT_EQ(run.server->status(), Handshake::Status::Done) << run.server->error();
  EXPECT_EQ(run.client->result().con_mode, wire::kConModeCrc);
  EXPECT_TRUE(run.client->result().session_key.empty());
}

TEST(Handshake, SharedSecretSecureByteByByte) {
  Pair run(shared("k", wire::kConModeSecure), shared("k", wire::kConModeCrc));
  run.pump(1);
  ASSERT_EQ(run.client->status(), Handshake::Status::Done) << run.client->error();
  ASSERT_EQ(run.server->status(), Handshake::Status::Done) << run.server->error();
  EXPECT_EQ(run.client->result().con_mode, wire::kConModeSecure);
  EXPECT_EQ(run.client->result().session_key, run.server->result().session_key);
  // The frame streams continue in secure mode in both directions.
  auto ctx = run.client->take_assembler();
  auto srx = run.server->take_reader();
  EXPECT_TRUE(ctx->secure());
  BufferList payload, wire_bytes;
  payload.append_copy("after handshake");
  ctx->assemble_control(wire::Tag::Ack, payload, wire_bytes);
  wire::Frame frame;
  ASSERT_TRUE(srx->read(wire_bytes, &frame));
  EXPECT_EQ(frame.segments[0].to_string(), "after handshake");
}

TEST(Handshake, SharedSecretCrcMode) {
  Pair run(shared("k", wire::kConModeCrc), shared("k", wire::kConModeCrc));
  run.pump(7);
  ASSERT_EQ(run.client->status(), Handshake::Status::Done) << run.client->error();
  EXPECT_EQ(run.client->result().con_mode, wire::kConModeCrc);
  EXPECT_EQ(run.client->result().session_key.size(), 32u);
}

TEST(Handshake, WrongSecretFails) {
  Pair run(shared("alpha", wire::kConModeSecure), shared("beta", wire::kConModeSecure));
  run.pump();
  EXPECT_EQ(run.server->status(), Handshake::Status::Failed);
  EXPECT_NE(run.server->error().find("shared-secret"), std::string::npos) << run.server->error();
  EXPECT_NE(run.client->status(), Handshake::Status::Done);
}

TEST(Handshake, MethodMismatchReportsAllowedMethods) {
  Pair run(none(), shared("k", wire::kConModeCrc));
  run.pump();
  EXPECT_EQ(run.client->status(), Handshake::Status::Failed);
  EXPECT_NE(run.client->error().find("the osd requires shared_secret; Bypass was configured with none (ms.auth)"),
            std::string::npos)
      << run.client->error();
}

// ms.mon_client_mode / ms.client_mode: the mode a client offers depends on the peer type the
// server's HELLO names; ms.service_mode limits what a server accepts.
TEST(Handshake, ModesPerPeerType) {
  AuthSettings client = shared("k", wire::kConModeCrc);
  client.mon_client_modes = {wire::kConModeSecure};
  client.client_modes = {wire::kConModeCrc};
  for (EntityType type : {EntityType::Mon, EntityType::Osd}) {
    Pair run(client, shared("k", wire::kConModeCrc), {}, type);
    run.pump();
    ASSERT_EQ(run.client->status(), Handshake::Status::Done) << run.client->error();
    EXPECT_EQ(run.client->result().con_mode, type == EntityType::Mon ? wire::kConModeSecure : wire::kConModeCrc);
  }
  AuthSettings strict = shared("k", wire::kConModeCrc);
  strict.service_modes = {wire::kConModeSecure};
  Pair refused(client, strict);
  refused.pump();
  EXPECT_EQ(refused.client->status(), Handshake::Status::Failed);
  EXPECT_NE(refused.client->error().find("it allows modes [secure] and Bypass offered [crc] (ms.client_mode"),
            std::string::npos)
      << refused.client->error();
  Pair accepted(shared("k", wire::kConModeCrc), strict);  // no per-type list: crc, then secure
  accepted.pump();
  ASSERT_EQ(accepted.client->status(), Handshake::Status::Done) << accepted.client->error();
  EXPECT_EQ(accepted.client->result().con_mode, wire::kConModeSecure);
}

// cephx to a non-monitor uses the ticket the monitor gave for that service: none, or an expired
// one, fails before anything is sent, saying what to do.
TEST(Handshake, CephxServiceTicketMissingOrExpired) {
  AuthSettings client;
  client.method = wire::kAuthCephx;
  client.cephx_name = {0x08, "admin"};
  client.tickets = std::make_shared<auth::CephxTicketStore>();
  AuthSettings server;
  server.method = wire::kAuthCephx;
  {
    Pair run(client, server);
    run.pump();
    EXPECT_EQ(run.client->status(), Handshake::Status::Failed);
    EXPECT_NE(run.client->error().find("cephx: client.admin has no ticket for the osd; authenticate with a monitor first"),
              std::string::npos)
        << run.client->error();
  }
  auth::CephxTicket ticket;
  ticket.service_id = 0x04;
  ticket.session_key = auth::CephxKey::random();
  ticket.expires = std::chrono::system_clock::now() - std::chrono::seconds(90);
  client.tickets->put(ticket);
  Pair run(client, server);
  run.pump();
  EXPECT_EQ(run.client->status(), Handshake::Status::Failed);
  EXPECT_NE(run.client->error().find("cephx: client.admin's ticket for the osd expired 90 s ago"), std::string::npos)
      << run.client->error();
}

// A Bypass server with a keyring authenticates cephx clients monitor-style whatever its entity
// type: a client with its key and no ticket for that service gets a session (secure mode here).
// Only a monitor's tickets go to the client's store: another server's are sealed with its own secrets.
TEST(Handshake, CephxWithoutATicketToAServerHoldingTheKeyring) {
  AuthSettings client = cephx_admin_with_a_new_key(wire::kConModeSecure);
  AuthSettings server = client;
  server.tickets = nullptr;
  server.cephx_secrets = std::make_shared<const auth::CephxServiceSecrets>();
  for (EntityType type : {EntityType::Osd, EntityType::Mgr, EntityType::Mon}) {
    Pair run(client, server, {}, type);
    run.pump();
    ASSERT_EQ(run.client->status(), Handshake::Status::Done) << run.client->error();
    ASSERT_EQ(run.server->status(), Handshake::Status::Done) << run.server->error();
    EXPECT_EQ(run.client->result().con_mode, wire::kConModeSecure);
    EXPECT_EQ(client.tickets->get(0x04).has_value(), type == EntityType::Mon);  // the osd ticket
  }
}

// The tickets a monitor-style Bypass server handed out open a session to a Bypass service of the
// same process (the authorizer, with the service's challenge); a ticket past its expiry time is
// refused by the service, which says so, even when the client believes it still valid.
TEST(Handshake, CephxTicketFromAMonitorOpensAServiceUntilItExpires) {
  AuthSettings client = cephx_admin_with_a_new_key(wire::kConModeSecure);
  AuthSettings server = client;
  server.tickets = nullptr;
  server.cephx_secrets = auth::CephxServiceSecrets::process();
  {
    Pair mon(client, server, {}, EntityType::Mon);
    mon.pump();
    ASSERT_EQ(mon.client->status(), Handshake::Status::Done) << mon.client->error();
  }
  ASSERT_TRUE(client.tickets->get(0x04).has_value());
  {
    Pair osd(client, server, {}, EntityType::Osd);
    osd.pump();
    ASSERT_EQ(osd.client->status(), Handshake::Status::Done) << osd.client->error() << " | server: " << osd.server->error();
    ASSERT_EQ(osd.server->status(), Handshake::Status::Done) << osd.server->error();
    EXPECT_EQ(osd.client->result().con_mode, wire::kConModeSecure);
    EXPECT_EQ(osd.server->result().auth_global_id, client.tickets->global_id());
  }
  // Tickets valid for no time at all; the client's clock runs behind, so only the service notices.
  server.cephx_ticket_ttl = std::chrono::seconds(0);
  client.tickets = std::make_shared<auth::CephxTicketStore>();
  {
    Pair mon(client, server, {}, EntityType::Mon);
    mon.pump();
    ASSERT_EQ(mon.client->status(), Handshake::Status::Done) << mon.client->error();
  }
  auth::CephxTicket stale = *client.tickets->get(0x04);
  stale.expires = std::chrono::system_clock::now() + std::chrono::hours(1);
  client.tickets->put(stale);
  Pair osd(client, server, {}, EntityType::Osd);
  osd.pump();
  EXPECT_EQ(osd.client->status(), Handshake::Status::Failed);
  EXPECT_NE(osd.server->error().find("cephx: client.admin's ticket for the osd expired"), std::string::npos)
      << osd.server->error();
  EXPECT_NE(osd.client->error().find("cephx: the osd rejected client.admin's ticket"), std::string::npos)
      << osd.client->error();
}

TEST(Handshake, ReconnectOkAndReset) {
  ClientSession session{11, 777, 3, 2, 41};
  {
    Pair run(none(), none(), session);
    run.decision = {ReconnectDecision::Ok, 99, false};
    run.pump();
    ASSERT_EQ(run.client->status(), Handshake::Status::Done) << run.client->error();
    EXPECT_TRUE(run.client->result().reconnected);
    EXPECT_EQ(run.client->result().peer_in_seq, 99u);
    EXPECT_TRUE(run.server->result().reconnected);
    EXPECT_EQ(run.server->result().peer_in_seq, 41u);
  }
  {
    // The server forgot the session: SESSION_RESET, then the client identifies afresh.
    Pair run(none(), none(), session);
    run.decision = {ReconnectDecision::Reset, 0, true};
    run.pump();
    ASSERT_EQ(run.client->status(), Handshake::Status::Done) << run.client->error();
    EXPECT_FALSE(run.client->result().reconnected);
    EXPECT_EQ(run.server_sessions, 1);
  }
}

TEST(Handshake, GarbageFromPeerFailsCleanly) {
  Pair run(none(), none());
  BufferList junk;
  junk.append_copy(std::string("ceph v2\n\x10\x00", 10));
  junk.append_copy(std::string(16, '\0'));  // peer supports nothing: lacks rev 2.1
  BufferList out;
  EXPECT_EQ(run.client->feed(junk, out), Handshake::Status::Failed);
  EXPECT_NE(run.client->error().find("banner"), std::string::npos) << run.client->error();
}

}  // namespace
}  // namespace bypass::msgr

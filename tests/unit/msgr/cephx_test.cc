// cephx building blocks: keyring parsing (and its errors), key encoding, the sealed envelope, and a
// monitor-style server against the client in memory, including a wrong key and a tampered reply.
#include <gtest/gtest.h>

#include "msgr/auth/cephx_client.h"
#include "msgr/auth/cephx_server.h"

namespace bypass::msgr::auth {
namespace {

TEST(CephxKeyring, ParsesCephAuthtoolOutputAndIgnoresCaps) {
  // ceph-authtool's format: tab-indented "key = BASE64" and caps lines.
  Keyring k = Keyring::parse(
      "[client.admin]\n\tkey = AQDFTgVrtDYnLRAAnRos3FlNGVMIX4UwkMO1sA==\n\tcaps mon = \"allow *\"\n"
      "# a comment\n[osd.0]\n\tkey = AQDFTgVrwrJPKhAAG93P8ybS2La9U9Ws/sKDSQ==\n",
      "test.keyring");
  EXPECT_EQ(k.size(), 2u);
  const CephxKey* admin = k.find({0x08, "admin"});
  ASSERT_NE(admin, nullptr);
  EXPECT_EQ(admin->secret.size(), 16u);
  EXPECT_EQ(admin->to_base64(), "AQDFTgVrtDYnLRAAnRos3FlNGVMIX4UwkMO1sA==");
  EXPECT_NE(k.find({0x04, "0"}), nullptr);
  EXPECT_EQ(k.find({0x08, "nobody"}), nullptr);
}

TEST(CephxKeyring, ErrorsNameFileAndLine) {
  auto error_of = [](const char* text) {
    try {
      Keyring::parse(text, "k.keyring");
    } catch (const AuthError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of("[client.admin]\n\tkey = not*base64\n").find("k.keyring:2: key is not valid base64"),
            std::string::npos);
  EXPECT_NE(error_of("[bogus]\n").find("k.keyring:1: 'bogus' is not an entity name"), std::string::npos);
  EXPECT_NE(error_of("[client.admin]\n\tkey = AAAA\n").find("k.keyring:2"), std::string::npos);
  EXPECT_NE(error_of("\n").find("holds no key"), std::string::npos);
}

TEST(CephxEnvelope, OpensWithTheKeyAndNamesAWrongOne) {
  CephxKey key = CephxKey::random(), other = CephxKey::random();
  std::string sealed = seal_envelope(key, "hello cephx");
  EXPECT_EQ(sealed.size() % 16, 0u);
  EXPECT_EQ(open_envelope(key, sealed, "the greeting"), "hello cephx");
  EXPECT_THROW(open_envelope(other, sealed, "the greeting"), AuthError);
  EXPECT_THROW(open_envelope(key, sealed.substr(1), "the greeting"), AuthError);
}

struct Exchange {
  std::shared_ptr<Keyring> keyring = std::make_shared<Keyring>();
  std::shared_ptr<const CephxServiceSecrets> secrets = std::make_shared<const CephxServiceSecrets>();
  CephxEntity admin{0x08, "admin"};
  Exchange() { keyring->add(admin, CephxKey::random()); }
};

TEST(CephxMonExchange, ClientAndServerAgreeOnKeysAndTickets) {
  Exchange x;
  CephxMonServer server(x.keyring, x.secrets);
  CephxMonClient client(x.admin, *x.keyring->find(x.admin), 0x01 | 0x04);
  std::string challenge = server.start(client.request_payload(0));
  SessionKeys server_keys;
  std::string done = server.authenticate(client.answer_challenge(challenge), true, &server_keys);
  SessionKeys client_keys = client.finish(done, true);
  EXPECT_EQ(client_keys.session_key, server_keys.session_key);
  EXPECT_EQ(client_keys.aes_key, server_keys.aes_key);
  EXPECT_EQ(client_keys.client_rx_nonce, server_keys.client_rx_nonce);
  EXPECT_NE(client_keys.client_rx_nonce, client_keys.server_rx_nonce);
  ASSERT_EQ(client.tickets().size(), 3u);  // auth, then mon and osd
  EXPECT_EQ(client.tickets()[0].service_id, kServiceAuth);
  EXPECT_GT(client.tickets()[2].expires, std::chrono::system_clock::now());
}

TEST(CephxMonExchange, WrongKeyAndUnknownNameAreRefused) {
  Exchange x;
  {
    CephxMonServer server(x.keyring, x.secrets);
    CephxMonClient client(x.admin, CephxKey::random(), 0x01);
    std::string challenge = server.start(client.request_payload(0));
    SessionKeys keys;
    try {
      server.authenticate(client.answer_challenge(challenge), false, &keys);
      FAIL() << "a wrong key passed";
    } catch (const AuthError& e) {
      EXPECT_NE(std::string(e.what()).find("client.admin failed the challenge"), std::string::npos) << e.what();
    }
  }
  CephxMonServer server(x.keyring, x.secrets);
  CephxMonClient client({0x08, "nobody"}, CephxKey::random(), 0x01);
  std::string challenge = server.start(client.request_payload(0));
  SessionKeys keys;
  try {
    server.authenticate(client.answer_challenge(challenge), false, &keys);
    FAIL() << "an unknown name passed";
  } catch (const AuthError& e) {
    EXPECT_NE(std::string(e.what()).find("client.nobody is not in keyring"), std::string::npos) << e.what();
  }
}

TEST(CephxMonExchange, TamperedReplyIsRejectedNotCrashed) {
  Exchange x;
  CephxMonServer server(x.keyring, x.secrets);
  CephxMonClient client(x.admin, *x.keyring->find(x.admin), 0x01);
  std::string challenge = server.start(client.request_payload(0));
  SessionKeys keys;
  std::string done = server.authenticate(client.answer_challenge(challenge), true, &keys);
  for (size_t i = 0; i < done.size(); i += 7) {
    std::string bad = done;
    bad[i] ^= 0x40;
    try {
      client.finish(bad, true);
    } catch (const AuthError&) {
    } catch (const wire::DecodeError&) {
    }
  }
  EXPECT_THROW(client.finish(done.substr(0, done.size() / 2), true), std::exception);
}

// A session authenticated monitor-style, as the messenger keeps it on both ends.
struct MonSession {
  Exchange x;
  CephxMonServer server{x.keyring, x.secrets, std::chrono::seconds(60)};
  CephxMonClient client{x.admin, *x.keyring->find(x.admin), 0x04};
  CephxMonSession session;
  CephxTicket auth_ticket;
  MonSession() {
    std::string challenge = server.start(client.request_payload(0));
    SessionKeys keys;
    client.finish(server.authenticate(client.answer_challenge(challenge), false, &keys), false);
    session = {server.server_challenge(), server.global_id(), x.admin};
    auth_ticket = client.tickets().front();
  }
  const CephxKey& key() const { return *x.keyring->find(x.admin); }
  std::string renew(const std::string& request) const {
    return cephx_auth_renewal_reply(*x.keyring, *x.secrets, std::chrono::seconds(60), session, request);
  }
};

// GET_AUTH_SESSION_KEY again on the session (CephxClientHandler::build_request with AUTH in
// `need`): the reply's auth ticket is sealed with the old session key, its session key with ours,
// and the osd ticket asked along comes sealed with the new session key.
TEST(CephxAuthRenewal, RenewedTicketReplacesTheOldOneOnTheSameSession) {
  MonSession s;
  ASSERT_EQ(s.auth_ticket.service_id, kServiceAuth);
  EXPECT_EQ(s.client.server_challenge(), s.server.server_challenge());
  const std::string reply = s.renew(auth_renewal_request(s.key(), s.session.server_challenge, s.auth_ticket, 0x04));
  EXPECT_EQ(cephx_request_type(reply), kCephxGetAuthSessionKey);
  const std::vector<CephxTicket> tickets = auth_renewal_reply(reply, s.key(), s.auth_ticket.session_key);
  ASSERT_EQ(tickets.size(), 2u);
  EXPECT_EQ(tickets[0].service_id, kServiceAuth);
  EXPECT_NE(tickets[0].session_key.secret, s.auth_ticket.session_key.secret);
  EXPECT_NE(tickets[0].blob, s.auth_ticket.blob);
  EXPECT_GT(tickets[0].expires, std::chrono::system_clock::now() + std::chrono::seconds(50));
  EXPECT_EQ(tickets[1].service_id, 0x04u);
  // Only the holder of the old session key opens the new ticket.
  EXPECT_THROW(auth_renewal_reply(reply, s.key(), CephxKey::random()), AuthError);
  // The renewed ticket gets service tickets, and renews again.
  uint64_t global_id = 0;
  const std::string principal =
      cephx_principal_reply(s.x.secrets, std::chrono::seconds(60), principal_request(tickets[0], s.session.global_id, 0x04),
                            &global_id);
  EXPECT_EQ(global_id, s.session.global_id);
  EXPECT_EQ(principal_reply(principal, tickets[0].session_key).size(), 1u);
  // GET_PRINCIPAL_SESSION_KEY hands out no auth ticket (as a Ceph monitor): left out, or refused
  // when it is all that was asked for.
  const std::string with_auth = cephx_principal_reply(
      s.x.secrets, std::chrono::seconds(60), principal_request(tickets[0], s.session.global_id, kServiceAuth | 0x04),
      &global_id);
  const std::vector<CephxTicket> without_auth = principal_reply(with_auth, tickets[0].session_key);
  ASSERT_EQ(without_auth.size(), 1u);
  EXPECT_EQ(without_auth[0].service_id, 0x04u);
  EXPECT_THROW(cephx_principal_reply(s.x.secrets, std::chrono::seconds(60),
                                     principal_request(tickets[0], s.session.global_id, kServiceAuth), &global_id),
               AuthError);
  const std::string again = s.renew(auth_renewal_request(s.key(), s.session.server_challenge, tickets[0], 0));
  EXPECT_EQ(auth_renewal_reply(again, s.key(), tickets[0].session_key).size(), 1u);
}

TEST(CephxAuthRenewal, RefusesAnotherSessionsChallengeAMissingTicketAndAForeignOne) {
  MonSession s;
  auto refusal = [](const MonSession& on, const std::string& request, const CephxMonSession& session) {
    try {
      cephx_auth_renewal_reply(*on.x.keyring, *on.x.secrets, std::chrono::seconds(60), session, request);
    } catch (const AuthError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(refusal(s, auth_renewal_request(s.key(), s.session.server_challenge + 1, s.auth_ticket, 0), s.session)
                .find("client.admin failed the challenge of its session"),
            std::string::npos);
  EXPECT_NE(refusal(s, auth_renewal_request(s.key(), s.session.server_challenge, CephxTicket{}, 0), s.session)
                .find("without presenting it"),
            std::string::npos);
  CephxMonSession other = s.session;
  other.global_id += 1;
  EXPECT_NE(refusal(s, auth_renewal_request(s.key(), s.session.server_challenge, s.auth_ticket, 0), other)
                .find("on the session of global id"),
            std::string::npos);
  EXPECT_NE(refusal(s, auth_renewal_request(s.key(), 0, s.auth_ticket, 0), CephxMonSession{})
                .find("did not authenticate monitor-style"),
            std::string::npos);
  // A ticket that expired within one ticket lifetime (60 s here) is still renewed, as a Ceph
  // monitor renews one it can still open; one that expired longer ago is not: the client
  // authenticates afresh.
  MonSession late;
  CephxTicket just_expired = issue_ticket(*late.x.secrets, std::chrono::seconds(0), kServiceAuth, late.x.admin,
                                          late.session.global_id, CephxKey::random());
  EXPECT_EQ(cephx_request_type(late.renew(auth_renewal_request(late.key(), late.session.server_challenge,
                                                                just_expired, 0))),
            kCephxGetAuthSessionKey);
  MonSession expired;
  CephxTicket stale = issue_ticket(*expired.x.secrets, std::chrono::seconds(-120), kServiceAuth, expired.x.admin,
                                   expired.session.global_id, CephxKey::random());
  EXPECT_NE(refusal(expired, auth_renewal_request(expired.key(), expired.session.server_challenge, stale, 0), expired.session)
                .find("auth ticket expired"),
            std::string::npos);
}

}  // namespace
}  // namespace bypass::msgr::auth

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

}  // namespace
}  // namespace bypass::msgr::auth

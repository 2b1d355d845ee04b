// AES-128-GCM (NIST known answer, nonce sequencing, nonce budget) and the shared-secret auth method.
#include <gtest/gtest.h>

#include "msgr/auth/shared_secret.h"
#include "msgr/wire/aes_gcm.h"
#include "msgr/wire/banner.h"
#include "msgr/wire/codec.h"

namespace bypass::msgr {
namespace {

std::string hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

TEST(AesGcm, NistTestCase2) {
  // GCM spec (McGrew & Viega) test case 2: zero key, zero IV, one zero block.
  wire::AesKey key{};
  wire::AesNonce nonce{};
  wire::AesGcmStream enc(key, nonce, true);
  BufferList plain;
  plain.append_copy(std::string(16, '\0'));
  BufferList sealed;
  enc.seal(plain, sealed);
  EXPECT_EQ(hex(sealed.to_string()), "0388dace60b6a392f328c2b971b2fe78" "ab6e47d42cec13bdf53a67b21257bddf");
}

TEST(AesGcm, NonceAdvancesPerUnitAndBothSidesAgree) {
  wire::AesKey key{};
  key[5] = 9;
  wire::AesNonce nonce{};
  nonce[4 + 0] = 0xff;  // counter wraps its low byte: carries must match on both sides
  nonce[4 + 1] = 0xff;
  nonce[4 + 2] = 0xff;
  nonce[4 + 3] = 0xff;
  wire::AesGcmStream enc(key, nonce, true), dec(key, nonce, false);
  std::string first_ct;
  for (int i = 0; i < 5; ++i) {
    BufferList plain;
    plain.append_copy("same text");
    BufferList sealed;
    enc.seal(plain, sealed);
    if (i == 0) {
      first_ct = sealed.to_string();
    } else {
      EXPECT_NE(sealed.to_string(), first_ct) << "nonce reused at unit " << i;
    }
    BufferList out;
    dec.open(sealed.to_string(), out);
    EXPECT_EQ(out.to_string(), "same text");
  }
  EXPECT_EQ(enc.units_used(), 5u);
}

TEST(AesGcm, TamperedOrReplayedUnitFails) {
  wire::AesKey key{};
  wire::AesNonce nonce{};
  wire::AesGcmStream enc(key, nonce, true);
  BufferList plain;
  plain.append_copy("attack at dawn");
  BufferList sealed;
  enc.seal(plain, sealed);
  std::string bytes = sealed.to_string();
  {
    wire::AesGcmStream dec(key, nonce, false);
    std::string bad = bytes;
    bad[3] ^= 1;
    BufferList out;
    EXPECT_THROW(dec.open(bad, out), wire::CryptoError);
  }
  {
    wire::AesGcmStream dec(key, nonce, false);
    BufferList out;
    dec.open(bytes, out);
    EXPECT_THROW(dec.open(bytes, out), wire::CryptoError);  // replay uses the next nonce
  }
  {
    wire::AesGcmStream dec(key, nonce, false);
    BufferList out;
    EXPECT_THROW(dec.open(bytes.substr(0, 10), out), wire::CryptoError);
  }
}

TEST(AesGcm, NonceBudgetForcesRekey) {
  wire::AesKey key{};
  wire::AesNonce nonce{};
  wire::AesGcmStream enc(key, nonce, true, 3);
  BufferList plain;
  plain.append_copy("x");
  for (int i = 0; i < 3; ++i) {
    BufferList sealed;
    enc.seal(plain, sealed);
  }
  EXPECT_EQ(enc.units_left(), 0u);
  BufferList sealed;
  EXPECT_THROW(enc.seal(plain, sealed), wire::CryptoError);
}

TEST(SharedSecret, MutualProofAndMatchingKeys) {
  auth::SharedSecretClient client("s3cret", "client.7");
  auth::SharedSecretServer server("s3cret");
  std::string challenge = server.handle_request(client.request_payload());
  EXPECT_EQ(server.peer_name(), "client.7");
  std::string done = server.handle_proof(client.answer_challenge(challenge));
  auth::SessionKeys ck = client.finish(done);
  auth::SessionKeys sk = server.keys();
  EXPECT_EQ(ck.session_key, sk.session_key);
  EXPECT_EQ(ck.aes_key, sk.aes_key);
  EXPECT_EQ(ck.client_rx_nonce, sk.client_rx_nonce);
  EXPECT_NE(ck.client_rx_nonce, ck.server_rx_nonce);
  EXPECT_EQ(ck.session_key.size(), 32u);

  // A second exchange with the same secret yields different keys (fresh challenges = rekey).
  auth::SharedSecretClient client2("s3cret", "client.7");
  auth::SharedSecretServer server2("s3cret");
  std::string c2 = server2.handle_request(client2.request_payload());
  auth::SessionKeys k2 = client2.finish(server2.handle_proof(client2.answer_challenge(c2)));
  EXPECT_NE(k2.aes_key, ck.aes_key);
}

TEST(SharedSecret, WrongSecretFailsOnEitherSide) {
  {
    auth::SharedSecretClient client("wrong", "client.1");
    auth::SharedSecretServer server("right");
    std::string challenge = server.handle_request(client.request_payload());
    EXPECT_THROW(server.handle_proof(client.answer_challenge(challenge)), auth::AuthError);
    EXPECT_THROW(server.keys(), auth::AuthError);
  }
  {
    // An impostor server that does not know the secret cannot produce AUTH_DONE's proof.
    auth::SharedSecretClient client("right", "client.1");
    auth::SharedSecretServer impostor("guess");
    std::string challenge = impostor.handle_request(client.request_payload());
    client.answer_challenge(challenge);
    EXPECT_THROW(client.finish(std::string(32, 'x')), auth::AuthError);
  }
  {
    auth::SharedSecretServer server("x");
    EXPECT_THROW(server.handle_request("\x02junk"), wire::DecodeError);
    EXPECT_THROW(server.handle_request(""), wire::DecodeError);
  }
}

TEST(Banner, RoundTripAndRejections) {
  wire::Banner ours;
  BufferList bl;
  ours.encode(bl);
  EXPECT_EQ(bl.length(), 26u);
  EXPECT_EQ(bl.to_string().substr(0, 8), "ceph v2\n");
  wire::BannerReader reader;
  wire::Banner peer;
  BufferList input;
  std::string bytes = bl.to_string();
  for (size_t i = 0; i < bytes.size(); ++i) {
    input.append_copy(bytes.data() + i, 1);
    bool done = reader.read(input, &peer);
    EXPECT_EQ(done, i + 1 == bytes.size());
  }
  EXPECT_EQ(peer.supported, ours.supported);
  EXPECT_EQ(peer.required, ours.required);
  EXPECT_EQ(wire::check_banner_features(ours, peer), "");

  wire::Banner demanding;
  demanding.required = 1ull << 40;
  EXPECT_NE(wire::check_banner_features(ours, demanding), "");
  wire::Banner rev0;
  rev0.supported = 0;
  rev0.required = 0;
  EXPECT_NE(wire::check_banner_features(ours, rev0), "");

  BufferList v1;
  v1.append_copy("ceph v027");  // msgr v1 banner
  wire::BannerReader r1;
  EXPECT_THROW(r1.read(v1, &peer), wire::BannerError);
  BufferList huge;
  huge.append_copy(std::string("ceph v2\n\xff\xff", 10));
  wire::BannerReader r2;
  EXPECT_THROW(r2.read(huge, &peer), wire::BannerError);
}

}  // namespace
}  // namespace bypass::msgr

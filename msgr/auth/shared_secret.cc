#include "msgr/auth/shared_secret.h"

#include <openssl/crypto.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cstring>

#include "msgr/wire/codec.h"

namespace bypass::msgr::auth {

namespace {
constexpr uint8_t kVersion = 1;
constexpr size_t kMaxNameLen = 256;

std::string_view view(const Challenge& c) { return {reinterpret_cast<const char*>(c.data()), c.size()}; }

std::string proof_input(std::string_view label, std::string_view name, const Challenge& cn, const Challenge& sn) {
  std::string data(label);
  data.push_back('\0');
  data += name;
  data.push_back('\0');
  data += view(cn);
  data += view(sn);
  return data;
}
}  // namespace

Digest hmac_sha256(std::string_view key, std::string_view data) {
  Digest out{};
  unsigned int len = 0;
  if (!HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
            reinterpret_cast<const unsigned char*>(data.data()), data.size(), out.data(), &len) ||
      len != out.size())
    throw AuthError("HMAC-SHA256 failed");
  return out;
}

bool digest_equal(const Digest& a, std::string_view b) {
  return b.size() == a.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

Challenge random_challenge() {
  Challenge c{};
  if (RAND_bytes(c.data(), static_cast<int>(c.size())) != 1) throw AuthError("RAND_bytes failed");
  return c;
}

SessionKeys derive_session_keys(std::string_view secret, const Challenge& cn, const Challenge& sn) {
  SessionKeys keys;
  std::string input = "bypass-session";
  input.push_back('\0');
  input += view(cn);
  input += view(sn);
  Digest session = hmac_sha256(secret, input);
  keys.session_key.assign(view(session));
  std::string label = "bypass-connection";
  label.push_back('\x01');
  Digest block1 = hmac_sha256(keys.session_key, label);
  label.back() = '\x02';
  Digest block2 = hmac_sha256(keys.session_key, label);
  uint8_t material[64];
  std::memcpy(material, block1.data(), 32);
  std::memcpy(material + 32, block2.data(), 32);
  std::memcpy(keys.aes_key.data(), material, 16);
  std::memcpy(keys.client_rx_nonce.data(), material + 16, 12);
  std::memcpy(keys.server_rx_nonce.data(), material + 28, 12);
  OPENSSL_cleanse(material, sizeof(material));
  return keys;
}

SharedSecretClient::SharedSecretClient(std::string secret, std::string entity_name)
    : secret_(std::move(secret)), name_(std::move(entity_name)), client_nonce_(random_challenge()) {}

std::string SharedSecretClient::request_payload() {
  BufferList bl;
  wire::Encoder enc(bl);
  enc.u8(kVersion);
  enc.blob(name_);
  enc.raw(view(client_nonce_));
  return bl.to_string();
}

std::string SharedSecretClient::answer_challenge(std::string_view reply_more) {
  wire::Decoder dec(reply_more, "shared-secret challenge");
  std::string_view sn = dec.raw(server_nonce_.size(), "server_nonce");
  if (!dec.at_end()) dec.fail("<end>", "unexpected trailing bytes");
  std::memcpy(server_nonce_.data(), sn.data(), sn.size());
  have_server_nonce_ = true;
  Digest proof = hmac_sha256(secret_, proof_input("bypass-client", name_, client_nonce_, server_nonce_));
  return std::string(view(proof));
}

SessionKeys SharedSecretClient::finish(std::string_view done_payload) {
  if (!have_server_nonce_) throw AuthError("AUTH_DONE arrived before the server's challenge");
  Digest expected = hmac_sha256(secret_, proof_input("bypass-server", name_, client_nonce_, server_nonce_));
  if (!digest_equal(expected, done_payload))
    throw AuthError("server failed to prove knowledge of the shared secret");
  return derive_session_keys(secret_, client_nonce_, server_nonce_);
}

std::string SharedSecretServer::handle_request(std::string_view request) {
  wire::Decoder dec(request, "shared-secret request");
  uint8_t version = dec.u8("version");
  if (version != kVersion) dec.fail("version", "unsupported shared-secret version " + std::to_string(version));
  uint32_t name_len = dec.u32("entity_name.length");
  if (name_len > kMaxNameLen) dec.fail("entity_name", "name longer than " + std::to_string(kMaxNameLen));
  name_ = std::string(dec.raw(name_len, "entity_name"));
  std::string_view cn = dec.raw(client_nonce_.size(), "client_nonce");
  if (!dec.at_end()) dec.fail("<end>", "unexpected trailing bytes");
  std::memcpy(client_nonce_.data(), cn.data(), cn.size());
  server_nonce_ = random_challenge();
  return std::string(view(server_nonce_));
}

std::string SharedSecretServer::handle_proof(std::string_view proof) {
  Digest expected = hmac_sha256(secret_, proof_input("bypass-client", name_, client_nonce_, server_nonce_));
  if (!digest_equal(expected, proof))
    throw AuthError("client " + name_ + " failed the shared-secret challenge (wrong secret?)");
  verified_ = true;
  Digest mine = hmac_sha256(secret_, proof_input("bypass-server", name_, client_nonce_, server_nonce_));
  return std::string(view(mine));
}

SessionKeys SharedSecretServer::keys() const {
  if (!verified_) throw AuthError("session keys requested before the client proved itself");
  return derive_session_keys(secret_, client_nonce_, server_nonce_);
}

}  // namespace bypass::msgr::auth

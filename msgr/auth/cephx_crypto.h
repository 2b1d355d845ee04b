// The building blocks of cephx (CEPH_AUTH_CEPHX) that both its client and its server use:
//  - CephxKey: Ceph's CryptoKey (an AES-128 secret and its creation time) and its encoding
//    (__le16 type=CEPH_CRYPTO_AES, utime_t created, __le16 length, secret), which is what a
//    keyring's base64 "key = ..." line holds;
//  - AES-128-CBC with PKCS#7 padding and Ceph's fixed IV "cephsageyudagreg" (src/auth/Crypto.cc);
//  - the cephx envelope (encode_encrypt in CephxProtocol.h): plaintext = __u8 1,
//    __le64 AUTH_ENC_MAGIC, then the structure; a wrong key shows as a bad magic;
//  - CephxEntity: the cephx principal name (type + id, "client.admin"), unlike entity_name_t
//    which is type + number;
//  - Keyring: Ceph's keyring file format ([client.admin] / key = ...).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "msgr/auth/shared_secret.h"
#include "msgr/wire/codec.h"

namespace bypass::msgr::auth {

constexpr uint64_t kCephxEncMagic = 0xff009cad8826aa55ull;  // AUTH_ENC_MAGIC
constexpr uint16_t kCephCryptoAes = 1;                     // CEPH_CRYPTO_AES
constexpr size_t kCephxKeyLength = 16;                     // AES-128

struct CephxKey {
  std::string secret;  // 16 bytes
  uint32_t created_sec = 0;
  uint32_t created_nsec = 0;

  bool empty() const { return secret.empty(); }
  static CephxKey random();
  void encode(wire::Encoder& enc) const;
  static CephxKey decode(wire::Decoder& dec);
  // The keyring's textual form (base64 of encode()).
  std::string to_base64() const;
  // Throws AuthError naming `where` on bad base64, a wrong type or a wrong length.
  static CephxKey from_base64(std::string_view text, const std::string& where);
};

// AES-128-CBC, PKCS#7, IV "cephsageyudagreg". decrypt throws AuthError on a bad length or padding.
std::string cephx_encrypt(const CephxKey& key, std::string_view plaintext);
std::string cephx_decrypt(const CephxKey& key, std::string_view ciphertext);

// encode_encrypt_enc_bl / decode_decrypt_enc_bl: `body` is the encoded structure, the result the
// bare ciphertext. open_envelope throws AuthError("... (wrong key?)") when the magic is wrong.
std::string seal_envelope(const CephxKey& key, std::string_view body);
std::string open_envelope(const CephxKey& key, std::string_view ciphertext, const char* what);
// encode_encrypt / decode_decrypt: the ciphertext with a __le32 length in front.
void encode_sealed(wire::Encoder& enc, const CephxKey& key, std::string_view body);
std::string decode_sealed(wire::Decoder& dec, const CephxKey& key, const char* what);

// The cephx principal: EntityName in src/common/entity_name.h, encoded as __le32 type, string id.
struct CephxEntity {
  uint32_t type = 0x08;  // CEPH_ENTITY_TYPE_CLIENT
  std::string id;        // "admin"

  std::string to_string() const;
  // "client.admin", "osd.0", "mon.", "mgr.x"; false for an unknown type or no dot.
  static bool parse(std::string_view text, CephxEntity* out);
  void encode(wire::Encoder& enc) const;
  static CephxEntity decode(wire::Decoder& dec);
  bool operator<(const CephxEntity& o) const { return type != o.type ? type < o.type : id < o.id; }
  bool operator==(const CephxEntity& o) const = default;
};

// A keyring file: sections named by entity, each with a "key = BASE64" line (caps lines and
// anything else are kept out). Errors name the file and line.
class Keyring {
 public:
  static Keyring load(const std::string& path);  // throws AuthError
  static Keyring parse(std::string_view text, const std::string& path);
  // nullptr when the keyring has no key for `name`.
  const CephxKey* find(const CephxEntity& name) const;
  void add(const CephxEntity& name, CephxKey key) { keys_[name] = std::move(key); }
  const std::string& path() const { return path_; }
  size_t size() const { return keys_.size(); }

 private:
  std::string path_;
  std::map<CephxEntity, CephxKey> keys_;
};

// cephx_calc_client_server_challenge: the proof that the client knows its key. The
// encode_encrypt output (length prefix included) is read as little-endian 64-bit words and xored.
uint64_t cephx_challenge_proof(const CephxKey& key, uint64_t server_challenge, uint64_t client_challenge);

uint64_t random_u64_nonzero();

// Fills `out` from a cephx connection secret (AES key 16 | rx nonce 12 | tx nonce 12 as seen by the
// client) and the session key that signs AUTH_SIGNATURE. Throws AuthError when the secret is shorter
// than 40 bytes and secure mode needs it.
SessionKeys cephx_session_keys(const CephxKey& session_key, std::string_view connection_secret, bool secure);

}  // namespace bypass::msgr::auth

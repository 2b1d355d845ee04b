// AES-128-GCM for msgr2 secure mode (OpenSSL EVP), one instance per direction.
//
// The 12-byte nonce is Ceph's msgr2.1 nonce_t: a fixed __le32 followed by a __le64 counter, both
// taken from the connection secret the auth method produced. Every encrypted unit (msgr2.1 encrypts
// the preamble block, the rest of segment 0 and the remaining segments as separate GCM messages,
// each with its own 16-byte tag) consumes one nonce; the counter increments after each. A nonce must
// never be reused under one key, so the stream refuses to go on once `max_units` nonces are used
// (at most 2^32, when the counter would come back to its start): the connection then faults and
// the session re-authenticates, which yields fresh keys (the rekey).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string_view>

#include "base/buffer_list.h"

typedef struct evp_cipher_ctx_st EVP_CIPHER_CTX;

namespace bypass::msgr::wire {

class CryptoError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

constexpr size_t kAesGcmKeyLen = 16;
constexpr size_t kAesGcmNonceLen = 12;
constexpr size_t kAesGcmTagLen = 16;

using AesKey = std::array<uint8_t, kAesGcmKeyLen>;
using AesNonce = std::array<uint8_t, kAesGcmNonceLen>;

class AesGcmStream {
 public:
  static constexpr uint64_t kMaxUnits = uint64_t{1} << 32;

  AesGcmStream(const AesKey& key, const AesNonce& nonce, bool encrypt, uint64_t max_units = kMaxUnits);
  ~AesGcmStream();
  AesGcmStream(const AesGcmStream&) = delete;
  AesGcmStream& operator=(const AesGcmStream&) = delete;

  // Encrypt `plaintext` as one GCM message; appends ciphertext + tag to `out`.
  void seal(const BufferList& plaintext, BufferList& out);
  // Decrypt one GCM message (`sealed` = ciphertext + tag); throws CryptoError when the tag does not
  // authenticate. Appends the plaintext to `out`.
  void open(std::string_view sealed, BufferList& out);

  uint64_t units_used() const { return units_used_; }
  uint64_t units_left() const { return max_units_ - units_used_; }

 private:
  void start_unit();

  EVP_CIPHER_CTX* ctx_ = nullptr;
  bool encrypt_;
  AesNonce nonce_;
  uint64_t units_used_ = 0;
  uint64_t max_units_;
};

}  // namespace bypass::msgr::wire

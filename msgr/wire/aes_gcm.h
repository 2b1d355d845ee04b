// AES-128-GCM for msgr2 secure mode (OpenSSL EVP), one instance per direction.
//
// The 12-byte nonce is Ceph's msgr2.1 nonce_t: a fixed __le32 followed by a __le64 counter, both
// taken from the connection secret the auth method produced. Every encrypted unit (msgr2.1 encrypts
// the preamble block, the rest of segment 0 and the remaining segments as separate GCM messages,
// each with its own 16-byte tag) consumes one nonce; the counter increments after each. A nonce must
// never be reused under one key, so the stream refuses to go on once `max_units` nonces are used
// (at most 2^32, when the counter would come back to its start): the connection then faults and
// the session re-authenticates, which yields fresh keys (the rekey).
//
// Cost: the key schedule and the cipher context are set up once per stream (per connection and
// rekey). Per unit only the nonce changes. The stream calls OpenSSL's AES-GCM provider functions
// (its OSSL_DISPATCH table, resolved once per process) rather than the EVP wrappers: in OpenSSL
// 3.0, EVP_CipherInit_ex2 asks the provider for the IV length through an OSSL_PARAM lookup on
// every call, which cost more instructions than the GCM work on a short unit. The decrypting side
// hands the expected tag over with the IV, the sealing side reads its tag with one prepared
// OSSL_PARAM. Units are built piecewise (begin, crypt..., finish) straight from and into the
// caller's memory: no heap allocation and no staging copy per frame.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string_view>

#include "base/buffer_list.h"

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
using AesTag = std::array<uint8_t, kAesGcmTagLen>;

class AesGcmStream {
 public:
  static constexpr uint64_t kMaxUnits = uint64_t{1} << 32;

  AesGcmStream(const AesKey& key, const AesNonce& nonce, bool encrypt, uint64_t max_units = kMaxUnits);
  ~AesGcmStream();
  AesGcmStream(const AesGcmStream&) = delete;
  AesGcmStream& operator=(const AesGcmStream&) = delete;

  // One unit, piece by piece. begin_seal/begin_open take the next nonce (throwing CryptoError when
  // the budget is spent); crypt may run any number of times (in == out is allowed: in place);
  // finish_seal writes the tag, finish_open throws CryptoError unless the unit authenticates.
  void begin_seal();
  void begin_open(const AesTag& expected_tag);
  void crypt(const void* in, void* out, size_t len);
  void finish_seal(void* tag_out);
  void finish_open();

  // Whole units over BufferLists (tests, the handshake): seal appends ciphertext + tag to `out`;
  // open decrypts `sealed` (ciphertext + tag) and appends the plaintext to `out`.
  void seal(const BufferList& plaintext, BufferList& out);
  void open(std::string_view sealed, BufferList& out);

  uint64_t units_used() const { return units_used_; }
  uint64_t units_left() const { return max_units_ - units_used_; }

 private:
  void check_budget() const;
  void advance_nonce();

  void* cctx_ = nullptr;  // the provider's cipher context
  bool encrypt_;
  AesNonce nonce_;
  AesTag expected_tag_{};
  uint64_t units_used_ = 0;
  uint64_t max_units_;
};

}  // namespace bypass::msgr::wire

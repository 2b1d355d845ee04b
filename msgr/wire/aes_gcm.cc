#include "msgr/wire/aes_gcm.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <string>

namespace bypass::msgr::wire {

AesGcmStream::AesGcmStream(const AesKey& key, const AesNonce& nonce, bool encrypt, uint64_t max_units)
    : encrypt_(encrypt), nonce_(nonce), max_units_(std::min(max_units, kMaxUnits)) {
  ctx_ = EVP_CIPHER_CTX_new();
  if (!ctx_) throw CryptoError("EVP_CIPHER_CTX_new failed");
  // The key schedule (and GHASH key) are computed here, once; units only change the IV.
  if (EVP_CipherInit_ex(ctx_, EVP_aes_128_gcm(), nullptr, key.data(), nullptr, encrypt ? 1 : 0) != 1) {
    EVP_CIPHER_CTX_free(ctx_);
    throw CryptoError("AES-128-GCM initialisation failed");
  }
}

AesGcmStream::~AesGcmStream() {
  OPENSSL_cleanse(nonce_.data(), nonce_.size());
  EVP_CIPHER_CTX_free(ctx_);
}

void AesGcmStream::check_budget() const {
  if (units_used_ >= max_units_)
    throw CryptoError("secure mode nonce budget exhausted after " + std::to_string(units_used_) +
                      " frames; the session must re-authenticate to rekey");
}

void AesGcmStream::advance_nonce() {
  // msgr2.1 (rev1) nonce_t is {__le32 fixed; __le64 counter}: the counter (bytes 4..11) counts up by
  // one per unit (msgr2.0 bumped the leading __le32 instead; a Ceph peer on rev1 rejects that tag).
  uint64_t counter = 0;
  for (int i = 0; i < 8; ++i) counter |= uint64_t{nonce_[4 + i]} << (8 * i);
  ++counter;
  for (int i = 0; i < 8; ++i) nonce_[4 + i] = static_cast<uint8_t>(counter >> (8 * i));
  ++units_used_;
}

void AesGcmStream::begin_seal() {
  check_budget();
  if (EVP_CipherInit_ex2(ctx_, nullptr, nullptr, nonce_.data(), 1, nullptr) != 1)
    throw CryptoError("AES-128-GCM nonce setup failed");
  advance_nonce();
}

void AesGcmStream::begin_open(const AesTag& expected_tag) {
  check_budget();
  // The expected tag travels with the IV: one parameter pass instead of a separate SET_TAG ctrl.
  expected_tag_ = expected_tag;
  OSSL_PARAM params[2] = {
      OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, expected_tag_.data(), expected_tag_.size()),
      OSSL_PARAM_construct_end()};
  if (EVP_CipherInit_ex2(ctx_, nullptr, nullptr, nonce_.data(), 0, params) != 1)
    throw CryptoError("AES-128-GCM nonce setup failed");
  advance_nonce();
}

void AesGcmStream::crypt(const void* in, void* out, size_t len) {
  while (len > 0) {
    // EVP takes int lengths; segments are bounded by the frame limits, but stay safe.
    const int chunk = static_cast<int>(std::min<size_t>(len, 1u << 30));
    int written = 0;
    if (EVP_CipherUpdate(ctx_, static_cast<unsigned char*>(out), &written, static_cast<const unsigned char*>(in),
                         chunk) != 1 ||
        written != chunk)
      throw CryptoError(encrypt_ ? "AES-128-GCM encrypt failed" : "AES-128-GCM decrypt failed");
    in = static_cast<const char*>(in) + chunk;
    out = static_cast<char*>(out) + chunk;
    len -= static_cast<size_t>(chunk);
  }
}

void AesGcmStream::finish_seal(void* tag_out) {
  unsigned char none[1];
  int final_len = 0;
  if (EVP_CipherFinal_ex(ctx_, none, &final_len) != 1) throw CryptoError("AES-128-GCM encrypt final failed");
  OSSL_PARAM params[2] = {OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, tag_out, kAesGcmTagLen),
                          OSSL_PARAM_construct_end()};
  if (EVP_CIPHER_CTX_get_params(ctx_, params) != 1) throw CryptoError("AES-128-GCM tag retrieval failed");
}

void AesGcmStream::finish_open() {
  unsigned char none[1];
  int final_len = 0;
  if (EVP_CipherFinal_ex(ctx_, none, &final_len) <= 0)
    throw CryptoError("secure frame failed authentication (GCM tag mismatch)");
}

void AesGcmStream::seal(const BufferList& plaintext, BufferList& out) {
  begin_seal();
  char* dst = out.append_hole(plaintext.length() + kAesGcmTagLen);
  for (const auto& seg : plaintext.segments()) {
    crypt(seg.data(), dst, seg.length());
    dst += seg.length();
  }
  finish_seal(dst);
}

void AesGcmStream::open(std::string_view sealed, BufferList& out) {
  if (sealed.size() < kAesGcmTagLen)
    throw CryptoError("secure unit of " + std::to_string(sealed.size()) + " bytes is shorter than the tag");
  size_t cipher_len = sealed.size() - kAesGcmTagLen;
  AesTag tag;
  std::memcpy(tag.data(), sealed.data() + cipher_len, kAesGcmTagLen);
  begin_open(tag);
  BufferSegment plain = BufferSegment::allocate(cipher_len);
  crypt(sealed.data(), plain.data(), cipher_len);
  finish_open();
  if (cipher_len) out.append(std::move(plain));
}

}  // namespace bypass::msgr::wire

#include "msgr/wire/aes_gcm.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <string>

namespace bypass::msgr::wire {

AesGcmStream::AesGcmStream(const AesKey& key, const AesNonce& nonce, bool encrypt, uint64_t max_units)
    : encrypt_(encrypt), nonce_(nonce), max_units_(std::min(max_units, kMaxUnits)) {
  ctx_ = EVP_CIPHER_CTX_new();
  if (!ctx_) throw CryptoError("EVP_CIPHER_CTX_new failed");
  int ok = encrypt ? EVP_EncryptInit_ex(ctx_, EVP_aes_128_gcm(), nullptr, key.data(), nullptr)
                   : EVP_DecryptInit_ex(ctx_, EVP_aes_128_gcm(), nullptr, key.data(), nullptr);
  if (ok != 1) {
    EVP_CIPHER_CTX_free(ctx_);
    throw CryptoError("AES-128-GCM initialisation failed");
  }
}

AesGcmStream::~AesGcmStream() {
  OPENSSL_cleanse(nonce_.data(), nonce_.size());
  EVP_CIPHER_CTX_free(ctx_);
}

void AesGcmStream::start_unit() {
  if (units_used_ >= max_units_)
    throw CryptoError("secure mode nonce budget exhausted after " + std::to_string(units_used_) +
                      " frames; the session must re-authenticate to rekey");
  int ok = encrypt_ ? EVP_EncryptInit_ex(ctx_, nullptr, nullptr, nullptr, nonce_.data())
                    : EVP_DecryptInit_ex(ctx_, nullptr, nullptr, nullptr, nonce_.data());
  if (ok != 1) throw CryptoError("AES-128-GCM nonce setup failed");
  // msgr2.1 (rev1) nonce_t is {__le32 fixed; __le64 counter}: the counter (bytes 4..11) counts up by
  // one per unit (msgr2.0 bumped the leading __le32 instead; a Ceph peer on rev1 rejects that tag).
  uint64_t counter = 0;
  for (int i = 0; i < 8; ++i) counter |= uint64_t{nonce_[4 + i]} << (8 * i);
  ++counter;
  for (int i = 0; i < 8; ++i) nonce_[4 + i] = static_cast<uint8_t>(counter >> (8 * i));
  ++units_used_;
}

void AesGcmStream::seal(const BufferList& plaintext, BufferList& out) {
  start_unit();
  char* dst = out.append_hole(plaintext.length() + kAesGcmTagLen);
  size_t written = 0;
  for (const auto& seg : plaintext.segments()) {
    int len = 0;
    if (EVP_EncryptUpdate(ctx_, reinterpret_cast<unsigned char*>(dst + written), &len,
                          reinterpret_cast<const unsigned char*>(seg.data()),
                          static_cast<int>(seg.length())) != 1)
      throw CryptoError("AES-128-GCM encrypt failed");
    written += static_cast<size_t>(len);
  }
  int final_len = 0;
  if (EVP_EncryptFinal_ex(ctx_, reinterpret_cast<unsigned char*>(dst + written), &final_len) != 1)
    throw CryptoError("AES-128-GCM encrypt final failed");
  written += static_cast<size_t>(final_len);
  if (EVP_CIPHER_CTX_ctrl(ctx_, EVP_CTRL_GCM_GET_TAG, kAesGcmTagLen, dst + written) != 1)
    throw CryptoError("AES-128-GCM tag retrieval failed");
}

void AesGcmStream::open(std::string_view sealed, BufferList& out) {
  if (sealed.size() < kAesGcmTagLen)
    throw CryptoError("secure unit of " + std::to_string(sealed.size()) + " bytes is shorter than the tag");
  start_unit();
  size_t cipher_len = sealed.size() - kAesGcmTagLen;
  BufferSegment plain = BufferSegment::allocate(cipher_len);
  int len = 0;
  if (cipher_len &&
      EVP_DecryptUpdate(ctx_, reinterpret_cast<unsigned char*>(plain.data()), &len,
                        reinterpret_cast<const unsigned char*>(sealed.data()),
                        static_cast<int>(cipher_len)) != 1)
    throw CryptoError("AES-128-GCM decrypt failed");
  std::array<unsigned char, kAesGcmTagLen> tag;
  std::memcpy(tag.data(), sealed.data() + cipher_len, kAesGcmTagLen);
  if (EVP_CIPHER_CTX_ctrl(ctx_, EVP_CTRL_GCM_SET_TAG, kAesGcmTagLen, tag.data()) != 1)
    throw CryptoError("AES-128-GCM tag setup failed");
  int final_len = 0;
  if (EVP_DecryptFinal_ex(ctx_, reinterpret_cast<unsigned char*>(plain.data()) + len, &final_len) <= 0)
    throw CryptoError("secure frame failed authentication (GCM tag mismatch)");
  if (cipher_len) out.append(std::move(plain));
}

}  // namespace bypass::msgr::wire

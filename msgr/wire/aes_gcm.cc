#include "msgr/wire/aes_gcm.h"

#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/provider.h>

#include <string>
#include <string_view>

namespace bypass::msgr::wire {

namespace {

// The AES-128-GCM implementation of the provider EVP would use, called directly. Resolved once;
// the fetched EVP_CIPHER is kept so its provider stays loaded for the life of the process.
struct GcmProvider {
  EVP_CIPHER* cipher = nullptr;  // holds the provider loaded; never freed (streams live until exit)
  void* provctx = nullptr;
  OSSL_FUNC_cipher_newctx_fn* newctx = nullptr;
  OSSL_FUNC_cipher_freectx_fn* freectx = nullptr;
  OSSL_FUNC_cipher_encrypt_init_fn* encrypt_init = nullptr;
  OSSL_FUNC_cipher_decrypt_init_fn* decrypt_init = nullptr;
  OSSL_FUNC_cipher_update_fn* update = nullptr;
  OSSL_FUNC_cipher_final_fn* final = nullptr;
  OSSL_FUNC_cipher_get_ctx_params_fn* get_ctx_params = nullptr;
  std::string error;  // why it could not be resolved, empty when it was
};

bool names_include(const char* names, std::string_view wanted) {
  std::string_view all(names);
  while (!all.empty()) {
    const size_t colon = all.find(':');
    std::string_view name = all.substr(0, colon);
    if (name.size() == wanted.size() && OPENSSL_strncasecmp(name.data(), wanted.data(), name.size()) == 0) return true;
    if (colon == std::string_view::npos) break;
    all.remove_prefix(colon + 1);
  }
  return false;
}

GcmProvider resolve_gcm_provider() {
  GcmProvider p;
  p.cipher = EVP_CIPHER_fetch(nullptr, "AES-128-GCM", nullptr);
  const OSSL_PROVIDER* prov = p.cipher ? EVP_CIPHER_get0_provider(p.cipher) : nullptr;
  if (prov == nullptr) {
    p.error = "no OpenSSL provider offers AES-128-GCM";
    return p;
  }
  int no_store = 0;
  const OSSL_ALGORITHM* algs = OSSL_PROVIDER_query_operation(prov, OSSL_OP_CIPHER, &no_store);
  for (const OSSL_ALGORITHM* a = algs; a && a->algorithm_names; ++a) {
    if (!names_include(a->algorithm_names, "AES-128-GCM")) continue;
    for (const OSSL_DISPATCH* f = a->implementation; f->function_id != 0; ++f) {
      switch (f->function_id) {
        case OSSL_FUNC_CIPHER_NEWCTX: p.newctx = OSSL_FUNC_cipher_newctx(f); break;
        case OSSL_FUNC_CIPHER_FREECTX: p.freectx = OSSL_FUNC_cipher_freectx(f); break;
        case OSSL_FUNC_CIPHER_ENCRYPT_INIT: p.encrypt_init = OSSL_FUNC_cipher_encrypt_init(f); break;
        case OSSL_FUNC_CIPHER_DECRYPT_INIT: p.decrypt_init = OSSL_FUNC_cipher_decrypt_init(f); break;
        case OSSL_FUNC_CIPHER_UPDATE: p.update = OSSL_FUNC_cipher_update(f); break;
        case OSSL_FUNC_CIPHER_FINAL: p.final = OSSL_FUNC_cipher_final(f); break;
        case OSSL_FUNC_CIPHER_GET_CTX_PARAMS: p.get_ctx_params = OSSL_FUNC_cipher_get_ctx_params(f); break;
        default: break;
      }
    }
    break;
  }
  OSSL_PROVIDER_unquery_operation(prov, OSSL_OP_CIPHER, algs);
  if (!p.newctx || !p.freectx || !p.encrypt_init || !p.decrypt_init || !p.update || !p.final || !p.get_ctx_params) {
    p.error = std::string("OpenSSL provider '") + OSSL_PROVIDER_get0_name(prov) +
              "' lacks a complete AES-128-GCM implementation";
    return p;
  }
  p.provctx = OSSL_PROVIDER_get0_provider_ctx(prov);
  return p;
}

const GcmProvider& gcm() {
  static const GcmProvider provider = resolve_gcm_provider();
  if (!provider.error.empty()) throw CryptoError(provider.error);
  return provider;
}

}  // namespace

AesGcmStream::AesGcmStream(const AesKey& key, const AesNonce& nonce, bool encrypt, uint64_t max_units)
    : encrypt_(encrypt), nonce_(nonce), max_units_(std::min(max_units, kMaxUnits)) {
  const GcmProvider& p = gcm();
  cctx_ = p.newctx(p.provctx);
  if (!cctx_) throw CryptoError("AES-128-GCM context allocation failed");
  // The key schedule (and GHASH key) are computed here, once; units only change the IV.
  const int ok = encrypt ? p.encrypt_init(cctx_, key.data(), key.size(), nullptr, 0, nullptr)
                         : p.decrypt_init(cctx_, key.data(), key.size(), nullptr, 0, nullptr);
  if (ok != 1) {
    p.freectx(cctx_);
    throw CryptoError("AES-128-GCM initialisation failed");
  }
}

AesGcmStream::~AesGcmStream() {
  OPENSSL_cleanse(nonce_.data(), nonce_.size());
  gcm().freectx(cctx_);  // the provider cleanses the key schedule
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
  if (gcm().encrypt_init(cctx_, nullptr, 0, nonce_.data(), nonce_.size(), nullptr) != 1)
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
  if (gcm().decrypt_init(cctx_, nullptr, 0, nonce_.data(), nonce_.size(), params) != 1)
    throw CryptoError("AES-128-GCM nonce setup failed");
  advance_nonce();
}

void AesGcmStream::crypt(const void* in, void* out, size_t len) {
  if (len == 0) return;
  size_t written = 0;
  if (gcm().update(cctx_, static_cast<unsigned char*>(out), &written, len, static_cast<const unsigned char*>(in),
                   len) != 1 ||
      written != len)
    throw CryptoError(encrypt_ ? "AES-128-GCM encrypt failed" : "AES-128-GCM decrypt failed");
}

void AesGcmStream::finish_seal(void* tag_out) {
  unsigned char none[1];
  size_t final_len = 0;
  const GcmProvider& p = gcm();
  if (p.final(cctx_, none, &final_len, 0) != 1) throw CryptoError("AES-128-GCM encrypt final failed");
  OSSL_PARAM params[2] = {OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, tag_out, kAesGcmTagLen),
                          OSSL_PARAM_construct_end()};
  if (p.get_ctx_params(cctx_, params) != 1) throw CryptoError("AES-128-GCM tag retrieval failed");
}

void AesGcmStream::finish_open() {
  unsigned char none[1];
  size_t final_len = 0;
  if (gcm().final(cctx_, none, &final_len, 0) != 1)
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

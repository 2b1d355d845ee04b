#include "msgr/auth/cephx_crypto.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

#include "msgr/entity.h"

namespace bypass::msgr::auth {

namespace {
constexpr unsigned char kCephAesIv[17] = "cephsageyudagreg";  // CEPH_AES_IV
constexpr size_t kAesBlock = 16;
constexpr size_t kMaxCiphertext = 1 << 20;  // far above any cephx structure

struct CipherCtxDeleter {
  void operator()(EVP_CIPHER_CTX* c) const { EVP_CIPHER_CTX_free(c); }
};

std::string aes_cbc(const CephxKey& key, std::string_view in, bool encrypt) {
  if (key.secret.size() != kCephxKeyLength)
    throw AuthError("cephx: key of " + std::to_string(key.secret.size()) + " bytes, AES-128 needs 16");
  std::unique_ptr<EVP_CIPHER_CTX, CipherCtxDeleter> ctx(EVP_CIPHER_CTX_new());
  if (!ctx) throw AuthError("cephx: EVP_CIPHER_CTX_new failed");
  const auto* k = reinterpret_cast<const unsigned char*>(key.secret.data());
  if (EVP_CipherInit_ex(ctx.get(), EVP_aes_128_cbc(), nullptr, k, kCephAesIv, encrypt ? 1 : 0) != 1)
    throw AuthError("cephx: AES-128-CBC init failed");
  std::string out(in.size() + kAesBlock, '\0');
  int len = 0;
  int tail = 0;
  auto* o = reinterpret_cast<unsigned char*>(out.data());
  if (EVP_CipherUpdate(ctx.get(), o, &len, reinterpret_cast<const unsigned char*>(in.data()),
                       static_cast<int>(in.size())) != 1 ||
      EVP_CipherFinal_ex(ctx.get(), o + len, &tail) != 1)
    throw AuthError(encrypt ? "cephx: AES-128-CBC encryption failed"
                            : "cephx: AES-128-CBC decryption failed (bad padding: wrong key?)");
  out.resize(static_cast<size_t>(len + tail));
  return out;
}

constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64_encode(std::string_view in) {
  std::string out;
  for (size_t i = 0; i < in.size(); i += 3) {
    uint32_t v = static_cast<uint8_t>(in[i]) << 16;
    if (i + 1 < in.size()) v |= static_cast<uint8_t>(in[i + 1]) << 8;
    if (i + 2 < in.size()) v |= static_cast<uint8_t>(in[i + 2]);
    out += kBase64[(v >> 18) & 63];
    out += kBase64[(v >> 12) & 63];
    out += i + 1 < in.size() ? kBase64[(v >> 6) & 63] : '=';
    out += i + 2 < in.size() ? kBase64[v & 63] : '=';
  }
  return out;
}

bool base64_decode(std::string_view in, std::string* out) {
  if (in.size() % 4 != 0) return false;
  uint32_t acc = 0;
  int bits = 0;
  size_t pad = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '=') {
      if (i + 2 < in.size() || ++pad > 2) return false;
      continue;
    }
    if (pad) return false;
    const char* p = std::strchr(kBase64, c);
    if (c == '\0' || p == nullptr) return false;
    acc = (acc << 6) | static_cast<uint32_t>(p - kBase64);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out->push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return true;
}

std::string trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return {};
  size_t e = s.find_last_not_of(" \t\r");
  return std::string(s.substr(b, e - b + 1));
}
}  // namespace

uint64_t random_u64_nonzero() {
  uint64_t v = 0;
  while (v == 0)
    if (RAND_bytes(reinterpret_cast<unsigned char*>(&v), sizeof(v)) != 1) throw AuthError("RAND_bytes failed");
  return v;
}

CephxKey CephxKey::random() {
  CephxKey k;
  k.secret.resize(kCephxKeyLength);
  if (RAND_bytes(reinterpret_cast<unsigned char*>(k.secret.data()), kCephxKeyLength) != 1)
    throw AuthError("RAND_bytes failed");
  k.created_sec = static_cast<uint32_t>(::time(nullptr));
  return k;
}

void CephxKey::encode(wire::Encoder& enc) const {
  enc.u16(kCephCryptoAes);
  enc.u32(created_sec);
  enc.u32(created_nsec);
  enc.u16(static_cast<uint16_t>(secret.size()));
  enc.raw(secret);
}

CephxKey CephxKey::decode(wire::Decoder& dec) {
  CephxKey k;
  uint16_t type = dec.u16("key.type");
  k.created_sec = dec.u32("key.created.sec");
  k.created_nsec = dec.u32("key.created.nsec");
  uint16_t len = dec.u16("key.length");
  if (type != kCephCryptoAes) dec.fail("key.type", "crypto type " + std::to_string(type) + " is not AES (1)");
  if (len != kCephxKeyLength) dec.fail("key.length", "AES-128 keys have 16 bytes, not " + std::to_string(len));
  k.secret = std::string(dec.raw(len, "key.secret"));
  return k;
}

std::string CephxKey::to_base64() const {
  BufferList bl;
  wire::Encoder enc(bl);
  encode(enc);
  return base64_encode(bl.to_string());
}

CephxKey CephxKey::from_base64(std::string_view text, const std::string& where) {
  std::string raw;
  if (!base64_decode(text, &raw)) throw AuthError(where + ": key is not valid base64");
  try {
    wire::Decoder dec(raw, where);
    CephxKey k = decode(dec);
    if (!dec.at_end()) dec.fail("<end>", "trailing bytes after the key");
    return k;
  } catch (const wire::DecodeError& e) {
    throw AuthError(std::string("not a Ceph key: ") + e.what());
  }
}

std::string cephx_encrypt(const CephxKey& key, std::string_view plaintext) { return aes_cbc(key, plaintext, true); }

std::string cephx_decrypt(const CephxKey& key, std::string_view ciphertext) {
  if (ciphertext.empty() || ciphertext.size() % kAesBlock != 0 || ciphertext.size() > kMaxCiphertext)
    throw AuthError("cephx: ciphertext of " + std::to_string(ciphertext.size()) +
                    " bytes is not a whole number of AES blocks");
  return aes_cbc(key, ciphertext, false);
}

std::string seal_envelope(const CephxKey& key, std::string_view body) {
  BufferList bl;
  wire::Encoder enc(bl);
  enc.u8(1);
  enc.u64(kCephxEncMagic);
  enc.raw(body);
  return cephx_encrypt(key, bl.to_string());
}

std::string open_envelope(const CephxKey& key, std::string_view ciphertext, const char* what) {
  std::string plain;
  try {
    plain = cephx_decrypt(key, ciphertext);
  } catch (const AuthError&) {
    throw AuthError(std::string("cephx: cannot decrypt ") + what + " (wrong key?)");
  }
  wire::Decoder dec(plain, what);
  dec.u8("struct_v");
  if (plain.size() < 9 || dec.u64("magic") != kCephxEncMagic)
    throw AuthError(std::string("cephx: ") + what + " does not decrypt with our key (wrong key?)");
  return plain.substr(9);
}

void encode_sealed(wire::Encoder& enc, const CephxKey& key, std::string_view body) {
  enc.blob(seal_envelope(key, body));
}

std::string decode_sealed(wire::Decoder& dec, const CephxKey& key, const char* what) {
  std::string cipher = dec.blob(what);
  return open_envelope(key, cipher, what);
}

std::string CephxEntity::to_string() const {
  return std::string(entity_type_name(static_cast<EntityType>(type))) + "." + id;
}

bool CephxEntity::parse(std::string_view text, CephxEntity* out) {
  size_t dot = text.find('.');
  if (dot == std::string_view::npos) return false;
  EntityType t;
  if (!parse_entity_type(text.substr(0, dot), &t)) return false;
  out->type = static_cast<uint32_t>(t);
  out->id = std::string(text.substr(dot + 1));
  return true;
}

void CephxEntity::encode(wire::Encoder& enc) const {
  enc.u32(type);
  enc.blob(id);
}

CephxEntity CephxEntity::decode(wire::Decoder& dec) {
  CephxEntity e;
  e.type = dec.u32("entity_name.type");
  uint32_t len = dec.u32("entity_name.id");
  if (len > 4096) dec.fail("entity_name.id", "name of " + std::to_string(len) + " bytes");
  e.id = std::string(dec.raw(len, "entity_name.id"));
  return e;
}

Keyring Keyring::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw AuthError("cannot read keyring '" + path + "': " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  return parse(text.str(), path);
}

Keyring Keyring::parse(std::string_view text, const std::string& path) {
  Keyring k;
  k.path_ = path;
  CephxEntity section;
  bool in_section = false;
  size_t line_no = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string line = trim(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++line_no;
    const std::string where = path + ":" + std::to_string(line_no);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line[0] == '[') {
      if (line.back() != ']') throw AuthError(where + ": section header without ']'");
      std::string name = trim(std::string_view(line).substr(1, line.size() - 2));
      if (!CephxEntity::parse(name, &section))
        throw AuthError(where + ": '" + name + "' is not an entity name like client.admin");
      in_section = true;
      continue;
    }
    size_t eq = line.find('=');
    if (eq == std::string::npos) throw AuthError(where + ": expected 'key = value'");
    if (trim(std::string_view(line).substr(0, eq)) != "key") continue;  // caps, auid, ...
    if (!in_section) throw AuthError(where + ": key outside a [entity] section");
    k.keys_[section] = CephxKey::from_base64(trim(std::string_view(line).substr(eq + 1)), where);
  }
  if (k.keys_.empty()) throw AuthError("keyring '" + path + "' holds no key");
  return k;
}

const CephxKey* Keyring::find(const CephxEntity& name) const {
  auto it = keys_.find(name);
  return it == keys_.end() ? nullptr : &it->second;
}

uint64_t cephx_challenge_proof(const CephxKey& key, uint64_t server_challenge, uint64_t client_challenge) {
  BufferList body;
  wire::Encoder enc(body);
  enc.u64(server_challenge);
  enc.u64(client_challenge);
  BufferList sealed;
  wire::Encoder out(sealed);
  encode_sealed(out, key, body.to_string());
  std::string bytes = sealed.to_string();
  uint64_t proof = 0;
  for (size_t pos = 0; pos + 8 <= bytes.size(); pos += 8) {
    uint64_t word = 0;
    for (int i = 0; i < 8; ++i) word |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[pos + i])) << (8 * i);
    proof ^= word;
  }
  return proof;
}

SessionKeys cephx_session_keys(const CephxKey& session_key, std::string_view connection_secret, bool secure) {
  SessionKeys keys;
  keys.session_key = session_key.secret;
  if (!secure) return keys;
  if (connection_secret.size() < 40)
    throw AuthError("cephx: connection secret of " + std::to_string(connection_secret.size()) +
                    " bytes, secure mode needs 40");
  std::memcpy(keys.aes_key.data(), connection_secret.data(), 16);
  std::memcpy(keys.client_rx_nonce.data(), connection_secret.data() + 16, 12);
  std::memcpy(keys.server_rx_nonce.data(), connection_secret.data() + 28, 12);
  return keys;
}

}  // namespace bypass::msgr::auth

// What the msgr wire fuzz entry (fuzz_wire.cc) feeds, shared with the seed generator so that seeds
// are produced by exactly the handshakes the fuzzer drives.
//
// Input layout: byte 0 picks the target and a variant, the rest is the peer's bytes.
//   target  = byte0 % kTargetCount
//   variant = byte0 / kTargetCount (mod kVariantCount): bits 0-1 the server's answer to
//             SESSION_RECONNECT, bit 2 shared-secret authentication instead of none, bit 3 cephx
//             (the server is then a monitor-style cephx server; both roles, secure mode); bits 2
//             and 3 together: cephx with a ticket (the server is an osd, the client presents an
//             authorizer built from a fixed ticket and answers the osd's challenge).
// The *Framed targets read the rest as records {u8 tag-1, le16 length, payload} and put a banner
// and valid crc-mode frames around them, so mutations reach every handshake state instead of
// dying at the preamble crc.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "msgr/handshake.h"
#include "msgr/wire/aes_gcm.h"
#include "msgr/wire/frame.h"

namespace bypass::msgr::fuzz {

enum Target : uint8_t {
  kCrcFrames,       // frame reader in crc mode, then the control/message decoders
  kSecureFrames,    // the same through AES-GCM (zero key and nonce, see frames_cipher)
  kServer,          // handshake, server role, raw bytes from a client
  kClientNew,       // handshake, client role asking for a new session, raw bytes from a server
  kClientReconnect, // handshake, client role resuming a session
  kServerFramed,
  kClientNewFramed,
  kClientReconnectFramed,
  kTargetCount,
};
constexpr uint8_t kVariantCount = 16;
constexpr uint8_t kVariantSharedSecret = 4;
constexpr uint8_t kVariantCephx = 8;

inline uint8_t selector(Target target, uint8_t variant) {
  return static_cast<uint8_t>(target + kTargetCount * variant);
}

// Small limits so that length fields the fuzzer inflates are rejected instead of buffered.
wire::FrameLimits frame_limits();
// The cipher for kSecureFrames; the seed generator encrypts with the same key.
std::unique_ptr<wire::AesGcmStream> frames_cipher(bool encrypt);
// The handshake instance a target drives, before start().
std::unique_ptr<Handshake> make_handshake(Target target, uint8_t variant);
// Builds the banner + frames a *Framed target feeds from its records.
std::string framed(std::string_view records);
// The inverse, for seeds: the records of the frames in a crc-mode byte stream after its banner.
std::string records_of(std::string_view stream);

}  // namespace bypass::msgr::fuzz

// Fuzz entry over everything that parses peer bytes: the frame reader (crc and secure), every
// control-frame decoder, ceph_msg_header2, and both roles of the handshake state machine.
// Built as a libFuzzer target with -Dfuzz=true (clang); otherwise fuzz_replay_main.cc drives the
// same entry with seeded mutations for a bounded time so the harness itself stays tested.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "config/log.h"
#include "msgr/handshake.h"
#include "msgr/wire/control_frames.h"
#include "msgr/wire/message_header.h"

using namespace bypass;
using namespace bypass::msgr;

namespace {

void fuzz_frames(std::string_view bytes, bool secure) {
  wire::FrameLimits limits;
  limits.max_segment = 1 << 16;
  limits.max_data_segment = 1 << 16;
  limits.max_frame = 1 << 18;
  wire::FrameReader reader(limits);
  if (secure) reader.set_cipher(std::make_unique<wire::AesGcmStream>(wire::AesKey{}, wire::AesNonce{}, false));
  BufferList input;
  input.append_copy(bytes);
  try {
    wire::Frame frame;
    for (int i = 0; i < 64 && reader.read(input, &frame); ++i) {
      std::string payload = frame.segments[0].to_string();
      try {
        switch (frame.tag) {
#define CASE(TAG, T) \
  case wire::Tag::TAG: wire::decode_control<wire::T>(payload); break;
          CASE(Hello, HelloFrame)
          CASE(AuthRequest, AuthRequestFrame)
          CASE(AuthBadMethod, AuthBadMethodFrame)
          CASE(AuthReplyMore, AuthReplyMoreFrame)
          CASE(AuthRequestMore, AuthRequestMoreFrame)
          CASE(AuthDone, AuthDoneFrame)
          CASE(AuthSignature, AuthSignatureFrame)
          CASE(ClientIdent, ClientIdentFrame)
          CASE(ServerIdent, ServerIdentFrame)
          CASE(IdentMissingFeatures, IdentMissingFeaturesFrame)
          CASE(SessionReconnect, SessionReconnectFrame)
          CASE(SessionReset, SessionResetFrame)
          CASE(SessionRetry, SessionRetryFrame)
          CASE(SessionRetryGlobal, SessionRetryGlobalFrame)
          CASE(SessionReconnectOk, SessionReconnectOkFrame)
          CASE(Wait, WaitFrame)
          CASE(Keepalive2, Keepalive2Frame)
          CASE(Keepalive2Ack, Keepalive2AckFrame)
          CASE(Ack, AckFrame)
#undef CASE
          case wire::Tag::Message:
            wire::MessageHeader2::decode(payload);
            break;
          default:
            break;
        }
      } catch (const wire::DecodeError&) {
      }
    }
  } catch (const wire::FrameError&) {
  } catch (const wire::CryptoError&) {
  }
}

void fuzz_handshake(std::string_view bytes, bool server) {
  HandshakeSettings settings;
  settings.my_name = {server ? EntityType::Osd : EntityType::Client, 1};
  settings.limits.max_segment = 1 << 16;
  settings.limits.max_data_segment = 1 << 16;
  settings.limits.max_frame = 1 << 18;
  EntityAddr peer;
  EntityAddr::parse("v2:127.0.0.1:6800/0", &peer);
  std::unique_ptr<Handshake> h;
  if (server) {
    Handshake::ServerHooks hooks;
    hooks.accept_session = [](const wire::ClientIdentFrame&, const HandshakeResult&, std::string*) {
      return std::optional<uint64_t>(5);
    };
    hooks.reconnect = [](const wire::SessionReconnectFrame&, const HandshakeResult&) {
      return ReconnectDecision{ReconnectDecision::Ok, 3, false};
    };
    h = Handshake::server(settings, peer, hooks);
  } else {
    h = Handshake::client(settings, peer, ClientSession{1, 2, 3, 4, 5}, {});
  }
  BufferList out;
  h->start(out);
  // Feed in two pieces so partial-input paths run too.
  size_t split = bytes.empty() ? 0 : static_cast<uint8_t>(bytes[0]) % (bytes.size() + 1);
  BufferList in;
  in.append_copy(bytes.substr(0, split));
  h->feed(in, out);
  in.append_copy(bytes.substr(split));
  h->feed(in, out);
}

// Structured variant: the input is a list of (tag, length, payload) records that are framed
// validly (banner first), so the fuzzer reaches every handshake state instead of stopping at
// the preamble crc.
std::string framed(std::string_view bytes) {
  BufferList out;
  wire::Banner{}.encode(out);
  wire::FrameAssembler tx;
  size_t pos = 0;
  for (int frames = 0; pos + 2 <= bytes.size() && frames < 32; ++frames) {
    uint8_t tag = static_cast<uint8_t>(bytes[pos]) % wire::kLastTag + 1;
    size_t len = std::min<size_t>(static_cast<uint8_t>(bytes[pos + 1]), bytes.size() - pos - 2);
    BufferList payload;
    payload.append_copy(bytes.substr(pos + 2, len));
    tx.assemble_control(static_cast<wire::Tag>(tag), payload, out);
    pos += 2 + len;
  }
  return out.to_string();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool quiet = [] {
    log::set_threshold(log::Level::Error);
    return true;
  }();
  (void)quiet;
  if (size == 0) return 0;
  std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 6) {
    case 0: fuzz_frames(bytes, false); break;
    case 1: fuzz_frames(bytes, true); break;
    case 2: fuzz_handshake(bytes, true); break;
    case 3: fuzz_handshake(bytes, false); break;
    case 4: fuzz_handshake(framed(bytes), true); break;
    case 5: fuzz_handshake(framed(bytes), false); break;
  }
  return 0;
}

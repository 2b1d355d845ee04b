// Fuzz entry over everything that parses peer bytes: the frame reader (crc and secure), every
// control-frame decoder, ceph_msg_header2, and both roles of the handshake state machine (input
// layout in fuzz_wire.h). libFuzzer drives it in the msgr-libfuzzer test (-Dfuzz=true, built
// with clang); fuzz_replay_main.cc drives it with gcc in every build.
#include "tests/unit/msgr/fuzz_wire.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/log.h"
#include "msgr/wire/banner.h"
#include "msgr/wire/control_frames.h"
#include "msgr/wire/message_header.h"

namespace bypass::msgr::fuzz {

wire::FrameLimits frame_limits() {
  wire::FrameLimits limits;
  limits.max_segment = 1 << 16;
  limits.max_data_segment = 1 << 16;
  limits.max_frame = 1 << 18;
  return limits;
}

std::unique_ptr<wire::AesGcmStream> frames_cipher(bool encrypt) {
  return std::make_unique<wire::AesGcmStream>(wire::AesKey{}, wire::AesNonce{}, encrypt);
}

std::unique_ptr<Handshake> make_handshake(Target target, uint8_t variant) {
  const bool server = target == kServer || target == kServerFramed;
  const bool reconnect = target == kClientReconnect || target == kClientReconnectFramed;
  const bool cephx = variant & kVariantCephx;
  const bool authorizer = cephx && (variant & kVariantSharedSecret);
  HandshakeSettings settings;
  settings.my_name = {server ? (cephx && !authorizer ? EntityType::Mon : EntityType::Osd) : EntityType::Client, 1};
  settings.limits = frame_limits();
  if (cephx) {
    // One fixed key on both sides, so a recorded client keeps decrypting what a server sent; fixed
    // service secrets and a fixed ticket for the authorizer exchange, for the same reason.
    static const auto keyring = std::make_shared<const auth::Keyring>(auth::Keyring::parse(
        "[client.admin]\n\tkey = AQDFTgVrtDYnLRAAnRos3FlNGVMIX4UwkMO1sA==\n", "fuzz.keyring"));
    static const auto secrets = std::make_shared<const auth::CephxServiceSecrets>(*keyring->find({0x08, "admin"}));
    static const auth::CephxTicket osd_ticket = auth::issue_ticket(
        *secrets, std::chrono::hours(24 * 365 * 20), 0x04, {0x08, "admin"}, 4242, *keyring->find({0x08, "admin"}));
    settings.auth.method = wire::kAuthCephx;
    settings.auth.mode = wire::kConModeSecure;
    settings.auth.keyring = keyring;
    settings.auth.cephx_name = {0x08, "admin"};
    settings.auth.cephx_secrets = secrets;
    settings.auth.tickets = std::make_shared<auth::CephxTicketStore>();
    if (authorizer) {
      settings.auth.tickets->put(osd_ticket);
      settings.auth.tickets->set_global_id(4242);
    }
  } else if (variant & kVariantSharedSecret) {
    settings.auth.method = wire::kAuthSharedSecret;
    settings.auth.secret = "fuzz-shared-secret";
    settings.auth.mode = wire::kConModeSecure;
  }
  EntityAddr addr;
  EntityAddr::parse(server ? "v2:127.0.0.1:40000/0" : "v2:127.0.0.1:6800/0", &addr);
  if (server) {
    settings.my_addrs.addrs = {addr};
    Handshake::ServerHooks hooks;
    hooks.accept_session = [](const wire::ClientIdentFrame&, const HandshakeResult&, std::string*) {
      return std::optional<uint64_t>(5);
    };
    const auto kind = static_cast<ReconnectDecision::Kind>(variant & 3);
    hooks.reconnect = [kind](const wire::SessionReconnectFrame&, const HandshakeResult&) {
      return ReconnectDecision{kind, 3, kind == ReconnectDecision::Reset};
    };
    return Handshake::server(settings, addr, hooks);
  }
  Handshake::ClientHooks hooks;
  hooks.session_reset = [](bool) {};
  hooks.next_global_seq = [](uint64_t at_least) { return at_least + 1; };
  ClientSession session = reconnect ? ClientSession{1, 2, 3, 4, 5} : ClientSession{1, 0, 1, 0, 0};
  return Handshake::client(settings, addr, session, hooks);
}

std::string framed(std::string_view records) {
  BufferList out;
  wire::Banner{}.encode(out);
  wire::FrameAssembler tx;
  size_t pos = 0;
  for (int frames = 0; pos + 3 <= records.size() && frames < 32; ++frames) {
    uint8_t tag = static_cast<uint8_t>(records[pos]) % wire::kLastTag + 1;
    size_t len = static_cast<uint8_t>(records[pos + 1]) | size_t{static_cast<uint8_t>(records[pos + 2])} << 8;
    len = std::min(len, records.size() - pos - 3);
    BufferList payload;
    payload.append_copy(records.substr(pos + 3, len));
    tx.assemble_control(static_cast<wire::Tag>(tag), payload, out);
    pos += 3 + len;
  }
  return out.to_string();
}

std::string records_of(std::string_view stream) {
  BufferList input;
  input.append_copy(stream);
  wire::BannerReader banner_reader;
  wire::Banner banner;
  if (!banner_reader.read(input, &banner)) return {};
  wire::FrameReader reader(frame_limits());
  wire::Frame frame;
  std::string records;
  try {
    while (reader.read(input, &frame)) {
      std::string payload = frame.segments[0].to_string();
      records += static_cast<char>(static_cast<uint8_t>(frame.tag) - 1);
      records += static_cast<char>(payload.size() & 0xff);
      records += static_cast<char>(payload.size() >> 8);
      records += payload;
    }
  } catch (const wire::FrameError&) {
    // Secure mode started: the frames after it are encrypted and have no crc-mode records.
  }
  return records;
}

namespace {

void fuzz_frames(std::string_view bytes, bool secure) {
  wire::FrameReader reader(frame_limits());
  if (secure) reader.set_cipher(frames_cipher(false));
  BufferList input;
  input.append_copy(bytes);
  try {
    wire::Frame frame;
    for (int i = 0; i < 64 && reader.read(input, &frame); ++i) {
      std::string payload = frame.segments[0].to_string();
      try {
        if (frame.tag == wire::Tag::Message)
          wire::MessageHeader2::decode(payload);
        else
          wire::visit_control_frame(frame.tag, [&]<typename F>() { wire::decode_control<F>(payload); });
      } catch (const wire::DecodeError&) {
      }
    }
  } catch (const wire::FrameError&) {
  } catch (const wire::CryptoError&) {
  }
}

// The handshake must report every malformed input as Failed, never throw out of feed().
void fuzz_handshake(Target target, uint8_t variant, std::string_view bytes) {
  auto handshake = make_handshake(target, variant);
  BufferList out;
  handshake->start(out);
  // Feed in two pieces so partial-input paths run too.
  size_t split = bytes.empty() ? 0 : static_cast<uint8_t>(bytes[0]) % (bytes.size() + 1);
  BufferList in;
  in.append_copy(bytes.substr(0, split));
  handshake->feed(in, out);
  in.append_copy(bytes.substr(split));
  handshake->feed(in, out);
}

}  // namespace
}  // namespace bypass::msgr::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace bypass::msgr::fuzz;
  static const bool quiet = [] {
    // Mutated handshakes log every failure they reach; the log would dominate the run time.
    bypass::log::set_threshold(bypass::log::Level::Error);
    return true;
  }();
  (void)quiet;
  if (size == 0) return 0;
  const auto target = static_cast<Target>(data[0] % kTargetCount);
  const auto variant = static_cast<uint8_t>(data[0] / kTargetCount % kVariantCount);
  std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (target) {
    case kCrcFrames: fuzz_frames(bytes, false); break;
    case kSecureFrames: fuzz_frames(bytes, true); break;
    case kServer:
    case kClientNew:
    case kClientReconnect: fuzz_handshake(target, variant, bytes); break;
    case kServerFramed: fuzz_handshake(kServer, variant, framed(bytes)); break;
    case kClientNewFramed: fuzz_handshake(kClientNew, variant, framed(bytes)); break;
    case kClientReconnectFramed: fuzz_handshake(kClientReconnect, variant, framed(bytes)); break;
    case kTargetCount: break;
  }
  return 0;
}

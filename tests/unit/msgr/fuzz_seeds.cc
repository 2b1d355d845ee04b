#include "tests/unit/msgr/fuzz_seeds.h"

#include <stdexcept>

#include "msgr/wire/control_frames.h"
#include "msgr/wire/message_header.h"
#include "tests/unit/msgr/fuzz_wire.h"

namespace bypass::msgr::fuzz {
namespace {

// Every control frame once (default field values encode validly), then a MESSAGE frame with all
// four segments, so the reader's multi-segment and epilogue paths have a valid starting point.
std::string frame_stream(bool secure) {
  wire::FrameAssembler tx;
  if (secure) tx.set_cipher(frames_cipher(true));
  BufferList out;
  wire::for_each_control_frame([&]<typename F>() {
    F frame;
    if constexpr (std::is_same_v<F, wire::AckFrame>) frame.seq = 9;
    BufferList payload;
    wire::encode(frame, payload);
    tx.assemble_control(wire::frame_tag<F>, payload, out);
  });

  wire::MessageHeader2 header;
  header.seq = 1;
  header.tid = 7;
  header.type = 42;
  std::array<BufferList, wire::kMaxSegments> segments;
  header.encode(segments[0]);
  segments[1].append_copy(std::string_view("front"));
  segments[2].append_copy(std::string_view("middle"));
  segments[3].append_copy(std::string(100, 'd'));
  const std::array<uint16_t, wire::kMaxSegments> alignments{wire::kDefaultAlignment, wire::kDefaultAlignment,
                                                            wire::kDefaultAlignment, wire::kPageAlignment};
  tx.assemble(wire::Tag::Message, segments, alignments, out);
  return out.to_string();
}

struct Transcript {
  std::string to_server;
  std::string to_client;
  bool completed = false;  // both sides reached Done
};

// Runs the fuzz targets' own client and server against each other and records both directions.
Transcript converse(Target client_target, uint8_t client_variant, uint8_t server_variant) {
  auto client = make_handshake(client_target, client_variant);
  auto server = make_handshake(kServer, server_variant);
  BufferList c2s, s2c;
  Transcript t;
  client->start(c2s);
  server->start(s2c);
  for (int i = 0; i < 50 && (!c2s.empty() || !s2c.empty()); ++i) {
    t.to_server += c2s.to_string();
    t.to_client += s2c.to_string();
    BufferList to_server = std::move(c2s), to_client = std::move(s2c);
    c2s.clear();
    s2c.clear();
    server->feed(to_server, s2c);
    client->feed(to_client, c2s);
  }
  t.completed = client->status() == Handshake::Status::Done && server->status() == Handshake::Status::Done;
  return t;
}

}  // namespace

std::vector<Seed> make_seeds() {
  std::vector<Seed> seeds;
  auto add = [&](std::string name, Target target, uint8_t variant, std::string bytes) {
    seeds.push_back({std::move(name), std::string(1, static_cast<char>(selector(target, variant))) + bytes});
  };
  add("frames-crc", kCrcFrames, 0, frame_stream(false));
  add("frames-secure", kSecureFrames, 0, frame_stream(true));

  const char* decisions[] = {"ok", "reset", "retry", "retry-global"};
  constexpr uint8_t kCephxAuthorizer = kVariantCephx | kVariantSharedSecret;
  for (uint8_t shared : {uint8_t{0}, kVariantSharedSecret, kVariantCephx, kCephxAuthorizer}) {
    const std::string auth = shared == kCephxAuthorizer ? "-cephx-authorizer"
                             : shared == kVariantCephx  ? "-cephx"
                             : shared                   ? "-shared-secret"
                                                        : "-auth-none";
    Transcript fresh = converse(kClientNew, shared, shared);
    // A seed from a handshake that fails early would hide every later state from the fuzzer.
    if (!fresh.completed) throw std::runtime_error("fuzz seeds: new session handshake did not complete");
    add("server-new" + auth, kServer, shared, fresh.to_server);
    add("client-new" + auth, kClientNew, shared, fresh.to_client);
    add("server-new-framed" + auth, kServerFramed, shared, records_of(fresh.to_server));
    add("client-new-framed" + auth, kClientNewFramed, shared, records_of(fresh.to_client));
    for (uint8_t decision = 0; decision < 4; ++decision) {
      const uint8_t server_variant = shared | decision;
      Transcript resume = converse(kClientReconnect, shared, server_variant);
      if (decision == ReconnectDecision::Ok && !resume.completed)
        throw std::runtime_error("fuzz seeds: session reconnect handshake did not complete");
      const std::string suffix = std::string("-") + decisions[decision] + auth;
      add("server-reconnect" + suffix, kServer, server_variant, resume.to_server);
      add("client-reconnect" + suffix, kClientReconnect, shared, resume.to_client);
      // Framed records stop where secure mode starts, so with shared-secret or cephx
      // authentication they would repeat the new-session ones.
      if (shared) continue;
      add("server-reconnect-framed" + suffix, kServerFramed, server_variant, records_of(resume.to_server));
      add("client-reconnect-framed" + suffix, kClientReconnectFramed, shared, records_of(resume.to_client));
    }
  }
  return seeds;
}

}  // namespace bypass::msgr::fuzz

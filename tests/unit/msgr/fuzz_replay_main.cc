// Without libFuzzer: drive LLVMFuzzerTestOneInput with seeded mutations of valid inputs (a real
// handshake transcript and real frames) for a bounded count and time. Any crash, hang or
// sanitizer report fails the test.
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "config/log.h"
#include "msgr/handshake.h"
#include "msgr/wire/control_frames.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

using namespace bypass;
using namespace bypass::msgr;

namespace {
// Valid seeds: what a client sends to a server (banner + handshake frames) and a frame stream.
std::vector<std::string> seeds() {
  std::vector<std::string> out;
  HandshakeSettings cs, ss;
  cs.my_name = {EntityType::Client, 1};
  ss.my_name = {EntityType::Osd, 0};
  EntityAddr a;
  EntityAddr::parse("v2:127.0.0.1:6800/0", &a);
  auto client = Handshake::client(cs, a, {}, {});
  Handshake::ServerHooks hooks;
  auto server = Handshake::server(ss, a, hooks);
  BufferList c2s, s2c, client_bytes, server_bytes;
  client->start(c2s);
  server->start(s2c);
  for (int i = 0; i < 20 && (!c2s.empty() || !s2c.empty()); ++i) {
    client_bytes.append(c2s);
    server_bytes.append(s2c);
    BufferList in1 = std::move(c2s), in2 = std::move(s2c);
    c2s.clear();
    s2c.clear();
    server->feed(in1, s2c);
    client->feed(in2, c2s);
  }
  out.push_back(std::string(1, '\x02') + client_bytes.to_string());
  out.push_back(std::string(1, '\x03') + server_bytes.to_string());
  wire::FrameAssembler tx;
  BufferList frames, payload;
  wire::encode(wire::AckFrame{9}, payload);
  tx.assemble_control(wire::Tag::Ack, payload, frames);
  out.push_back(std::string(1, '\x00') + frames.to_string());
  return out;
}
}  // namespace

int main(int argc, char** argv) {
  log::set_threshold(log::Level::Error);  // mutated handshakes log every CLIENT_IDENT they reach
  long iterations = argc > 1 ? std::atol(argv[1]) : 20000;
  auto limit = std::chrono::seconds(argc > 2 ? std::atol(argv[2]) : 20);
  auto start = std::chrono::steady_clock::now();
  std::mt19937_64 rng(20261122);
  auto corpus = seeds();
  long done = 0;
  for (; done < iterations && std::chrono::steady_clock::now() - start < limit; ++done) {
    std::string input = corpus[rng() % corpus.size()];
    int mutations = 1 + static_cast<int>(rng() % 8);
    for (int m = 0; m < mutations && input.size() > 1; ++m) {
      size_t pos = 1 + rng() % (input.size() - 1);
      switch (rng() % 4) {
        case 0: input[pos] = static_cast<char>(input[pos] ^ (1 << (rng() % 8))); break;
        case 1: input[pos] = static_cast<char>(rng()); break;
        case 2: input.resize(pos); break;
        case 3: input.insert(pos, std::string(1 + rng() % 8, static_cast<char>(rng()))); break;
      }
    }
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(input.data()), input.size());
  }
  std::printf("fuzz replay: %ld inputs, no crash\n", done);
  std::printf("1 passed, 0 failed\n");
  return 0;
}

// Messages between the bypass-bench client and server (msgr2 message types of this tool only).
#pragma once

#include <cstdint>
#include <string>

namespace bypass::bench {

// reqrep: the server answers each request with a reply of the same size and tid.
constexpr uint16_t kBenchRequest = 0x7b01;
constexpr uint16_t kBenchReply = 0x7b02;
// stream: the server consumes the message; the client's latency ends at the msgr2 ack.
constexpr uint16_t kBenchStream = 0x7b03;
// The client asks for the server's ProcessSnapshot (CPU, counters); the reply carries its text().
constexpr uint16_t kStatsRequest = 0x7b04;
constexpr uint16_t kStatsReply = 0x7b05;

// The one line `bypass-bench server` prints on stdout once it accepts connections; `run` reads it
// to learn where the client should connect:  "ready 10.98.0.1:40123 dpdk"
constexpr const char* kReadyPrefix = "ready ";
// Lines a server prints on SIGUSR1 (bench_server.h).
constexpr const char* kStatusPrefix = "status ";

}  // namespace bypass::bench

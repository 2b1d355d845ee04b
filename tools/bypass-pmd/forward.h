// testpmd-style forwarding and generation over pmd::Port's per-worker bursts: every lcore runs one
// worker, polling queue <worker> of every port; the main lcore also reports once a second.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "pmd/pmd.h"

namespace bypass::tools {

// Generated frames carry Ethernet (14) + IPv4 (20) + UDP (8) headers: nothing shorter can be built.
constexpr uint16_t kMinFrameBytes = 42;
constexpr uint16_t kMaxFwdBurst = 512;  // mbuf pointers one burst holds on the stack

enum class FwdMode { Io, Mac, RxOnly, TxOnly, FlowGen };
FwdMode parse_fwd_mode(const std::string& name);  // throws std::invalid_argument
const char* fwd_mode_name(FwdMode mode);

struct FwdOptions {
  FwdMode mode = FwdMode::Io;
  uint16_t packet_size = 64;  // bytes of frame data handed to the port (no CRC), txonly/flowgen
  uint16_t burst = 32;
  uint32_t flows = 1024;      // flowgen: distinct UDP source ports
  std::chrono::nanoseconds duration{0};  // 0: until stopped
  // After the run, keep the ports open without polling for up to this long, ending early once
  // every link is down. The peer then drains what we queued last (memif drops its rings when one
  // side leaves), and a peer that outlives us is better made to leave first: DPDK 22.11's memif
  // unmaps its rings on disconnect while the polling thread may still be inside a burst (SIGSEGV),
  // so whoever is still polling when the other side disconnects can crash. nullopt: 500 ms after
  // modes that transmit, none after rxonly.
  std::optional<std::chrono::nanoseconds> linger;
  std::chrono::nanoseconds report_every{std::chrono::seconds(1)};
};

struct PortRates {
  uint16_t port_id = 0;
  uint64_t rx_packets = 0, tx_packets = 0, rx_bytes = 0, tx_bytes = 0, dropped = 0;
  double seconds = 0;
  double rx_mpps() const { return seconds > 0 ? rx_packets / seconds / 1e6 : 0; }
  double tx_mpps() const { return seconds > 0 ? tx_packets / seconds / 1e6 : 0; }
  double rx_gbps() const { return seconds > 0 ? rx_bytes * 8 / seconds / 1e9 : 0; }
  double tx_gbps() const { return seconds > 0 ? tx_bytes * 8 / seconds / 1e9 : 0; }
};

// Called on the main lcore once per report interval (final = false) and once at the end.
using FwdReport = std::function<void(const std::vector<PortRates>&, bool final)>;

// Runs until the duration passes or `stop` becomes true. Returns the whole-run totals.
std::vector<PortRates> run_forwarding(pmd::PortSet& ports, const FwdOptions& options, const FwdReport& report,
                                      std::atomic<bool>& stop);

}  // namespace bypass::tools

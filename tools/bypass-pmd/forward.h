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
  // side leaves) and can account for every frame we sent. nullopt: 500 ms after modes that
  // transmit, none after rxonly.
  std::optional<std::chrono::nanoseconds> linger;
  std::chrono::nanoseconds report_every{std::chrono::seconds(1)};
};

// What one worker did on one port. Every frame the port delivered is in rx_packets or a drop.
struct WorkerRates {
  unsigned worker = 0;
  uint64_t rx_packets = 0, tx_packets = 0;
  uint64_t tx_full = 0;          // offered to the tx queue and not taken: freed (a drop in io/mac, unsent in txonly/flowgen)
  uint64_t redirect_drops = 0;   // received on this worker's queue, the owner's redirect ring full: freed
  uint64_t redirected_out = 0, redirected_in = 0;
};

struct PortRates {
  uint16_t port_id = 0;
  uint64_t rx_packets = 0, tx_packets = 0, rx_bytes = 0, tx_bytes = 0;
  uint64_t tx_full = 0, redirect_drops = 0;       // sums over workers
  uint64_t rx_missed = 0, rx_nombuf = 0, rx_errors = 0;  // the device's own (imissed, rx_nombuf, ierrors)
  // Every frame lost after it reached the port: redirect_drops + rx_missed + rx_nombuf + rx_errors,
  // plus tx_full in the forwarding modes (io, mac). On a receiver, rx_packets + dropped is what the
  // peer sent (once the run outlasted the peer's traffic).
  uint64_t dropped = 0;
  std::vector<WorkerRates> workers;
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

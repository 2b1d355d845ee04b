#include "tools/bypass-pmd/forward.h"

#include <rte_cycles.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_udp.h>

#include <cstring>
#include <memory>
#include <stdexcept>
#include <thread>

namespace bypass::tools {

FwdMode parse_fwd_mode(const std::string& name) {
  if (name == "io") return FwdMode::Io;
  if (name == "mac") return FwdMode::Mac;
  if (name == "rxonly") return FwdMode::RxOnly;
  if (name == "txonly") return FwdMode::TxOnly;
  if (name == "flowgen") return FwdMode::FlowGen;
  throw std::invalid_argument("fwd: unknown mode '" + name + "' (expected io, mac, rxonly, txonly or flowgen)");
}

const char* fwd_mode_name(FwdMode mode) {
  switch (mode) {
    case FwdMode::Io: return "io";
    case FwdMode::Mac: return "mac";
    case FwdMode::RxOnly: return "rxonly";
    case FwdMode::TxOnly: return "txonly";
    case FwdMode::FlowGen: return "flowgen";
  }
  return "?";
}

namespace {

constexpr size_t kHeaderBytes = sizeof(rte_ether_hdr) + sizeof(rte_ipv4_hdr) + sizeof(rte_udp_hdr);
static_assert(kHeaderBytes == kMinFrameBytes);

// Counters of one worker on one port, written by that worker only.
struct alignas(64) Counters {
  std::atomic<uint64_t> rx_packets{0}, tx_packets{0}, rx_bytes{0}, tx_bytes{0}, tx_full{0};
};
inline void bump(std::atomic<uint64_t>& c, uint64_t n) {
  c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

struct Shared {
  pmd::PortSet* ports;
  FwdOptions options;
  std::atomic<bool>* stop;
  std::vector<uint16_t> peer;  // tx port index for each rx port index
  std::unique_ptr<Counters[]> counters;  // [worker * ports + port]
  std::vector<std::array<uint8_t, kHeaderBytes>> templates;  // per port, txonly/flowgen
  std::vector<pmd::PortStats> at_start;  // device and port counters when the run began
  size_t port_count() const { return ports->ports().size(); }
  Counters& at(unsigned worker, size_t port) { return counters[worker * port_count() + port]; }
};

std::array<uint8_t, kHeaderBytes> make_template(const pmd::PortInfo& info, uint16_t frame_size) {
  std::array<uint8_t, kHeaderBytes> t{};
  auto* eth = reinterpret_cast<rte_ether_hdr*>(t.data());
  std::memcpy(eth->src_addr.addr_bytes, info.mac.data(), 6);
  const uint8_t dst[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x02};  // locally administered peer
  std::memcpy(eth->dst_addr.addr_bytes, dst, 6);
  eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
  auto* ip = reinterpret_cast<rte_ipv4_hdr*>(eth + 1);
  ip->version_ihl = RTE_IPV4_VHL_DEF;
  ip->time_to_live = 64;
  ip->next_proto_id = IPPROTO_UDP;
  ip->total_length = rte_cpu_to_be_16(static_cast<uint16_t>(frame_size - sizeof(rte_ether_hdr)));
  ip->src_addr = rte_cpu_to_be_32(RTE_IPV4(198, 18, 0, 1));  // RFC 2544 benchmarking range
  ip->dst_addr = rte_cpu_to_be_32(RTE_IPV4(198, 18, 0, 2));
  ip->hdr_checksum = rte_ipv4_cksum(ip);
  auto* udp = reinterpret_cast<rte_udp_hdr*>(ip + 1);
  udp->src_port = rte_cpu_to_be_16(9);
  udp->dst_port = rte_cpu_to_be_16(9);
  udp->dgram_len = rte_cpu_to_be_16(static_cast<uint16_t>(frame_size - sizeof(rte_ether_hdr) - sizeof(rte_ipv4_hdr)));
  return t;  // UDP checksum 0: none (RFC 768), so varying ports in flowgen needs no update
}

uint64_t sum_bytes(rte_mbuf** pkts, uint16_t n) {
  uint64_t bytes = 0;
  for (uint16_t i = 0; i < n; ++i) bytes += rte_pktmbuf_pkt_len(pkts[i]);
  return bytes;
}

// Frames `worker` received on port index `p`: counted, then freed (rxonly) or sent out of the
// peer port (io, mac), counting what its tx queue did not take.
void handle_received(Shared& s, unsigned worker, size_t p, rte_mbuf** pkts, uint16_t got) {
  const FwdOptions& o = s.options;
  auto& ports = s.ports->ports();
  const uint64_t bytes = sum_bytes(pkts, got);
  Counters& c = s.at(worker, p);
  bump(c.rx_packets, got);
  bump(c.rx_bytes, bytes);
  if (o.mode != FwdMode::Io && o.mode != FwdMode::Mac) {
    rte_pktmbuf_free_bulk(pkts, got);
    return;
  }
  const size_t out = s.peer[p];
  pmd::Port& tx_port = *ports[out];
  if (o.mode == FwdMode::Mac) {
    for (uint16_t i = 0; i < got; ++i) {
      auto* eth = rte_pktmbuf_mtod(pkts[i], rte_ether_hdr*);
      if (rte_pktmbuf_data_len(pkts[i]) < sizeof(rte_ether_hdr)) continue;
      rte_ether_addr_copy(&eth->src_addr, &eth->dst_addr);
      std::memcpy(eth->src_addr.addr_bytes, tx_port.info().mac.data(), 6);
    }
  }
  const uint16_t sent = tx_port.tx_burst(worker, pkts, got);
  Counters& tc = s.at(worker, out);
  bump(tc.tx_packets, sent);
  bump(tc.tx_bytes, sent == got ? bytes : sum_bytes(pkts, sent));
  if (sent < got) {
    bump(tc.tx_full, got - sent);
    rte_pktmbuf_free_bulk(pkts + sent, got - sent);
  }
}

// One pass over every port for `worker`: the unit the main lcore interleaves with reporting.
void poll_once(Shared& s, unsigned worker, uint32_t& flow) {
  const FwdOptions& o = s.options;
  auto& ports = s.ports->ports();
  const size_t nports = ports.size();
  const uint16_t burst = std::min<uint16_t>(o.burst, kMaxFwdBurst);
  rte_mbuf* pkts[kMaxFwdBurst];
  const bool generate = o.mode == FwdMode::TxOnly || o.mode == FwdMode::FlowGen;
  for (size_t p = 0; p < nports; ++p) {
    pmd::Port& port = *ports[p];
    // Generators receive too, so a peer's traffic or ARP never fills our rx ring; counted, freed.
    const uint16_t got = port.rx_burst(worker, pkts, burst);
    if (got) handle_received(s, worker, p, pkts, got);
    if (!generate) continue;
    if (rte_pktmbuf_alloc_bulk(port.mempool(), pkts, burst) != 0) continue;
    const auto& header = s.templates[p];
    for (uint16_t i = 0; i < burst; ++i) {
      rte_mbuf* m = pkts[i];
      uint8_t* data = rte_pktmbuf_mtod(m, uint8_t*);
      std::memcpy(data, header.data(), kHeaderBytes);
      if (o.mode == FwdMode::FlowGen) {
        auto* udp = reinterpret_cast<rte_udp_hdr*>(data + sizeof(rte_ether_hdr) + sizeof(rte_ipv4_hdr));
        udp->src_port = rte_cpu_to_be_16(static_cast<uint16_t>(1024 + flow++ % o.flows));
      }
      m->data_len = o.packet_size;
      m->pkt_len = o.packet_size;
    }
    Counters& c = s.at(worker, p);
    const uint16_t sent = port.tx_burst(worker, pkts, burst);
    bump(c.tx_packets, sent);
    bump(c.tx_bytes, uint64_t{sent} * o.packet_size);
    if (sent < burst) {
      bump(c.tx_full, burst - sent);  // never left: unsent, not lost
      rte_pktmbuf_free_bulk(pkts + sent, burst - sent);
    }
  }
}

// After every worker stopped: what other workers redirected to each worker and it had not taken
// yet is handled as that worker would have, so no received frame goes uncounted.
void drain_redirect_rings(Shared& s, unsigned workers) {
  rte_mbuf* pkts[kMaxFwdBurst];
  for (size_t p = 0; p < s.port_count(); ++p)
    for (unsigned w = 0; w < workers; ++w)
      while (const uint16_t n = s.ports->port(p).drain_redirect(w, pkts, kMaxFwdBurst))
        handle_received(s, w, p, pkts, n);
}

uint64_t since(uint64_t now, uint64_t start) { return now > start ? now - start : 0; }  // memif zeroes on disconnect

void worker_loop(Shared& s, unsigned worker) {
  uint32_t flow = worker * 7919u;
  while (!s.stop->load(std::memory_order_relaxed)) poll_once(s, worker, flow);
}

int worker_entry(void* arg) {
  auto* s = static_cast<Shared*>(arg);
  const unsigned lcore = rte_lcore_id();
  // Workers are numbered by lcore order: the main lcore is one of them.
  unsigned worker = 0;
  unsigned id = 0;
  RTE_LCORE_FOREACH(id) {
    if (id == lcore) break;
    ++worker;
  }
  worker_loop(*s, worker);
  return 0;
}

std::vector<PortRates> snapshot(Shared& s, unsigned workers) {
  std::vector<PortRates> out(s.port_count());
  const bool forwarding = s.options.mode == FwdMode::Io || s.options.mode == FwdMode::Mac;
  for (size_t p = 0; p < s.port_count(); ++p) {
    pmd::Port& port = s.ports->port(p);
    const pmd::PortStats now = port.stats(), &start = s.at_start[p];
    PortRates& r = out[p];
    r.port_id = port.id();
    for (unsigned w = 0; w < workers; ++w) {
      Counters& c = s.at(w, p);
      WorkerRates wr;
      wr.worker = w;
      wr.rx_packets = c.rx_packets.load(std::memory_order_relaxed);
      wr.tx_packets = c.tx_packets.load(std::memory_order_relaxed);
      wr.tx_full = c.tx_full.load(std::memory_order_relaxed);
      if (w < now.workers.size() && w < start.workers.size()) {
        wr.redirect_drops = since(now.workers[w].redirect_drops, start.workers[w].redirect_drops);
        wr.redirected_out = since(now.workers[w].redirected_out, start.workers[w].redirected_out);
        wr.redirected_in = since(now.workers[w].redirected_in, start.workers[w].redirected_in);
      }
      r.rx_packets += wr.rx_packets;
      r.tx_packets += wr.tx_packets;
      r.rx_bytes += c.rx_bytes.load(std::memory_order_relaxed);
      r.tx_bytes += c.tx_bytes.load(std::memory_order_relaxed);
      r.tx_full += wr.tx_full;
      r.redirect_drops += wr.redirect_drops;
      r.workers.push_back(wr);
    }
    r.rx_missed = since(now.rx_missed, start.rx_missed);
    r.rx_nombuf = since(now.rx_nombuf, start.rx_nombuf);
    r.rx_errors = since(now.rx_errors, start.rx_errors);
    r.dropped = r.redirect_drops + r.rx_missed + r.rx_nombuf + r.rx_errors + (forwarding ? r.tx_full : 0);
  }
  return out;
}

std::vector<PortRates> difference(const std::vector<PortRates>& now, const std::vector<PortRates>& before,
                                  double seconds) {
  std::vector<PortRates> out = now;
  for (size_t p = 0; p < out.size(); ++p) {
    PortRates& r = out[p];
    const PortRates& b = before[p];
    for (uint64_t PortRates::*field : {&PortRates::rx_packets, &PortRates::tx_packets, &PortRates::rx_bytes,
                                       &PortRates::tx_bytes, &PortRates::tx_full, &PortRates::redirect_drops,
                                       &PortRates::rx_missed, &PortRates::rx_nombuf, &PortRates::rx_errors,
                                       &PortRates::dropped})
      r.*field = since(r.*field, b.*field);
    for (size_t w = 0; w < r.workers.size() && w < b.workers.size(); ++w)
      for (uint64_t WorkerRates::*field : {&WorkerRates::rx_packets, &WorkerRates::tx_packets, &WorkerRates::tx_full,
                                           &WorkerRates::redirect_drops, &WorkerRates::redirected_out,
                                           &WorkerRates::redirected_in})
        r.workers[w].*field = since(r.workers[w].*field, b.workers[w].*field);
    r.seconds = seconds;
  }
  return out;
}

}  // namespace

std::vector<PortRates> run_forwarding(pmd::PortSet& ports, const FwdOptions& options, const FwdReport& report,
                                      std::atomic<bool>& stop) {
  Shared s;
  s.ports = &ports;
  s.options = options;
  s.stop = &stop;
  const size_t nports = ports.ports().size();
  if (nports == 0) throw std::runtime_error("fwd: no ports");
  if (options.packet_size < kHeaderBytes || options.packet_size > ports.pools().data_room() - RTE_PKTMBUF_HEADROOM)
    throw std::invalid_argument("fwd --size: " + std::to_string(options.packet_size) + " must be " +
                                std::to_string(kHeaderBytes) + ".." +
                                std::to_string(ports.pools().data_room() - RTE_PKTMBUF_HEADROOM) +
                                " bytes (raise dpdk.mbuf_size for larger frames)");
  // Ports pair up (0<->1, 2<->3); an odd last port forwards back out of itself.
  for (size_t p = 0; p < nports; ++p) s.peer.push_back(static_cast<uint16_t>((p ^ 1) < nports ? (p ^ 1) : p));
  const unsigned lcores = rte_lcore_count();
  const unsigned workers = std::min<unsigned>(lcores, ports.port(0).workers());
  s.counters = std::make_unique<Counters[]>(size_t{lcores} * nports);
  for (size_t p = 0; p < nports; ++p) s.templates.push_back(make_template(ports.port(p).info(), options.packet_size));
  for (size_t p = 0; p < nports; ++p) s.at_start.push_back(ports.port(p).stats());

  // Other lcores (only as many as there are workers) run the loop; the main lcore reports and,
  // when it is a worker too, forwards between reports.
  unsigned index = 0, id = 0;
  std::vector<unsigned> launched;
  RTE_LCORE_FOREACH(id) {
    if (index++ >= workers) break;
    if (id == rte_get_main_lcore()) continue;
    if (rte_eal_remote_launch(worker_entry, &s, id) == 0) launched.push_back(id);
  }
  unsigned main_worker = 0;
  RTE_LCORE_FOREACH(id) {
    if (id == rte_get_main_lcore()) break;
    ++main_worker;
  }
  const bool main_forwards = main_worker < workers;

  const uint64_t hz = rte_get_tsc_hz();
  const uint64_t start = rte_rdtsc();
  const uint64_t end = options.duration.count() > 0 ? start + uint64_t(options.duration.count() / 1e9 * hz) : UINT64_MAX;
  const uint64_t every = std::max<uint64_t>(1, uint64_t(options.report_every.count() / 1e9 * hz));
  uint64_t last = start;
  std::vector<PortRates> previous = snapshot(s, workers);
  uint32_t main_flow = main_worker * 7919u;
  while (!stop.load(std::memory_order_relaxed)) {
    const uint64_t now = rte_rdtsc();
    if (now >= end) break;
    if (now - last >= every) {
      const std::vector<PortRates> current = snapshot(s, workers);
      report(difference(current, previous, double(now - last) / hz), false);
      previous = current;
      last = now;
    }
    if (main_forwards) {
      for (int pass = 0; pass < 256; ++pass) poll_once(s, main_worker, main_flow);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  stop.store(true);
  rte_eal_mp_wait_lcore();
  drain_redirect_rings(s, workers);
  const uint64_t finish = rte_rdtsc();
  std::vector<PortRates> total = snapshot(s, workers);
  for (auto& r : total) r.seconds = double(finish - start) / hz;
  report(total, true);
  return total;
}

}  // namespace bypass::tools

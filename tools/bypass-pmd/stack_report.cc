#include "tools/bypass-pmd/stack_report.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "tools/bypass-pmd/json.h"

namespace bypass::tools {

namespace {

double ms(inet::Duration d) { return std::chrono::duration<double, std::milli>(d).count(); }
double seconds(inet::Duration d) { return std::chrono::duration<double>(d).count(); }

std::string endpoint(const inet::IpAddress& ip, uint16_t port) { return inet::endpoint_to_string(ip, port); }

}  // namespace

void print_arp(const std::vector<WorkerState>& workers, bool json) {
  for (const WorkerState& w : workers) {
    if (json) {
      Json j;
      j.begin_object().field("type", "arp").field("worker", w.worker).key("entries").begin_array();
      for (const auto& e : w.arp) {
        const bool incomplete = e.state == inet::ArpEntryInfo::State::Incomplete;
        j.begin_object().field("ip", e.ip.to_string()).field("mac", incomplete ? std::string() : e.mac.to_string()).field("state", inet::to_string(e.state)).field("age_s", seconds(e.age));
        j.field("queued", uint64_t{e.queued_packets}).field("requests", e.requests_sent).end_object();
      }
      j.end_array().end_object();
      std::printf("%s\n", j.str().c_str());
      continue;
    }
    std::printf("ARP cache, worker %u: %zu entries\n", w.worker, w.arp.size());
    if (w.arp.empty()) continue;
    std::printf("  %-15s  %-17s  %-10s  %9s  %6s\n", "IP", "MAC", "STATE", "AGE", "QUEUED");
    for (const auto& e : w.arp) {
      const bool incomplete = e.state == inet::ArpEntryInfo::State::Incomplete;
      std::printf("  %-15s  %-17s  %-10s  %8.1fs  %6zu%s\n", e.ip.to_string().c_str(),
                  incomplete ? "(incomplete)" : e.mac.to_string().c_str(), inet::to_string(e.state), seconds(e.age),
                  e.queued_packets,
                  incomplete ? (" after " + std::to_string(e.requests_sent) + " requests").c_str() : "");
    }
  }
  std::fflush(stdout);
}

void print_neighbors(const std::vector<WorkerState>& workers, bool json) {
  const auto upper = [](const char* text) {
    std::string out(text);
    for (char& ch : out) ch = static_cast<char>(ch >= 'a' && ch <= 'z' ? ch - 'a' + 'A' : ch);
    return out;
  };
  for (const WorkerState& w : workers) {
    if (!w.ipv6) continue;
    if (json) {
      Json j;
      j.begin_object().field("type", "neigh").field("worker", w.worker).key("addresses").begin_array();
      for (const auto& a : w.addresses) {
        j.begin_object().field("ip", a.ip.to_string()).field("state", upper(inet::to_string(a.state)))
            .field("dad_solicitations", a.dad_solicitations_sent);
        if (a.state == inet::AddressState::Duplicated) j.field("claimed_by", a.claimed_by.to_string());
        j.end_object();
      }
      j.end_array().key("entries").begin_array();
      for (const auto& e : w.neighbors) {
        const bool incomplete = e.state == inet::NeighborState::Incomplete;
        j.begin_object().field("ip", e.ip.to_string()).field("mac", incomplete ? std::string() : e.mac.to_string())
            .field("state", upper(inet::to_string(e.state))).field("queued", uint64_t{e.queued_packets})
            .field("solicitations", e.solicitations_sent).end_object();
      }
      j.end_array().end_object();
      std::printf("%s\n", j.str().c_str());
      continue;
    }
    // Who we are on the link before whom we know: an address still TENTATIVE is not answered for
    // nor sent from yet, a DUPLICATED one never will be (RFC 4862 §5.4.5).
    std::printf("IPv6 addresses, worker %u:\n", w.worker);
    for (const auto& a : w.addresses) {
      std::string note;
      if (a.state == inet::AddressState::Duplicated) note = "  claimed by " + a.claimed_by.to_string();
      std::printf("  %-39s  %-10s  %d DAD solicitations%s\n", a.ip.to_string().c_str(),
                  upper(inet::to_string(a.state)).c_str(), a.dad_solicitations_sent, note.c_str());
    }
    std::printf("Neighbour cache, worker %u: %zu entries\n", w.worker, w.neighbors.size());
    if (w.neighbors.empty()) continue;
    std::printf("  %-39s  %-17s  %-10s  %6s\n", "IP", "MAC", "STATE", "QUEUED");
    for (const auto& e : w.neighbors) {
      const bool incomplete = e.state == inet::NeighborState::Incomplete;
      std::printf("  %-39s  %-17s  %-10s  %6zu%s\n", e.ip.to_string().c_str(),
                  incomplete ? "(incomplete)" : e.mac.to_string().c_str(), upper(inet::to_string(e.state)).c_str(),
                  e.queued_packets,
                  e.solicitations_sent ? (" after " + std::to_string(e.solicitations_sent) + " solicitations").c_str() : "");
    }
  }
  std::fflush(stdout);
}

void print_connections(const std::vector<WorkerState>& workers, bool json) {
  for (const WorkerState& w : workers) {
    if (json) {
      Json j;
      j.begin_object().field("type", "conns").field("worker", w.worker).key("listening").begin_array();
      for (uint16_t port : w.listening) j.value(unsigned{port});
      j.end_array().key("connections").begin_array();
      for (const auto& c : w.connections) {
        j.begin_object().field("local", endpoint(c.tuple.local_ip, c.tuple.local_port))
            .field("remote", endpoint(c.tuple.remote_ip, c.tuple.remote_port)).field("state", inet::to_string(c.state))
            .field("cwnd", c.cwnd).field("ssthresh", c.ssthresh).field("mss", c.mss).field("srtt_ms", ms(c.srtt))
            .field("rttvar_ms", ms(c.rttvar)).field("rto_ms", ms(c.rto))
            .field("retransmits", c.retransmitted_segments).field("timeouts", c.timeouts)
            .field("bytes_in", c.bytes_in).field("bytes_out", c.bytes_out).end_object();
      }
      j.end_array().end_object();
      std::printf("%s\n", j.str().c_str());
      continue;
    }
    std::string ports;
    for (uint16_t port : w.listening) ports += (ports.empty() ? "" : ",") + std::to_string(port);
    std::printf("TCP connections, worker %u: %zu, listening on %s\n", w.worker, w.connections.size(),
                ports.empty() ? "-" : ports.c_str());
    if (w.connections.empty()) continue;
    // Address columns as wide as the widest endpoint: 21 fits any IPv4 one ("255.255.255.255:65535"),
    // an IPv6 one takes up to 47 ("[ffff:...:ffff]:65535").
    int local_width = 21, remote_width = 21;
    for (const auto& c : w.connections) {
      local_width = std::max(local_width, static_cast<int>(endpoint(c.tuple.local_ip, c.tuple.local_port).size()));
      remote_width = std::max(remote_width, static_cast<int>(endpoint(c.tuple.remote_ip, c.tuple.remote_port).size()));
    }
    std::printf("  %-*s  %-*s  %-12s  %8s  %9s  %9s  %7s  %12s  %12s\n", local_width, "LOCAL", remote_width, "REMOTE",
                "STATE", "CWND", "SRTT", "RTTVAR", "RETRANS", "BYTES-IN", "BYTES-OUT");
    for (const auto& c : w.connections) {
      std::printf("  %-*s  %-*s  %-12s  %8u  %7.3fms  %7.3fms  %7lu  %12lu  %12lu\n", local_width,
                  endpoint(c.tuple.local_ip, c.tuple.local_port).c_str(), remote_width,
                  endpoint(c.tuple.remote_ip, c.tuple.remote_port).c_str(), inet::to_string(c.state), c.cwnd,
                  ms(c.srtt), ms(c.rttvar), static_cast<unsigned long>(c.retransmitted_segments),
                  static_cast<unsigned long>(c.bytes_in), static_cast<unsigned long>(c.bytes_out));
    }
  }
  std::fflush(stdout);
}

void print_port(const PortState& port, bool json) {
  if (json) {
    Json j;
    j.begin_object().field("type", "port").field("isolated", port.isolated).key("rx_queue_packets").begin_array();
    for (uint64_t packets : port.rx_queue_packets) j.value(packets);
    j.end_array().key("flow_rules").strings(port.flow_rules).end_object();
    std::printf("%s\n", j.str().c_str());
  } else {
    std::string queues;
    for (size_t q = 0; q < port.rx_queue_packets.size(); ++q)
      queues += (q ? ", " : "") + std::to_string(q) + ": " + std::to_string(port.rx_queue_packets[q]);
    std::printf("port: %s, packets per receive queue {%s}, %zu flow rules\n",
                port.isolated ? "isolated" : "not isolated", queues.c_str(), port.flow_rules.size());
    for (const std::string& rule : port.flow_rules) std::printf("  flow %s\n", rule.c_str());
  }
  std::fflush(stdout);
}

}  // namespace bypass::tools

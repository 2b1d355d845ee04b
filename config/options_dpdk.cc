// Section "dpdk": EAL start-up, the port and its queues, offloads, and fault injection for tests.
#include "config/option_sections.h"

namespace bypass::config {

namespace {
constexpr int64_t kPartsPerMillion = 1'000'000;
}

void register_dpdk_options(Registry& r) {
  // Addressing of the userspace stack.
  r.add({.name = "dpdk.host_ip", .type = OptionType::IPv4, .default_value = "0.0.0.0",
         .help = "IPv4 address of the userspace stack on the port (required for ms.type=dpdk)."});
  r.add({.name = "dpdk.netmask", .type = OptionType::IPv4, .default_value = "255.255.255.0",
         .help = "Netmask of dpdk.host_ip's subnet; other destinations go through the gateway."});
  r.add({.name = "dpdk.gateway", .type = OptionType::IPv4, .default_value = "0.0.0.0",
         .help = "Default gateway; 0.0.0.0 means none (only the local subnet is reachable)."});
  // IPv6 (RFC 8200) beside IPv4 on the same port: Neighbor Discovery (RFC 4861) and ICMPv6 echo.
  r.add({.name = "dpdk.host_ipv6", .type = OptionType::String, .default_value = "",
         .help = "IPv6 unicast address of the userspace stack (e.g. fd00:10::2); empty leaves IPv6 off."});
  r.add({.name = "dpdk.ipv6_prefix_length", .type = OptionType::Int, .default_value = "64",
         .help = "On-link prefix length of dpdk.host_ipv6 (RFC 4291 §2.5.4: 64 for most links); other "
                 "destinations go through dpdk.gateway_ipv6.",
         .min = 1, .max = 128});
  r.add({.name = "dpdk.gateway_ipv6", .type = OptionType::String, .default_value = "",
         .help = "IPv6 default router: link-local (fe80::1, RFC 4861 §8) or on dpdk.host_ipv6's prefix; "
                 "empty means none (only on-link destinations are reachable)."});
  r.add({.name = "dpdk.ipv6_dad_transmits", .type = OptionType::Int, .default_value = "1",
         .help = "Duplicate Address Detection probes per IPv6 address at start, 1 s apart (RFC 4862 "
                 "DupAddrDetectTransmits, Linux's dad_transmits); an address is used once they pass "
                 "unanswered. 0 skips DAD (links where no other node can hold the address, e.g. net_ring).",
         .min = 0, .max = 10});
  r.add({.name = "dpdk.ipv6_reassembly_timeout", .type = OptionType::Duration, .default_value = "60s",
         .help = "Discard an incomplete fragmented IPv6 packet after this long (RFC 8200 §4.5: 60 s), with "
                 "Time Exceeded to its source when its first fragment came.",
         .min = 1'000'000});
  r.add({.name = "dpdk.hw_addr", .type = OptionType::String, .default_value = "",
         .help = "MAC address to use (aa:bb:cc:dd:ee:ff); empty uses the port's own."});

  // EAL.
  r.add({.name = "dpdk.port_id", .type = OptionType::Int, .default_value = "0",
         .help = "DPDK port to run the stack on.", .min = 0, .max = 1023});
  r.add({.name = "dpdk.main_lcore", .type = OptionType::Int, .default_value = "0",
         .help = "EAL main lcore (the control thread); workers get the lcores of ms.cpus.",
         .min = 0, .max = 1023});
  r.add({.name = "dpdk.memory_channels", .type = OptionType::Int, .default_value = "0",
         .help = "EAL -n: memory channels per socket; 0 lets EAL decide.", .min = 0, .max = 32});
  r.add({.name = "dpdk.huge_dir", .type = OptionType::String, .default_value = "",
         .help = "EAL --huge-dir: hugetlbfs mount to use; empty lets EAL find one."});
  r.add({.name = "dpdk.memory", .type = OptionType::Size, .default_value = "256M",
         .help = "EAL -m: memory to reserve at start-up.", .min = int64_t{16} << 20});
  r.add({.name = "dpdk.no_huge", .type = OptionType::Enum, .default_value = "auto",
         .help = "EAL --no-huge: yes forces plain memory, no requires hugepages, auto uses "
                 "hugepages when some are free.",
         .enum_values = {"auto", "yes", "no"}});
  r.add({.name = "dpdk.in_memory", .type = OptionType::Bool, .default_value = "true",
         .help = "EAL --in-memory: no shared runtime files, so several processes never collide."});
  r.add({.name = "dpdk.telemetry", .type = OptionType::Bool, .default_value = "false",
         .help = "DPDK's telemetry socket (dpdk-telemetry.py). Off (EAL --no-telemetry) by default: its "
                 "listener accepts any local client, and every DPDK process starting on the host connects "
                 "to see whether the socket is taken, so each start would make this process spawn a thread "
                 "and allocate beside its data path. Bypass's counters are on its admin socket and /metrics."});
  r.add({.name = "dpdk.file_prefix", .type = OptionType::String, .default_value = "",
         .help = "EAL --file-prefix for runtime files when dpdk.in_memory is false (memif peers need "
                 "distinct prefixes); empty uses bypass<pid>."});
  r.add({.name = "dpdk.allow", .type = OptionType::StringList, .default_value = "",
         .help = "EAL -a: PCI addresses of the devices to use (e.g. 0000:03:00.0); empty probes every "
                 "PCI device when no dpdk.vdev is given and none when one is."});
  r.add({.name = "dpdk.vdev", .type = OptionType::StringList, .default_value = "",
         .help = "EAL --vdev: virtual devices, e.g. net_tap0,iface=bp0 or net_memif0,role=server."});
  r.add({.name = "dpdk.lcores", .type = OptionType::String, .default_value = "",
         .help = "EAL --lcores map (e.g. 0@1,1@1) used as given; empty maps lcore i to the i-th CPU of "
                 "ms.cpus (or of the online CPUs), one lcore per worker."});
  r.add({.name = "dpdk.log_level", .type = OptionType::Int, .default_value = "4",
         .help = "EAL --log-level (1 emergency .. 8 debug); 4 shows errors only.", .min = 1, .max = 8});
  r.add({.name = "dpdk.eal_args", .type = OptionType::StringList, .default_value = "",
         .help = "Extra EAL arguments appended as given (e.g. --single-file-segments)."});

  // Queues and buffers.
  r.add({.name = "dpdk.rx_desc", .type = OptionType::Int, .default_value = "1024",
         .help = "RX descriptors per queue.", .min = 32, .max = 32768});
  r.add({.name = "dpdk.tx_desc", .type = OptionType::Int, .default_value = "1024",
         .help = "TX descriptors per queue.", .min = 32, .max = 32768});
  r.add({.name = "dpdk.queues", .type = OptionType::Int, .default_value = "0",
         .help = "RX/TX queue pairs per port, at most ms.workers; 0 gives one per worker (capped by "
                 "the device). With fewer queues than workers packets reach their worker through a "
                 "software ring. net_memif ports take 0 as 1: give both memif peers the same count to use more.",
         .min = 0, .max = 1024});
  r.add({.name = "dpdk.redirect_ring", .type = OptionType::Int, .default_value = "4096",
         .help = "Slots of each worker's software redirect ring (power of two).", .min = 64,
         .max = 1 << 20});
  r.add({.name = "dpdk.mbufs", .type = OptionType::Int, .default_value = "16383",
         .help = "Mbufs in each NUMA socket's mempool (2^n - 1 is the most memory-efficient).",
         .min = 1023, .max = 16'777'215});
  r.add({.name = "dpdk.mbuf_cache", .type = OptionType::Int, .default_value = "256",
         .help = "Per-lcore mempool cache size.", .min = 0, .max = 512});
  r.add({.name = "dpdk.mbuf_size", .type = OptionType::Size, .default_value = "2176",
         .help = "Mbuf data room including the 128-byte headroom (2176 holds a 1518-byte frame).",
         .min = 512, .max = 65535});
  r.add({.name = "dpdk.mtu", .type = OptionType::Int, .default_value = "1500",
         .help = "Port MTU in bytes (IP packet size). Up to the link's limit: the driver's, or for net_memif "
                 "its bsize devarg less the 14-byte Ethernet header (see dpdk.mtu_limit; memif carries up to 65,000 with "
                 "bsize=65014 and dpdk.mbuf_size=65535: one frame per mbuf, an IPv4 datagram at most 65,535 bytes).",
         .min = 68, .max = 65000});
  r.add({.name = "dpdk.mtu_limit", .type = OptionType::Int, .default_value = "0",
         .help = "The largest MTU the link really carries, when the driver reports less (0: the driver's limit; "
                 "net_memif: derived from its bsize devarg). DPDK 22.11's net_memif reports a 1518-byte frame "
                 "limit yet copies any frame up to bsize into one descriptor, so two DPDK processes can use "
                 "jumbo frames over it; frames beyond bsize would need chained descriptors, which 22.11's "
                 "copy-mode tx leaves flagged, so the MTU must keep frames within bsize.",
         .min = 0, .max = 9600});
  r.add({.name = "dpdk.flow_isolate", .type = OptionType::Bool, .default_value = "false",
         .help = "Share the port with the kernel: rte_flow isolated mode, with rules that claim only the "
                 "stack's own traffic (ARP for dpdk.host_ip, every datagram to dpdk.host_ip and "
                 "dpdk.host_ipv6, Neighbor Discovery for them), spread over the worker queues; the kernel "
                 "keeps the rest. For bifurcated drivers (mlx5) and net_tap with remote=IFACE."});
  r.add({.name = "dpdk.promiscuous", .type = OptionType::Bool, .default_value = "false",
         .help = "Put the port in promiscuous mode."});
  r.add({.name = "dpdk.link_wait", .type = OptionType::Duration, .default_value = "5s",
         .help = "How long start-up waits for the link to come up before giving up."});

  // Offloads: each is used only when the port reports the capability.
  r.add({.name = "dpdk.rx_checksum", .type = OptionType::Bool, .default_value = "true",
         .help = "Use RX IPv4/TCP checksum offload when the port supports it."});
  r.add({.name = "dpdk.tx_checksum", .type = OptionType::Bool, .default_value = "true",
         .help = "Use TX IPv4/TCP checksum offload when the port supports it."});
  r.add({.name = "dpdk.tso", .type = OptionType::Bool, .default_value = "true",
         .help = "Use TCP segmentation offload when the port supports it."});
  r.add({.name = "dpdk.gso", .type = OptionType::Bool, .default_value = "true",
         .help = "On ports without TSO (or with dpdk.tso off), still let TCP send segments of up to 64 KiB and cut "
                 "them into MTU-sized frames in software while copying them into mbufs (generic segmentation "
                 "offload); false sends one MSS per segment there."});
  r.add({.name = "dpdk.lro", .type = OptionType::Bool, .default_value = "true",
         .help = "Use large receive offload when the port supports it."});
  r.add({.name = "dpdk.multi_seg", .type = OptionType::Bool, .default_value = "true",
         .help = "Transmit chained mbufs when the port supports it (otherwise chains are linearised)."});
  r.add({.name = "dpdk.idle_sleep", .type = OptionType::Duration, .default_value = "1ms",
         .help = "A worker that found no work for this long sleeps in the kernel (at most 250 us at a time) "
                 "instead of spinning; 0 spins always (lowest latency and highest rate on dedicated CPUs; "
                 "on shared CPUs a sleeping worker may wait milliseconds to be scheduled again)."});
  r.add({.name = "dpdk.hold_when_backlogged", .type = OptionType::Bool, .default_value = "false",
         .help = "While the port's TX ring is full and frames it refused wait to be retried, TCP keeps new data in "
                 "its send buffers (nothing built or copied yet) and sends it, connection by connection in the "
                 "order they waited, once they went out; false (the default: no gain measured yet) builds the frames at "
                 "once and queues them behind the refused ones (docs/benchmarks.md, connection scaling)."});
  r.add({.name = "dpdk.trusted_link", .type = OptionType::Bool, .default_value = "false",
         .help = "The link cannot corrupt frames and its peer is a Bypass process with this setting too: "
                 "shared memory between two processes (net_memif) or a looped net_ring. TCP checksums are then "
                 "neither computed on send nor verified on receive, as Linux skips them over loopback and veth. "
                 "Refused on any other port; a peer that verifies checksums drops every segment we send."});
  r.add({.name = "dpdk.zero_copy_send", .type = OptionType::Bool, .default_value = "true",
         .help = "Transmit payload buffers of at least dpdk.zero_copy_threshold bytes by attaching them to "
                 "mbufs as external buffers instead of copying (needs tx-multi-seg; on a NIC that DMAs, "
                 "buffers outside DPDK-registered memory are still copied)."});
  r.add({.name = "dpdk.attach_on_copying_ports", .type = OptionType::Bool, .default_value = "false",
         .help = "With dpdk.zero_copy_send, attach payload buffers also on virtual devices that copy every frame "
                 "with the CPU anyway (memif, tap, af_packet, ring). Off: they get the pieces copied into the "
                 "mbuf, which costs less than an external buffer released microseconds later."});
  r.add({.name = "dpdk.zero_copy_threshold", .type = OptionType::Size, .default_value = "512",
         .help = "Smallest payload piece attached without a copy; smaller pieces are copied next to the "
                 "headers (attaching costs an mbuf and a callback, copying a few hundred bytes is cheaper).",
         .min = 1, .max = 65535});
  r.add({.name = "dpdk.rss", .type = OptionType::Bool, .default_value = "true",
         .help = "Spread flows over worker queues with RSS when the port supports it "
                 "(otherwise packets are redirected in software)."});

  // Fault injection on the packet path, for testing TCP recovery. Rates are per million packets.
  r.add({.name = "dpdk.fault_seed", .type = OptionType::Int, .default_value = "1",
         .help = "Seed of the fault injector's random generator (same seed, same faults)."});
  r.add({.name = "dpdk.fault_drop", .type = OptionType::Int, .default_value = "0",
         .help = "Drop this many packets per million.", .min = 0, .max = kPartsPerMillion});
  r.add({.name = "dpdk.fault_duplicate", .type = OptionType::Int, .default_value = "0",
         .help = "Duplicate this many packets per million.", .min = 0, .max = kPartsPerMillion});
  r.add({.name = "dpdk.fault_reorder", .type = OptionType::Int, .default_value = "0",
         .help = "Reorder this many packets per million.", .min = 0, .max = kPartsPerMillion});
  r.add({.name = "dpdk.fault_corrupt", .type = OptionType::Int, .default_value = "0",
         .help = "Flip a bit in this many packets per million.", .min = 0, .max = kPartsPerMillion});
  r.add({.name = "dpdk.fault_delay", .type = OptionType::Duration, .default_value = "0",
         .help = "Delay every packet by this long; 0 adds no delay."});
  r.add({.name = "dpdk.fault_on", .type = OptionType::Enum, .default_value = "rx",
         .help = "Where the dpdk.fault_* rates apply: rx bursts, tx bursts, or both (rates apply twice).",
         .enum_values = {"rx", "tx", "both"}});
}

}  // namespace bypass::config

// The link between the two dpdk processes of a benchmark job (bench.dpdk_link), and what the
// table and the result file say about each case's link.
//
// Two Bypass processes on one machine need a virtual link, and its driver's copy loops are part of
// what a dpdk run measures. The links, best first:
//   vhost-user       net_vhost (server) / net_virtio_user (client): checksum offload and TSO as a
//                    NIC offers them; the vhost-user server copies each frame out of and into the
//                    client's memory (2 copies per round trip). The client on hugepages, one file
//                    per segment (--single-file-segments: virtio-user shares its memory that way).
//   memif-zero-copy  net_memif with zero-copy=yes on the client: the client's mbufs are the shared
//                    buffers, so only the memif server copies (2). The client on hugepages with
//                    --single-file-segments (it exposes its memory segments to the server). Needs
//                    what vhost-user needs: `auto` takes it where vhost-user's drivers are missing.
//   memif            net_memif in copy mode: each side copies on transmit and on receive (4), as
//                    the kernel copies into and out of its socket buffers. Runs anywhere.
// The server copies with the CPU on every link, so it runs on hugepages when there are enough for
// both sides and on plain memory otherwise.
// `configured` (the default) leaves the port to the job's own bench.server.dpdk /
// bench.client.dpdk settings; `auto` is resolved by `bypass-bench run` to the best link the
// host's free hugepages allow, before it starts either process.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "pmd/eal.h"
#include "tools/bypass-bench/bench_job.h"

namespace bypass::bench {

enum class DpdkLink { Configured, Auto, VhostUser, MemifZeroCopy, Memif };

// What a case's result names: "vhost-user" with 2 copies, "kernel" (posix) with 4, or for a link
// the job configured itself its first device ("net_tap", "pci") with the copies unknown.
struct LinkDescription {
  std::string name;
  std::optional<uint64_t> copies_per_round_trip;  // payload copies the link makes per request + reply
};

struct LinkChoice {
  DpdkLink link = DpdkLink::Configured;
  std::string reason;  // why this link (printed by `run`)
  // Too few hugepages for both sides: the server (dpdk.no_huge=auto) leaves them to the client.
  bool server_without_hugepages = false;
};

DpdkLink dpdk_link_from_config(const config::Config& conf);  // bench.dpdk_link
const char* dpdk_link_name(DpdkLink link);                   // as bench.dpdk_link spells it

// The link `run` uses: a named link after checking this host can run it (a ConfigError naming
// bench.dpdk_link when it cannot), `auto` resolved to the best one `host` allows, `configured`
// as is. Only called when the job runs dpdk.
LinkChoice choose_dpdk_link(const config::Config& conf, const pmd::HostFacts& host);

// Makes `conf` run `choice`: bench.dpdk_link set to the link, and the server kept off hugepages
// when the choice says so. Returns the same as --set assignments for `run`'s two children.
std::vector<std::string> settle_dpdk_link(const LinkChoice& choice, config::Config& conf);

// side_config's part: for a named link, this side's port (its device with the job's
// bench.link_socket, hugepages and EAL arguments where the link needs them) on top of the side's
// settings. A ConfigError when the side names a device of its own (dpdk.vdev, dpdk.allow), when it
// refuses hugepages the link needs, or for `auto` (which only `run` resolves).
void apply_dpdk_link(const config::Config& conf, Side side, config::Config& side_conf);

// The link of one side's configuration (ms.type, bench.dpdk_link, dpdk.vdev).
LinkDescription describe_link(const config::Config& side_conf);

}  // namespace bypass::bench

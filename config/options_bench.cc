// Section "bench": bypass-bench job parameters. The job's sweep axes (transports, message sizes,
// queue depths) are lists; tools/bypass-bench/bench_job.cc checks their items and every
// combination before anything starts.
#include "config/option_sections.h"

namespace bypass::config {

namespace {

// bench.server.<transport> / bench.client.<transport>: per-side, per-transport overlays.
void add_side_options(Registry& r, const std::string& side, const std::string& listen_or_connect) {
  r.add({.name = "bench." + side + ".cpus", .type = OptionType::CpuList, .default_value = "",
         .help = "CPUs of the " + side + " process in `bypass-bench run` (its ms.cpus and the process "
                 "affinity); empty = unpinned."});
  for (const char* transport : {"posix", "dpdk", "rdma"}) {
    r.add({.name = "bench." + side + "." + transport, .type = OptionType::StringList, .default_value = "",
           .help = std::string("key=value settings applied on the ") + side + " side (the process that " +
                   listen_or_connect + ") when the transport is " + transport +
                   ", e.g. [dpdk.host_ip=10.98.0.1]."});
  }
}

}  // namespace

void register_bench_options(Registry& r) {
  r.add({.name = "bench.transports", .type = OptionType::StringList, .default_value = "",
         .help = "Transports `run` measures one after the other (posix, dpdk, rdma); empty = ms.type."});
  r.add({.name = "bench.mode", .type = OptionType::Enum, .default_value = "reqrep",
         .help = "reqrep: the server answers each message with one of the same size; stream: "
                 "one-way, latency is queued -> msgr2 ack.",
         .enum_values = {"reqrep", "stream"}});
  r.add({.name = "bench.duration", .type = OptionType::Duration, .default_value = "10s",
         .help = "How long the client measures each case (after the warm-up).", .min = 1'000'000});
  r.add({.name = "bench.count", .type = OptionType::Int, .default_value = "0",
         .help = "Messages measured per case instead of a duration (0 = use bench.duration).",
         .min = 0});
  r.add({.name = "bench.warmup", .type = OptionType::Duration, .default_value = "1s",
         .help = "Traffic before each case's measurement starts (not counted).", .min = 0});
  r.add({.name = "bench.think_time", .type = OptionType::Duration, .default_value = "0s",
         .help = "reqrep only: pause between a reply and the next request on that slot.", .min = 0});
  r.add({.name = "bench.message_size", .type = OptionType::StringList, .default_value = "4K",
         .help = "Payload bytes per message; a list sweeps (e.g. [64, 4K, 64K])."});
  r.add({.name = "bench.reply_size", .type = OptionType::String, .default_value = "echo",
         .help = "reqrep: what the server answers each message with: echo (its own bytes, the same "
                 "size) or a size of other bytes (0: an empty reply, as a storage write's status)."});
  r.add({.name = "bench.connections", .type = OptionType::Int, .default_value = "1",
         .help = "Connections the client opens to the server.", .min = 1, .max = 65536});
  r.add({.name = "bench.iodepth", .type = OptionType::StringList, .default_value = "1",
         .help = "Messages in flight per connection; a list sweeps (e.g. [1, 128])."});
  r.add({.name = "bench.messengers", .type = OptionType::Enum, .default_value = "shared",
         .help = "Client messengers: one shared by every connection, or one per client worker thread.",
         .enum_values = {"shared", "per-thread"}});
  r.add({.name = "bench.server_address", .type = OptionType::String, .default_value = "",
         .help = "Server IP:port or [IPv6]:port (posix, rdma). The server listens there (empty: 127.0.0.1, or dpdk.host_ip for "
                 "dpdk, on a free port); the client connects there (`run` fills it in)."});
  r.add({.name = "bench.output", .type = OptionType::String, .default_value = "",
         .help = "Write the results as JSON (schema bypass-bench/1) to this file; empty = none."});
  r.add({.name = "bench.progress", .type = OptionType::Enum, .default_value = "auto",
         .help = "Live progress each second: a rewritten line on a terminal, a log line otherwise "
                 "(auto), always one (line/log), or none (off).",
         .enum_values = {"auto", "line", "log", "off"}});
  r.add({.name = "bench.server_policy", .type = OptionType::Enum, .default_value = "stateful",
         .help = "Sessions of the server's clients. stateful: a session outlives its transport so a "
                 "client that reconnects gets unacknowledged replies replayed (a client that dies "
                 "leaves its session, and what it holds, behind); stateless: a session ends with its "
                 "transport, as a long-lived server facing clients that come and go wants.",
         .enum_values = {"stateful", "stateless"}});
  r.add({.name = "bench.dpdk_link", .type = OptionType::Enum, .default_value = "configured",
         .help = "The port pair of the two dpdk processes of `run`: vhost-user (vhost-user server / virtio-user "
                 "client: checksum offload and TSO; hugepages on both sides), memif-zero-copy (net_memif with a "
                 "zero-copy client; hugepages on the client), memif (net_memif copy mode; runs anywhere), auto (`run` "
                 "picks the first of these the host's free hugepages allow and says why), configured (the sides' own "
                 "dpdk.vdev / dpdk.allow in bench.server.dpdk and bench.client.dpdk).",
         .enum_values = {"configured", "auto", "vhost-user", "memif-zero-copy", "memif"}});
  r.add({.name = "bench.link_socket", .type = OptionType::String, .default_value = "/run/bypass-bench-link.sock",
         .help = "The socket the two sides of a bench.dpdk_link meet at (memif's abstract socket or the vhost-user "
                 "socket file); `run` gives each run a socket of its own unless this is set."});
  add_side_options(r, "server", "listens");
  add_side_options(r, "client", "connects");
}

}  // namespace bypass::config

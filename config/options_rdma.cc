// Section "rdma": the verbs transport.
#include "config/option_sections.h"

namespace bypass::config {

void register_rdma_options(Registry& r) {
  r.add({.name = "rdma.device", .type = OptionType::String, .default_value = "",
         .help = "Verbs device (e.g. mlx5_0, rxe0); empty uses the first device with an active port."});
  r.add({.name = "rdma.port", .type = OptionType::Int, .default_value = "1",
         .help = "Port number on the device (verbs ports start at 1).", .min = 1, .max = 255});
  r.add({.name = "rdma.gid_index", .type = OptionType::Int, .default_value = "auto",
         .help = "GID table index for RoCE addressing. auto: the GID of rdma.roce_version that carries the "
                 "IP address of the port's netdev (an IPv4 address first, then a global IPv6 one, then "
                 "link-local ones; the lowest index among equals), index 0 on InfiniBand; a number uses "
                 "that index.",
         .min = 0, .max = 255, .allows_auto = true});
  r.add({.name = "rdma.roce_version", .type = OptionType::Enum, .default_value = "v2",
         .help = "RoCE version the GID must match: v1 (Ethernet) or v2 (UDP/IP).",
         .enum_values = {"v1", "v2"}});
  r.add({.name = "rdma.chunk_size", .type = OptionType::Size, .default_value = "32K",
         .help = "Size of each registered send/receive buffer chunk.",
         .min = 4096, .max = int64_t{1} << 30});
  r.add({.name = "rdma.chunk_count", .type = OptionType::Int, .default_value = "1024",
         .help = "Chunks in each registered buffer pool.", .min = 16, .max = 1 << 20});
  r.add({.name = "rdma.rx_window", .type = OptionType::Int, .default_value = "32",
         .help = "Receive window per connection, in messages (receive chunks): the peer may send "
                 "this many before we hand them to the application, then waits for credits. A "
                 "worker's connections share one pool of rdma.chunk_count receive chunks; the "
                 "window bounds what one connection whose application reads slowly can hold, so "
                 "it cannot starve the others. Capped at a quarter of rdma.chunk_count.",
         .min = 2, .max = 1 << 20});
  r.add({.name = "rdma.srq", .type = OptionType::Bool, .default_value = "true",
         .help = "Share one receive queue among a worker's connections."});
  r.add({.name = "rdma.busy_poll", .type = OptionType::Duration, .default_value = "20us",
         .help = "Poll the completion queue this long before sleeping on its event channel."});
  r.add({.name = "rdma.connect_mode", .type = OptionType::Enum, .default_value = "tcp",
         .help = "How queue pairs are connected: tcp (exchange QP info over a TCP socket) or "
                 "rdma_cm (librdmacm; addresses must be on the RDMA device's netdev, RoCE cannot "
                 "route loopback).",
         .enum_values = {"tcp", "rdma_cm"}});
  r.add({.name = "rdma.hugepages", .type = OptionType::Bool, .default_value = "false",
         .help = "Back the registered chunk pools with 2 MiB hugepages (normal pages when none are "
                 "reserved)."});
  r.add({.name = "rdma.qp_depth", .type = OptionType::Int, .default_value = "64",
         .help = "Send work requests per queue pair (and posted receives per QP when rdma.srq is "
                 "false).", .min = 4, .max = 16384});
  r.add({.name = "rdma.ack_timeout", .type = OptionType::Duration, .default_value = "67ms",
         .help = "How long a queue pair waits for the peer's transport ACK before retransmitting "
                 "(rounded up to the verbs encoding, 4.096us * 2^n). With rdma.retry_count it "
                 "bounds how long a silent peer goes unnoticed; raise both on hosts that stall.",
         .min = 8'192, .max = 600'000'000'000});
  r.add({.name = "rdma.retry_count", .type = OptionType::Int, .default_value = "7",
         .help = "Transport retransmissions before a queue pair declares its peer dead (verbs "
                 "allow at most 7).", .min = 0, .max = 7});
  r.add({.name = "rdma.rendezvous_threshold", .type = OptionType::Size, .default_value = "64K",
         .help = "A payload run (one buffer segment) at least this long is not copied into send "
                 "chunks: it goes as a descriptor and the peer pulls it with RDMA READ into its "
                 "registered memory (rendezvous). 0 turns it off. The default is where it saved "
                 "instructions on both sides in the soft-RoCE benchmark (docs/rdma.md).",
         .min = 0, .max = int64_t{1} << 40});
  r.add({.name = "rdma.rendezvous_reads", .type = OptionType::Int, .default_value = "8",
         .help = "RDMA READs of rendezvous payloads a connection keeps in flight (of up to 1 MiB "
                 "each), capped by the device's max_qp_rd_atom and the peer's own setting.",
         .min = 1, .max = 16});
  r.add({.name = "rdma.rendezvous_read_size", .type = OptionType::Size, .default_value = "1M",
         .help = "Bytes one RDMA READ of a rendezvous payload brings in at most (a READ lands in "
                 "one block of rdma.registered_memory, 1 MiB at most). Fewer, larger READs cost "
                 "fewer work requests and completions; a READ's whole response must arrive within "
                 "rdma.ack_timeout, or the reader asks for all of it again.",
         .min = 4096, .max = 1 << 20});
  r.add({.name = "rdma.registered_memory", .type = OptionType::Size, .default_value = "32M",
         .help = "Payload memory registered once at start-up: what NetworkStack::allocate_payload() "
                 "and Messenger::allocate_payload() hand out (sent without a copy or a "
                 "registration) and where rendezvous READs land. When it runs out, payloads come "
                 "from ordinary memory and READs from memory registered through the cache.",
         .min = 1 << 20, .max = int64_t{1} << 40});
  r.add({.name = "rdma.registration_cache", .type = OptionType::Size, .default_value = "256M",
         .help = "Per worker: bytes of application memory kept registered for rendezvous (LRU), "
                 "so a buffer sent again is not registered again. An entry keeps its memory "
                 "alive and goes once only the cache still holds the memory. 0: memory outside "
                 "rdma.registered_memory is copied instead.",
         .min = 0, .max = int64_t{1} << 40});
  r.add({.name = "rdma.drain_timeout", .type = OptionType::Duration, .default_value = "5s",
         .help = "On close, wait this long for posted sends to complete before forcing the QP to "
                 "the error state.", .min = 1'000'000});
}

}  // namespace bypass::config

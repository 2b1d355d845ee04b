// Section "ms": the messenger's choice of transport and the socket settings every transport honours.
#include "config/option_sections.h"

namespace bypass::config {

void register_ms_options(Registry& r) {
  r.add({.name = "ms.type", .type = OptionType::Enum, .default_value = "posix",
         .help = "Transport: posix (kernel sockets), dpdk (userspace TCP/IP on DPDK), rdma (verbs).",
         .enum_values = {"posix", "dpdk", "rdma"}});
  r.add({.name = "ms.workers", .type = OptionType::Int, .default_value = "2",
         .help = "Worker threads (dpdk: lcores), each with its own event loop and connections.",
         .min = 1, .max = 64});
  r.add({.name = "ms.cpus", .type = OptionType::CpuList, .default_value = "",
         .help = "CPUs to pin workers to, in order (e.g. 2-3); empty leaves workers unpinned."});
  r.add({.name = "ms.worker_threads", .type = OptionType::Bool, .default_value = "true",
         .help = "Workers run on threads of their own (true); false: on the thread that starts the stack, "
                 "which runs their loops itself (NetworkStack::poll), as an application with a polling loop "
                 "of its own does (docs/polled-stack.md). ms.cpus does not apply then."});
  r.add({.name = "ms.connect_timeout", .type = OptionType::Duration, .default_value = "10s",
         .help = "Give up on a connection attempt after this long.",
         .min = 1'000'000});  // 1ms: below that no handshake can complete
  r.add({.name = "ms.listen_backlog", .type = OptionType::Int, .default_value = "512",
         .help = "Accept queue length of listening sockets.", .min = 1, .max = 65535});
  r.add({.name = "ms.tcp_nodelay", .type = OptionType::Bool, .default_value = "true",
         .help = "Disable Nagle's algorithm on connections (send small messages at once)."});
  r.add({.name = "ms.tcp_rcvbuf", .type = OptionType::Size, .default_value = "0",
         .help = "Socket receive buffer size; 0 keeps the kernel or stack default.",
         .max = int64_t{1} << 30});
  r.add({.name = "ms.tcp_sndbuf", .type = OptionType::Size, .default_value = "0",
         .help = "Socket send buffer size; 0 keeps the kernel or stack default.",
         .max = int64_t{1} << 30});
  r.add({.name = "ms.inject_socket_failures", .type = OptionType::Int, .default_value = "0",
         .help = "Testing: make 1 in N socket operations fail; 0 turns injection off.", .min = 0});
  // Messenger protocol (msgr2.1) settings.
  r.add({.name = "ms.max_message_size", .type = OptionType::Size, .default_value = "64M",
         .help = "Largest message (front + middle + data) accepted from a peer; bigger closes the connection.",
         .min = 4096, .max = int64_t{1} << 31});
  r.add({.name = "ms.max_frame_segment", .type = OptionType::Size, .default_value = "16M",
         .help = "Largest control payload, message front or middle segment accepted from a peer.",
         .min = 4096, .max = int64_t{1} << 30});
  r.add({.name = "ms.keepalive_interval", .type = OptionType::Duration, .default_value = "5s",
         .help = "Send KEEPALIVE2 on an idle connection this often; 0 disables keepalives.", .min = 0});
  r.add({.name = "ms.keepalive_timeout", .type = OptionType::Duration, .default_value = "30s",
         .help = "Fault a connection when nothing arrived from the peer for this long; 0 disables.", .min = 0});
  r.add({.name = "ms.mode", .type = OptionType::Enum, .default_value = "crc",
         .help = "Preferred connection mode: crc (crc32c integrity) or secure (AES-128-GCM; needs ms.auth=cephx or shared_secret).",
         .enum_values = {"crc", "secure"}});
  // Per peer type, as Ceph's ms_mon_client_mode / ms_client_mode / ms_service_mode: e.g. secure to
  // the monitors (keys travel there) and crc to the OSDs (bulk data).
  r.add({.name = "ms.mon_client_mode", .type = OptionType::String, .default_value = "",
         .help = "Modes offered to monitors, most preferred first (\"secure crc\", \"secure\", \"crc\"); "
                 "empty: ms.mode, then the other one."});
  r.add({.name = "ms.client_mode", .type = OptionType::String, .default_value = "",
         .help = "Modes offered to any other service (osd, mgr, mds, a Bypass server), most preferred first; "
                 "empty: ms.mode, then the other one."});
  r.add({.name = "ms.service_mode", .type = OptionType::String, .default_value = "",
         .help = "Modes accepted from clients (the client's preference picks among them), e.g. \"secure\" to "
                 "refuse crc; empty: every mode ms.auth can provide."});
  r.add({.name = "ms.auth", .type = OptionType::Enum, .default_value = "none",
         .help = "Authentication: none (Ceph auth none), cephx (Ceph's tickets; keys from ms.keyring) or "
                 "shared_secret (HMAC-SHA256 challenge-response on ms.secret).",
         .enum_values = {"none", "cephx", "shared_secret"}});
  r.add({.name = "ms.keyring", .type = OptionType::String, .default_value = "",
         .help = "cephx: a Ceph keyring file ([client.admin] key = ...): our own key as a client, the "
                 "clients' keys as a server."});
  r.add({.name = "ms.auth_name", .type = OptionType::String, .default_value = "client.admin",
         .help = "cephx: the entity we authenticate as (TYPE.ID, e.g. client.admin)."});
  r.add({.name = "ms.cephx_ticket_ttl", .type = OptionType::Duration, .default_value = "1h",
         .help = "cephx server: how long the tickets it hands out are valid (Ceph's auth_service_ticket_ttl); "
                 "clients renew them at half-life.",
         .min = int64_t{2} * 1000 * 1000 * 1000});  // 2 s: tickets are stamped in whole seconds
  r.add({.name = "ms.secret", .type = OptionType::String, .default_value = "",
         .help = "Shared secret for ms.auth=shared_secret (same on both peers)."});
  r.add({.name = "ms.rekey_after_frames", .type = OptionType::Int, .default_value = "4294967296",
         .help = "Secure mode: re-authenticate (new keys) after this many encrypted units per direction.",
         .min = 16, .max = int64_t{1} << 32});
  r.add({.name = "ms.dispatch_throttle_bytes", .type = OptionType::Size, .default_value = "100M",
         .help = "Bytes of received messages waiting for dispatch before connections stop reading; 0 = no limit.",
         .min = 0});
  r.add({.name = "ms.throttle_messages", .type = OptionType::Int, .default_value = "0",
         .help = "Received messages waiting for dispatch before connections stop reading; 0 = no limit.", .min = 0});
  r.add({.name = "ms.throttle_bytes", .type = OptionType::Size, .default_value = "0",
         .help = "Per-policy byte throttle for received messages (on top of ms.dispatch_throttle_bytes); 0 = no limit.",
         .min = 0});
  r.add({.name = "ms.reconnect_backoff_min", .type = OptionType::Duration, .default_value = "10ms",
         .help = "First delay before a lossless connection reconnects after a fault (doubles up to the max).",
         .min = 0});
  r.add({.name = "ms.reconnect_backoff_max", .type = OptionType::Duration, .default_value = "2s",
         .help = "Longest delay between reconnect attempts.", .min = 1'000'000});
  r.add({.name = "ms.shutdown_linger", .type = OptionType::Duration, .default_value = "1s",
         .help = "At Messenger::shutdown() and NetworkStack::stop(): keep sending what is queued and wait up to this "
                 "long for the peers to acknowledge it (msgr2 ACKs, then the transport's: TCP ACK of data and FIN, "
                 "RDMA send completions) before closing; 0 closes at once and drops whatever the peers have not "
                 "acknowledged (counted in msgs_dropped).",
         .min = 0});
  r.add({.name = "ms.connection_idle_timeout", .type = OptionType::Duration, .default_value = "900s",
         .help = "Close a lossless session that has had no connection to its peer for this long (Ceph's "
                 "ms_connection_idle_timeout: a server's session in standby, waiting for a client that never "
                 "reconnects), dropping what it holds for replay; 0 keeps it until the peer returns.",
         .min = 0});
  r.add({.name = "ms.admin_socket", .type = OptionType::String, .default_value = "",
         .help = "Unix socket path where the process answers bypass-admin (perf dump, conns, config show/diff, "
                 "version, help); empty = none. Messengers of one process naming the same path share it."});
  r.add({.name = "ms.metrics_address", .type = OptionType::String, .default_value = "",
         .help = "IP:PORT where the process serves Prometheus metrics on GET /metrics (text format 0.0.4); "
                 "empty = none."});
}

}  // namespace bypass::config

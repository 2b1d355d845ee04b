// One registration function per section, each in its own file (config/options_<section>.cc) so
// that the engineer who owns a subsystem owns its options. option_table.cc calls them all to
// build Registry::global().
#pragma once

#include "config/config.h"

namespace bypass::config {

void register_ms_options(Registry& r);     // messenger and transport choice, shared socket knobs
void register_posix_options(Registry& r);  // kernel-socket transport
void register_dpdk_options(Registry& r);   // EAL, port, queues, offloads, fault injection
void register_tcp_options(Registry& r);    // userspace TCP/IP stack
void register_rdma_options(Registry& r);   // verbs transport
void register_rsocket_options(Registry& r);  // librdmacm rsockets transport
void register_bench_options(Registry& r);  // bypass-bench jobs

}  // namespace bypass::config

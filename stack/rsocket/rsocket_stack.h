// The rsocket transport (ms.type=rsocket): the posix transport's logic (stack/posix) over
// librdmacm's rsockets, waited on with rpoll(). Usable wherever rdma_cm can reach the peer (an
// RDMA device with an IP address), with no verbs tuning: rsockets size their own queues and
// buffers (rsocket(7): /etc/rdma/rsocket/{mem,wmem,sqsize,rqsize,inline}_default).
#pragma once

#include <memory>

#include "config/config.h"
#include "stack/network_stack.h"
#include "stack/transport_registry.h"

namespace bypass {

// Throws std::runtime_error when this machine has no RDMA device.
std::shared_ptr<NetworkStack> make_rsocket_stack(const config::Config& conf);
// Registers make_rsocket_stack as ms.type=rsocket (called from the generated compiled_transports.cc).
void register_rsocket_transport(TransportRegistry& registry);

}  // namespace bypass

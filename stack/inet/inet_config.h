// Adapter from the tcp.* configuration options to the plain settings structs the protocol code
// takes. The protocol core never sees Config; the glue calls this once per stack.
#pragma once

#include "config/config.h"
#include "stack/inet/inet_options.h"

namespace bypass::inet {

// Overwrites the TCP, ARP and reassembly fields of `settings` that have a tcp.* option.
// Addresses (address, netmask, gateway) are the glue's business and are left untouched.
void apply_tcp_config(const config::Config& config, InetSettings& settings);

}  // namespace bypass::inet

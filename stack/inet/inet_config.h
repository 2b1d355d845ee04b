// Adapter from the tcp.* configuration options to the plain settings structs the protocol code
// takes. The protocol core never sees Config; the glue calls this once per stack.
#pragma once

#include <string>
#include <string_view>

#include "config/config.h"
#include "stack/inet/inet_options.h"

namespace bypass::inet {

// Overwrites the TCP, ARP and reassembly fields of `settings` that have a tcp.* option.
// Addresses (address, netmask, gateway) are the glue's business and are left untouched.
void apply_tcp_config(const config::Config& config, InetSettings& settings);

// The stack's IPv6 addressing from text, for the glue once it has options for it: `address` in
// RFC 4291 §2.3 prefix notation ("2001:db8::1/64"; without "/len" the prefix is 64, RFC 4291
// §2.5.4's interface identifier length), `gateway` an address or empty for none. Returns an empty
// string and fills settings.ipv6, or says what is wrong and leaves settings untouched. An empty
// `address` leaves IPv6 off.
std::string apply_ipv6_addressing(std::string_view address, std::string_view gateway, InetSettings& settings);

}  // namespace bypass::inet

// Section "rsocket": settings specific to the rsocket transport (ms.type=rsocket). The rest of its
// behaviour follows posix's options (ms.*) and librdmacm's own files (rsocket(7)).
#include "config/option_sections.h"

namespace bypass::config {

void register_rsocket_options(Registry& r) {
  // librdmacm's service threads (stack/rsocket/rsocket_services.h): room for this many is made
  // before the first rsocket of each kind, and one more is refused.
  r.add({.name = "rsocket.max_connections", .type = OptionType::Int, .default_value = "64",
         .help = "Connections (outgoing and accepted together) this process holds at once; one more fails "
                 "with EMFILE. librdmacm before rdma-core PR 1484 (Debian 12 ships rdma-core 44) corrupts "
                 "its connection service thread past what that thread was started with, so room is made "
                 "first (a few ms per 4); 0: no limit, for a fixed librdmacm.",
         .min = 0, .max = 1 << 20});
  r.add({.name = "rsocket.max_listeners", .type = OptionType::Int, .default_value = "8",
         .help = "Listening rsockets this process holds at once, as rsocket.max_connections is for "
                 "connections (librdmacm's listen service thread has the same flaw).",
         .min = 0, .max = 1 << 20});
}

}  // namespace bypass::config

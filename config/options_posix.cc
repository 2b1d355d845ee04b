// Section "posix": settings specific to the kernel-socket transport.
#include "config/option_sections.h"

namespace bypass::config {

void register_posix_options(Registry& r) {
  r.add({.name = "posix.reuse_port", .type = OptionType::Bool, .default_value = "true",
         .help = "Set SO_REUSEPORT on listening sockets so each worker can accept on the same port."});
  r.add({.name = "posix.busy_poll", .type = OptionType::Duration, .default_value = "0s",
         .help = "A worker (or an application thread polling the stack) keeps polling epoll without "
                 "sleeping for this long after it last found work, then sleeps in epoll_wait; 0 sleeps "
                 "at once (the default). Lower latency at low load for a CPU kept busy meanwhile."});
}

}  // namespace bypass::config

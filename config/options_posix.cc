// Section "posix": settings specific to the kernel-socket transport.
#include "config/option_sections.h"

namespace bypass::config {

void register_posix_options(Registry& r) {
  r.add({.name = "posix.reuse_port", .type = OptionType::Bool, .default_value = "true",
         .help = "Set SO_REUSEPORT on listening sockets so each worker can accept on the same port."});
}

}  // namespace bypass::config

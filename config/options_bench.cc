// Section "bench": bypass-bench job parameters.
#include "config/option_sections.h"

namespace bypass::config {

void register_bench_options(Registry& r) {
  r.add({.name = "bench.duration", .type = OptionType::Duration, .default_value = "10s",
         .help = "How long the client sends messages.", .min = 1'000'000});
  r.add({.name = "bench.message_size", .type = OptionType::Size, .default_value = "4K",
         .help = "Payload bytes per message.", .min = 1, .max = int64_t{1} << 30});
  r.add({.name = "bench.connections", .type = OptionType::Int, .default_value = "1",
         .help = "Connections the client opens to the server.", .min = 1, .max = 65536});
  r.add({.name = "bench.iodepth", .type = OptionType::Int, .default_value = "1",
         .help = "Messages in flight per connection.", .min = 1, .max = 65536});
}

}  // namespace bypass::config

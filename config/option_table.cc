// The global registry: every section's options, registered once on first use.
#include "config/config.h"
#include "config/option_sections.h"

namespace bypass::config {

namespace {

Registry build_global_registry() {
  Registry r;
  register_ms_options(r);
  register_posix_options(r);
  register_dpdk_options(r);
  register_tcp_options(r);
  register_rdma_options(r);
  register_rsocket_options(r);
  register_bench_options(r);
  return r;
}

}  // namespace

const Registry& Registry::global() {
  static const Registry registry = build_global_registry();
  return registry;
}

}  // namespace bypass::config

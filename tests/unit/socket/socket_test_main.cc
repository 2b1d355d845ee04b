// Runs the socket suite on the transport named by BYPASS_MS_TYPE (see run_transport_suite).
#include "config/config.h"
#include "stack/network_stack.h"
#include "tests/unit/socket/socket_test_harness.h"

int main(int argc, char** argv) {
  return bypass::testing::run_transport_suite(argc, argv, [] {
    const bypass::config::Config conf = bypass::testing::make_test_config({"ms.workers=2"});
    auto probe = bypass::NetworkStack::create(conf);
  });
}

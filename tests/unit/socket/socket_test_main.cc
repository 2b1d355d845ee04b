// Runs the socket suite, or exits 77 (meson: skipped) when the configured transport cannot run
// on this machine (for example BYPASS_MS_TYPE=rdma without an RDMA device).
#include <gtest/gtest.h>

#include <cstdio>

#include "config/config.h"
#include "stack/network_stack.h"
#include "tests/unit/socket/socket_test_harness.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  try {
    bypass::testing::test_listen_address();
  } catch (const std::runtime_error& e) {
    std::fprintf(stderr, "bad test configuration: %s\n", e.what());
    return 1;
  }
  try {
    const bypass::config::Config conf = bypass::testing::make_test_config({"ms.workers=2"});
    auto probe = bypass::NetworkStack::create(conf);
  } catch (const bypass::config::ConfigError& e) {
    std::fprintf(stderr, "bad test configuration: %s\n", e.what());
    return 1;
  } catch (const std::runtime_error& e) {
    std::printf("SKIP: %s\n", e.what());
    return 77;
  }
  return RUN_ALL_TESTS();
}

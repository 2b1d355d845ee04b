// main() for the unit tests that need a running EAL: --no-huge, in memory, no PCI, one lcore, so
// they run anywhere (and under ASan) without hugepages or devices.
#include <gtest/gtest.h>

#include "config/config.h"
#include "pmd/eal.h"

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  bypass::config::Config config;
  config.set("ms.workers", "1");
  config.set("dpdk.no_huge", "yes");
  config.set("dpdk.memory", "256M");
  config.set("dpdk.eal_args", "--no-pci");
  try {
    bypass::pmd::start_eal(config, "pmd_test");
  } catch (const std::exception& e) {
    std::printf("FAILED to start the EAL: %s\n", e.what());
    return 1;
  }
  const int status = RUN_ALL_TESTS();
  bypass::pmd::stop_eal();
  return status;
}

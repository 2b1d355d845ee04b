// plan_eal: EAL arguments from the configuration and the host, and the one-line refusals.
#include <gtest/gtest.h>
#include <rte_config.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "pmd/eal.h"
#include "pmd/error.h"

namespace bypass::pmd {
namespace {

HostFacts host_with_hugepages(uint64_t free_bytes) {
  HostFacts h;
  h.online_cpus = {0, 1};
  h.free_hugepage_bytes = free_bytes;
  if (free_bytes) h.hugetlbfs_mounts = {"/dev/hugepages"};
  return h;
}

bool has(const EalPlan& plan, const std::string& arg) {
  return std::find(plan.args.begin(), plan.args.end(), arg) != plan.args.end();
}

std::string error_of(const config::Config& c, const HostFacts& h) {
  try {
    plan_eal(c, h);
  } catch (const PmdError& e) {
    return e.what();
  }
  return "";
}

TEST(EalPlan, DefaultsUseHugepagesInMemoryAndOneLcorePerWorker) {
  config::Config c;
  c.set("ms.workers", "2");
  const EalPlan plan = plan_eal(c, host_with_hugepages(uint64_t{1} << 30));
  EXPECT_FALSE(plan.no_huge);
  EXPECT_TRUE(has(plan, "--in-memory"));
  EXPECT_TRUE(has(plan, "--lcores=0@0,1@1"));
  EXPECT_TRUE(has(plan, "--main-lcore=0"));
  EXPECT_TRUE(has(plan, "-m256"));
  EXPECT_FALSE(has(plan, "--no-huge"));
  EXPECT_EQ(plan.lcore_cpus, (std::vector<int>{0, 1}));
}

TEST(EalPlan, FallsBackToNoHugeAndSaysWhy) {
  config::Config c;
  const EalPlan none = plan_eal(c, host_with_hugepages(0));
  EXPECT_TRUE(none.no_huge);
  EXPECT_TRUE(has(none, "--no-huge"));
  EXPECT_NE(none.no_huge_reason.find("no hugetlbfs"), std::string::npos);
  const EalPlan too_few = plan_eal(c, host_with_hugepages(uint64_t{64} << 20));
  EXPECT_TRUE(too_few.no_huge);
  EXPECT_NE(too_few.no_huge_reason.find("64 MiB"), std::string::npos) << too_few.no_huge_reason;
}

TEST(EalPlan, NoHugeNoRefusesWithoutHugepages) {
  config::Config c;
  c.set("dpdk.no_huge", "no");
  const std::string error = error_of(c, host_with_hugepages(0));
  EXPECT_NE(error.find("dpdk.no_huge"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos);
}

TEST(EalPlan, NoHugeYesForcesPlainMemory) {
  config::Config c;
  c.set("dpdk.no_huge", "yes");
  const EalPlan plan = plan_eal(c, host_with_hugepages(uint64_t{1} << 30));
  EXPECT_TRUE(plan.no_huge);
  EXPECT_TRUE(has(plan, "--no-shconf"));  // EAL refuses --in-memory with --no-huge
  EXPECT_FALSE(has(plan, "--in-memory"));
}

TEST(EalPlan, HugeDirMustBeAHugetlbfsMount) {
  config::Config c;
  c.set("dpdk.huge_dir", "/tmp");
  EXPECT_NE(error_of(c, host_with_hugepages(uint64_t{1} << 30)).find("dpdk.huge_dir"), std::string::npos);
  c.set("dpdk.huge_dir", "/dev/hugepages/");
  EXPECT_TRUE(has(plan_eal(c, host_with_hugepages(uint64_t{1} << 30)), "--huge-dir=/dev/hugepages/"));
}

TEST(EalPlan, WorkerCpuThatDoesNotExistIsNamed) {
  config::Config c;
  c.set("ms.cpus", "0,7");
  const std::string error = error_of(c, host_with_hugepages(0));
  EXPECT_NE(error.find("ms.cpus: CPU 7 does not exist"), std::string::npos) << error;
  EXPECT_NE(error.find("online CPUs: 0-1"), std::string::npos) << error;
}

TEST(EalPlan, MoreWorkersThanCpusShareCpusRoundRobin) {
  config::Config c;
  c.set("ms.workers", "3");
  c.set("ms.cpus", "1");
  EXPECT_TRUE(has(plan_eal(c, host_with_hugepages(0)), "--lcores=0@1,1@1,2@1"));
}

TEST(EalPlan, MainLcoreMustBeAWorker) {
  config::Config c;
  c.set("ms.workers", "2");
  c.set("dpdk.main_lcore", "2");
  EXPECT_NE(error_of(c, host_with_hugepages(0)).find("dpdk.main_lcore"), std::string::npos);
}

TEST(EalPlan, ExplicitLcoreMapIsPassedThrough) {
  config::Config c;
  c.set("dpdk.lcores", "0@1,1@1");
  EXPECT_TRUE(has(plan_eal(c, host_with_hugepages(0)), "--lcores=0@1,1@1"));
}

TEST(EalPlan, FilePrefixWhenNotInMemory) {
  config::Config c;
  c.set("dpdk.in_memory", "false");
  c.set("dpdk.file_prefix", "bp_a");
  const EalPlan plan = plan_eal(c, host_with_hugepages(0));
  EXPECT_TRUE(has(plan, "--file-prefix=bp_a"));
  EXPECT_FALSE(has(plan, "--in-memory"));
}

TEST(EalPlan, VirtualDevicesAndAllowList) {
  config::Config c;
  c.set("dpdk.vdev", R"(["net_tap0,iface=bp0", "net_memif0,role=server,socket=/run/x.sock", "net_ring0"])");
  EalPlan plan = plan_eal(c, host_with_hugepages(0));
  EXPECT_TRUE(has(plan, "--vdev=net_tap0,iface=bp0"));
  EXPECT_TRUE(has(plan, "--vdev=net_memif0,role=server,socket=/run/x.sock"));
  EXPECT_TRUE(has(plan, "--vdev=net_ring0"));
  EXPECT_TRUE(has(plan, "--no-pci"));  // only virtual devices asked for
  c.set("dpdk.allow", "0000:03:00.0");
  plan = plan_eal(c, host_with_hugepages(0));
  EXPECT_TRUE(has(plan, "-a0000:03:00.0"));
  EXPECT_FALSE(has(plan, "--no-pci"));
}

TEST(EalPlan, BadDevicesAreNamed) {
  config::Config c;
  c.set("dpdk.vdev", "net_bogus0");
  std::string error = error_of(c, host_with_hugepages(0));
  EXPECT_NE(error.find("dpdk.vdev: unknown virtual device 'net_bogus0'"), std::string::npos) << error;
  c.set("dpdk.vdev", "");
  c.set("dpdk.allow", "not-a-pci-address");
  error = error_of(c, host_with_hugepages(0));
  EXPECT_NE(error.find("dpdk.allow"), std::string::npos) << error;
}

TEST(EalPlan, MemifClientWithoutServerSocketFile) {
  config::Config c;
  const std::string path = "/tmp/bypass-no-such-memif-" + std::to_string(::getpid()) + ".sock";
  c.set("dpdk.vdev", "[\"net_memif0,role=client,socket-abstract=no,socket=" + path + "\"]");
  const std::string error = error_of(c, host_with_hugepages(0));
  EXPECT_NE(error.find("memif socket '" + path + "'"), std::string::npos) << error;
  EXPECT_NE(error.find("role=server"), std::string::npos) << error;
}

TEST(EalPlan, HostProbeFindsOnlineCpus) {
  const HostFacts facts = HostFacts::probe();
  EXPECT_FALSE(facts.online_cpus.empty());
}

// Debian's DPDK loads its drivers from RTE_EAL_PMD_PATH, one package each (bypass-bench's link
// choice asks for net_vhost and net_virtio); a DPDK with its drivers linked in has them all.
TEST(EalPlan, HostProbeListsTheDriversEalCanLoad) {
  const HostFacts facts = HostFacts::probe();
  ASSERT_TRUE(facts.loadable_drivers.has_value()) << "no readable " RTE_EAL_PMD_PATH;
  EXPECT_TRUE(facts.has_driver("net_memif"));
  EXPECT_TRUE(facts.has_driver("net_vhost"));
  EXPECT_TRUE(facts.has_driver("net_virtio"));
  EXPECT_FALSE(facts.has_driver("net_memif.so"));
  EXPECT_FALSE(facts.has_driver("net_no_such_driver"));
  EXPECT_TRUE(HostFacts{}.has_driver("net_no_such_driver"));  // unknown: linked in
}

}  // namespace
}  // namespace bypass::pmd

// NUMA placement (pmd/numa.h) on fake two-node hosts (tests/data/hosts) and on this host: the
// topology read from sysfs, the NIC's node, the workers' CPUs with the warning that names the
// cores off the NIC's node, and the EAL's lcores and memory on that node.
#include <gtest/gtest.h>

#include <algorithm>

#include "pmd/eal.h"
#include "pmd/numa.h"
#include "tests/support/test_hosts.h"

namespace bypass::pmd {
namespace {


NumaTopology two_nodes() {
  NumaTopology t;
  t.nodes.push_back({0, {0, 1, 2, 3}, {{2u << 20, 512, 512}}});
  t.nodes.push_back({1, {4, 5, 6, 7}, {{2u << 20, 64, 64}}});
  return t;
}

bool has(const EalPlan& plan, const std::string& arg) {
  return std::find(plan.args.begin(), plan.args.end(), arg) != plan.args.end();
}

TEST(NumaTopology, ReadsNodesCpusAndHugepagesFromSysfs) {
  const NumaTopology t = NumaTopology::read(HostFiles(fake_host_root("two-node")));
  ASSERT_EQ(t.nodes.size(), 2u);
  EXPECT_EQ(t.nodes[1].id, 1);
  EXPECT_EQ(t.nodes[1].cpus, (std::vector<int>{8, 9, 10, 11, 12, 13, 14, 15}));
  EXPECT_EQ(t.nodes[0].free_hugepage_bytes(), uint64_t{512} << 21);
  EXPECT_EQ(t.nodes[1].free_hugepage_bytes(), uint64_t{64} << 21);
  EXPECT_EQ(t.node_of_cpu(9), 1);
  EXPECT_EQ(t.node_of_cpu(99), -1);
  EXPECT_TRUE(t.multi_node());
  EXPECT_EQ(pci_numa_node(HostFiles(fake_host_root("two-node")), "81:00.0"), 1);  // short form, as EAL takes it
  EXPECT_EQ(pci_numa_node(HostFiles(fake_host_root("two-node")), "0000:99:00.0"), -1);
  EXPECT_TRUE(NumaTopology::read(HostFiles(fake_host_root("nonexistent"))).nodes.empty());
}

TEST(NumaTopology, ThisHostAgreesWithItsOnlineCpus) {
  const HostFacts facts = HostFacts::probe();
  for (int cpu : facts.online_cpus) EXPECT_GE(facts.numa.node_of_cpu(cpu), 0) << "CPU " << cpu;
}

TEST(WorkerPlacement, UnpinnedWorkersStayOnTheNicsNode) {
  const WorkerPlacement p = place_workers(two_nodes(), 1, {}, "port 0");
  EXPECT_EQ(p.affinity, (std::vector<int>{4, 5, 6, 7}));
  EXPECT_TRUE(p.warning.empty());
}

TEST(WorkerPlacement, PinnedCoresOffTheNicsNodeAreNamed) {
  const WorkerPlacement p = place_workers(two_nodes(), 1, {2, 3, 4}, "port 0 (0000:81:00.0)");
  EXPECT_TRUE(p.affinity.empty());  // ms.cpus is obeyed
  EXPECT_EQ(p.warning,
            "ms.cpus: CPUs 2-3 are on NUMA node 0, but port 0 (0000:81:00.0) is on node 1: every packet crosses the "
            "interconnect; use CPUs of node 1 (4-7)");
  EXPECT_TRUE(place_workers(two_nodes(), 1, {5, 6}, "port 0").warning.empty());
}

TEST(WorkerPlacement, OneNodeOrAnUnknownNodeChangesNothing) {
  NumaTopology one;
  one.nodes.push_back({0, {0, 1}, {}});
  for (const auto& p : {place_workers(one, 0, {}, "port 0"), place_workers(two_nodes(), -1, {0}, "port 0")}) {
    EXPECT_TRUE(p.affinity.empty());
    EXPECT_TRUE(p.warning.empty());
  }
}

TEST(EalNuma, LcoresAndMemoryGoToTheNicsNode) {
  config::Config c;
  c.set("ms.workers", "2");
  c.set("dpdk.memory", "64M");
  c.set("dpdk.allow", "0000:81:00.0");
  const HostFacts host = HostFacts::probe({"0000:81:00.0"}, HostFiles(fake_host_root("two-node")));
  const EalPlan plan = plan_eal(c, host);
  EXPECT_EQ(plan.port_node, 1);
  EXPECT_EQ(plan.lcore_cpus, (std::vector<int>{8, 9}));
  EXPECT_TRUE(has(plan, "--socket-mem=0,64")) << join_args(plan.args);
  EXPECT_FALSE(has(plan, "-m64"));
  EXPECT_TRUE(plan.numa_warning.empty());
}

TEST(EalNuma, TooFewHugepagesOnTheNicsNodeFallBackToAnyNodeAndSayWhy) {
  config::Config c;
  c.set("dpdk.memory", "256M");
  c.set("dpdk.allow", "0000:81:00.0");
  const EalPlan plan = plan_eal(c, HostFacts::probe({"0000:81:00.0"}, HostFiles(fake_host_root("two-node"))));
  EXPECT_TRUE(has(plan, "-m256"));
  EXPECT_EQ(plan.numa_warning,
            "dpdk.memory: only 128 MiB of hugepages free on NUMA node 1 (the NIC's) for 256 MiB: memory comes from "
            "other nodes too (dpdk-hugepages.py --node 1 --reserve 256M)");
}

TEST(EalNuma, ExplicitCpusAndNicsOnSeveralNodesAreLeftAlone) {
  config::Config c;
  c.set("ms.workers", "2");
  c.set("ms.cpus", "0-1");
  c.set("dpdk.memory", "64M");
  c.set("dpdk.allow", "0000:81:00.0,0000:03:00.0");  // nodes 1 and 0
  const EalPlan plan = plan_eal(c, HostFacts::probe({"0000:81:00.0", "0000:03:00.0"}, HostFiles(fake_host_root("two-node"))));
  EXPECT_EQ(plan.port_node, -1);
  EXPECT_EQ(plan.lcore_cpus, (std::vector<int>{0, 1}));
  EXPECT_TRUE(has(plan, "-m64"));
}

}  // namespace
}  // namespace bypass::pmd

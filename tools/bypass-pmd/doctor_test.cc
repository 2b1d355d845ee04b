// bypass-pmd doctor's checks on fake hosts (tests/data/hosts: two NUMA nodes with vfio, an mlx5
// RoCE NIC, no hugepages, no sysfs at all) and on this host.
#include <gtest/gtest.h>

#include <algorithm>

#include "pmd/eal.h"
#include "tests/support/test_hosts.h"
#include "tools/bypass-pmd/doctor.h"

namespace bypass::tools::doctor {
namespace {

config::Config dpdk_config(const std::vector<std::pair<std::string, std::string>>& settings) {
  config::Config c;
  c.set("ms.type", "dpdk");
  for (const auto& [key, value] : settings) c.set(key, value);
  return c;
}

const Check& find(const Report& report, const std::string& name) {
  const auto it = std::find_if(report.checks.begin(), report.checks.end(), [&](const Check& c) { return c.name == name; });
  if (it == report.checks.end()) throw std::runtime_error("no check " + name + " in:\n" + format_table(report));
  return *it;
}

Report on(const std::string& host, const config::Config& config) { return run(config, HostFiles(fake_host_root(host))); }

TEST(DoctorTwoNodes, NamesEveryMisplacementWithItsFix) {
  const Report r = on("two-node", dpdk_config({{"dpdk.allow", "0000:81:00.0"}, {"ms.workers", "2"},
                                               {"ms.cpus", "2-3"}, {"dpdk.memory", "256M"}}));
  SCOPED_TRACE(format_table(r));
  EXPECT_EQ(find(r, "hugepages").status, Status::Warn);
  EXPECT_NE(find(r, "hugepages").found.find("node 1: 64 x 2 MiB (64 free) (the NIC's)"), std::string::npos);
  EXPECT_EQ(find(r, "hugepages").fix, "dpdk-hugepages.py --node 1 --reserve 256M");
  EXPECT_EQ(find(r, "hugetlbfs").status, Status::Ok);
  EXPECT_EQ(find(r, "iommu").found, "IOMMU on (1 group), vfio-pci loaded");
  EXPECT_EQ(find(r, "device 0000:81:00.0").found, "vfio-pci (IOMMU group 42)");
  const Check& numa = find(r, "numa");
  EXPECT_EQ(numa.status, Status::Warn);
  EXPECT_NE(numa.found.find("ms.cpus: CPUs 2-3 are on NUMA node 0, but the NIC is on node 1"), std::string::npos);
  EXPECT_EQ(numa.fix, "--set ms.cpus=10-11");  // isolated CPUs of node 1 first
  EXPECT_EQ(find(r, "cores").status, Status::Warn);
  EXPECT_EQ(find(r, "cores").fix,
            "sed -i 's/^GRUB_CMDLINE_LINUX=\"/&isolcpus=2-3 nohz_full=2-3 rcu_nocbs=2-3 /' /etc/default/grub && "
            "update-grub && reboot");
  EXPECT_EQ(find(r, "irqbalance").status, Status::Warn);
  EXPECT_EQ(find(r, "irqbalance").fix,
            "echo 'IRQBALANCE_BANNED_CPULIST=2-3' >> /etc/default/irqbalance && systemctl restart irqbalance");
  EXPECT_EQ(find(r, "eal").status, Status::Warn);
  EXPECT_EQ(find(r, "queues").status, Status::Ok);
  EXPECT_TRUE(r.can_run());
}

TEST(DoctorTwoNodes, APlacementOnTheNicsNodeIsAllOk) {
  const Report r = on("two-node", dpdk_config({{"dpdk.allow", "81:00.0"}, {"ms.workers", "2"}, {"ms.cpus", "10-11"},
                                               {"dpdk.memory", "64M"}}));
  SCOPED_TRACE(format_table(r));
  for (const Check& c : r.checks) EXPECT_EQ(c.status, Status::Ok) << c.name << ": " << c.found;
  EXPECT_NE(find(r, "eal").found.find("--socket-mem=0,64"), std::string::npos);
  EXPECT_EQ(find(r, "cores").found, "ms.cpus 10-11 isolated (isolcpus), nohz_full");
}

TEST(DoctorTwoNodes, NicsTheEalCannotTakeFail) {
  const Report r = on("two-node", dpdk_config({{"dpdk.allow", "0000:81:00.1,0000:03:00.0,0000:99:00.0"}}));
  SCOPED_TRACE(format_table(r));
  EXPECT_FALSE(r.can_run());
  EXPECT_EQ(find(r, "device 0000:81:00.1").found, "bound to the kernel's ice (netdev ens2f1): DPDK cannot drive it");
  EXPECT_EQ(find(r, "device 0000:81:00.1").fix, "ip link set ens2f1 down && dpdk-devbind.py -b vfio-pci 0000:81:00.1");
  EXPECT_EQ(find(r, "device 0000:03:00.0").fix, "modprobe vfio-pci && dpdk-devbind.py -b vfio-pci 0000:03:00.0");
  EXPECT_EQ(find(r, "device 0000:99:00.0").found, "no PCI device 0000:99:00.0 (dpdk.allow)");
  EXPECT_EQ(find(r, "numa").status, Status::Warn);  // NICs on nodes 1, 0 and none: workers cannot follow
}

TEST(DoctorTwoNodes, WithoutAllowOrVdevTheNicsBoundToDpdkCount) {
  const Report r = on("two-node", dpdk_config({{"ms.cpus", "8-9"}}));
  SCOPED_TRACE(format_table(r));
  EXPECT_EQ(find(r, "device 0000:81:00.0").status, Status::Ok);  // ice- and driverless ones are the kernel's
  EXPECT_EQ(std::count_if(r.checks.begin(), r.checks.end(), [](const Check& c) { return c.name.rfind("device", 0) == 0; }), 1);
}

TEST(DoctorTwoNodes, HugeDirMustBeAHugetlbfsMount) {
  EXPECT_EQ(find(on("two-node", dpdk_config({{"dpdk.huge_dir", "/dev/hugepages/"}})), "hugetlbfs").status, Status::Ok);
  const Report r = on("two-node", dpdk_config({{"dpdk.huge_dir", "/mnt/huge"}}));
  EXPECT_EQ(find(r, "hugetlbfs").found, "dpdk.huge_dir /mnt/huge is not a hugetlbfs mount (mounted: /dev/hugepages)");
  EXPECT_EQ(find(r, "hugetlbfs").fix, "mkdir -p /mnt/huge && mount -t hugetlbfs nodev /mnt/huge");
  EXPECT_EQ(find(r, "eal").status, Status::Fail);  // plan_eal refuses it too
}

TEST(DoctorMlx5, BifurcatedPortNeedsNoVfio) {
  const Report r = on("mlx5-roce", dpdk_config({{"dpdk.allow", "0000:03:00.0"}, {"ms.cpus", "3"}, {"ms.workers", "1"},
                                                {"dpdk.memory", "128M"}}));
  SCOPED_TRACE(format_table(r));
  EXPECT_EQ(find(r, "iommu").found, "not needed (bifurcated mlx5 ports: the kernel driver stays)");
  EXPECT_NE(find(r, "device 0000:03:00.0").status, Status::Fail);
  EXPECT_NE(find(r, "device 0000:03:00.0").found.find("mlx5_core, bifurcated (mlx5_0)"), std::string::npos);
  EXPECT_EQ(find(r, "numa").found, "one NUMA node");
  // Where dpdk.flow_isolate exists (pmd/ flow isolation), a port shared with the kernel without it
  // is a warning: the kernel would lose its own traffic on it.
  config::Registry with_isolation = config::Registry::global();
  if (!with_isolation.find("dpdk.flow_isolate"))
    with_isolation.add({.name = "dpdk.flow_isolate", .type = config::OptionType::Bool, .default_value = "false",
                        .help = "as pmd/ registers it"});
  config::Config shared(with_isolation);
  shared.set("dpdk.allow", "0000:03:00.0");
  const Check unisolated = find(on("mlx5-roce", shared), "device 0000:03:00.0");
  EXPECT_EQ(unisolated.status, Status::Warn);
  EXPECT_EQ(unisolated.fix, "--set dpdk.flow_isolate=true");
  shared.set("dpdk.flow_isolate", "true");
  EXPECT_EQ(find(on("mlx5-roce", shared), "device 0000:03:00.0").found,
            "mlx5_core, bifurcated (mlx5_0): the kernel keeps netdev ens1f0np0 and the traffic dpdk.flow_isolate leaves it");
}

TEST(DoctorRdma, MemlockDeviceAndAutoGid) {
  config::Config c;
  c.set("ms.type", "rdma");
  c.set("ms.cpus", "2-3");
  const Report r = on("mlx5-roce", c);
  SCOPED_TRACE(format_table(r));
  EXPECT_EQ(find(r, "memlock").status, Status::Fail);  // 64 KiB, no CAP_IPC_LOCK
  EXPECT_EQ(find(r, "memlock").found,
            "64 KiB may be locked, rdma needs 128 MiB (ms.workers x 2 pools x rdma.chunk_count x rdma.chunk_size)");
  EXPECT_EQ(find(r, "memlock").fix, "ulimit -l unlimited (a systemd unit: LimitMEMLOCK=infinity)");
  EXPECT_EQ(find(r, "rdma device").found, "mlx5_0 port 1 active, Ethernet (RoCE), netdev ens1f0np0");
  EXPECT_EQ(find(r, "rdma gid").found, "rdma.gid_index auto: 3: 192.168.10.5 RoCE v2 on ens1f0np0");
  EXPECT_FALSE(r.can_run());
  EXPECT_THROW(find(r, "hugepages"), std::runtime_error);  // the DPDK checks are not the transport's
}

TEST(DoctorRdma, GidIndexesThatCannotWork) {
  config::Config c;
  c.set("ms.type", "rdma");
  c.set("rdma.gid_index", "2");
  EXPECT_EQ(find(on("mlx5-roce", c), "rdma gid").found,
            "rdma.gid_index 2: 192.168.10.5 IB/RoCE v1 on ens1f0np0, not RoCE v2 (rdma.roce_version)");
  c.set("rdma.gid_index", "7");
  EXPECT_EQ(find(on("mlx5-roce", c), "rdma gid").fix, "--set rdma.gid_index=auto");
  c.set("rdma.gid_index", "auto");
  c.set("rdma.device", "rxe0");
  const Check gid = find(on("mlx5-roce", c), "rdma gid");
  EXPECT_EQ(gid.status, Status::Fail);
  EXPECT_EQ(gid.fix, "ip addr add ADDRESS/PREFIX dev rxenet0");
  c.set("rdma.device", "mlx5_9");
  const Report missing = on("mlx5-roce", c);
  EXPECT_EQ(find(missing, "rdma device").found, "rdma.device mlx5_9 does not exist (have: mlx5_0, rxe0)");
  EXPECT_THROW(find(missing, "rdma gid"), std::runtime_error);
}

TEST(DoctorNoHugepages, VirtualDevicesFallBackButANicCannot) {
  const Report tap = on("no-hugepages", dpdk_config({{"dpdk.vdev", "[\"net_tap0,iface=bpdoc0\"]"}, {"ms.cpus", "1"}}));
  SCOPED_TRACE(format_table(tap));
  EXPECT_EQ(find(tap, "hugepages").status, Status::Warn);
  EXPECT_EQ(find(tap, "hugepages").fix, "dpdk-hugepages.py --node 0 --reserve 256M");
  EXPECT_EQ(find(tap, "hugetlbfs").fix, "mount -t hugetlbfs nodev /dev/hugepages");
  EXPECT_EQ(find(tap, "devices").found, "virtual devices only (net_tap0): no PCI binding needed");
  EXPECT_TRUE(tap.can_run());
  const Report strict = on("no-hugepages", dpdk_config({{"dpdk.vdev", "[\"net_tap0,iface=bpdoc0\"]"}, {"dpdk.no_huge", "no"}}));
  EXPECT_EQ(find(strict, "hugepages").status, Status::Fail);
  EXPECT_EQ(find(strict, "eal").status, Status::Fail);
  EXPECT_FALSE(strict.can_run());
}

TEST(DoctorBadInput, UnreadableSysfsIsOneLine) {
  const Report r = on("nonexistent", dpdk_config({}));
  ASSERT_EQ(r.checks.size(), 1u) << format_table(r);
  EXPECT_EQ(r.checks[0].name, "sysfs");
  EXPECT_EQ(r.checks[0].status, Status::Fail);
  EXPECT_NE(r.checks[0].found.find("nonexistent/sys/devices/system/cpu/online: No such file or directory"),
            std::string::npos);
  EXPECT_FALSE(r.can_run());
}

TEST(DoctorThisHost, HugepageVerdictAgreesWithTheEalPlan) {
  const config::Config c = dpdk_config({{"dpdk.vdev", "[\"net_tap0,iface=bpdoc0\"]"}, {"dpdk.memory", "16M"}});
  const Report r = run(c, HostFiles("/"));
  SCOPED_TRACE(format_table(r));
  EXPECT_EQ(find(r, "sysfs").status, Status::Ok);
  const pmd::EalPlan plan = pmd::plan_eal(c, pmd::HostFacts::probe());
  EXPECT_EQ(find(r, "hugepages").status == Status::Ok && find(r, "hugetlbfs").status == Status::Ok, !plan.no_huge);
  EXPECT_TRUE(r.can_run());  // virtual devices run with or without hugepages
}

TEST(DoctorOutput, TableAndJson) {
  Report r;
  r.transport = "dpdk";
  r.ms_type = "posix";
  r.root = "/";
  r.checks = {{"hugepages", Status::Ok, "enough", ""}, {"device 0000:81:00.1", Status::Fail, "kernel's", "bind \"it\""}};
  EXPECT_EQ(format_table(r),
            "bypass-pmd doctor: the dpdk transport's checks (ms.type=posix), host root /\n"
            "CHECK                STATUS  FOUND, and the command that fixes it\n"
            "hugepages            OK      enough\n"
            "device 0000:81:00.1  FAIL    kernel's  fix: bind \"it\"\n"
            "cannot run: 1 failed (0 warnings)\n");
  EXPECT_EQ(format_json(r),
            "{\"transport\":\"dpdk\",\"ms_type\":\"posix\",\"root\":\"/\",\"can_run\":false,\"checks\":[{\"check\":\"hugepages\",\"status\":"
            "\"OK\",\"found\":\"enough\",\"fix\":\"\"},{\"check\":\"device 0000:81:00.1\",\"status\":\"FAIL\","
            "\"found\":\"kernel's\",\"fix\":\"bind \\\"it\\\"\"}]}");
}

}  // namespace
}  // namespace bypass::tools::doctor

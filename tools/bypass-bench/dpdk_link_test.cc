// bench.dpdk_link: which link `run` picks for the host's free hugepages, what each link sets on a
// side, the refusals (one ConfigError naming bench.dpdk_link), and how a case names its link.
#include "tools/bypass-bench/dpdk_link.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace bypass::bench {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

// The default job's shape: both sides 256 MiB, hugepages when free (dpdk.no_huge=auto).
const char* kJob = R"(
dpdk:
  memory: 256M
  no_huge: auto
bench:
  transports: [posix, dpdk]
  dpdk_link: auto
  link_socket: /run/x.sock
  server:
    dpdk: [dpdk.host_ip=10.96.0.1]
  client:
    dpdk: [dpdk.host_ip=10.96.0.2]
)";

config::Config job(const std::vector<std::string>& sets = {}) {
  config::Config conf;
  conf.load_yaml_text(kJob, "job.yaml");
  for (const std::string& s : sets) conf.set_assignment(s);
  return conf;
}

pmd::HostFacts host_with_free_hugepages(uint64_t mebibytes, bool mounted = true) {
  pmd::HostFacts host;
  host.online_cpus = {0, 1};
  host.free_hugepage_bytes = mebibytes * kMiB;
  if (mounted) host.hugetlbfs_mounts = {"/dev/hugepages"};
  return host;
}

std::string choice_error(const config::Config& conf, const pmd::HostFacts& host) {
  try {
    choose_dpdk_link(conf, host);
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

std::string side_error(const config::Config& conf, Side side) {
  try {
    side_config(conf, side, "dpdk");
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(DpdkLink, AutoTakesTheBestLinkTheFreeHugepagesAllow) {
  // Both sides' 256 MiB free: the vhost-user pair, the server on hugepages too.
  LinkChoice choice = choose_dpdk_link(job(), host_with_free_hugepages(1024));
  EXPECT_EQ(choice.link, DpdkLink::VhostUser);
  EXPECT_FALSE(choice.server_without_hugepages);
  EXPECT_EQ(choice.reason, "auto: vhost-user server / virtio-user client: checksum offload and TSO, the server copies "
                           "each frame");
  EXPECT_FALSE(choose_dpdk_link(job(), host_with_free_hugepages(512)).server_without_hugepages);

  // 300 MiB: enough for the client only. The server (started first, dpdk.no_huge=auto) would take
  // 256 of them, so it is kept off hugepages: it copies with the CPU either way.
  choice = choose_dpdk_link(job(), host_with_free_hugepages(300));
  EXPECT_EQ(choice.link, DpdkLink::VhostUser);
  EXPECT_TRUE(choice.server_without_hugepages);
  EXPECT_NE(choice.reason.find("; the server runs without hugepages: the 300 MiB free are the client's"),
            std::string::npos)
      << choice.reason;

  // Too few for the client: memif copy mode, saying why not the others.
  choice = choose_dpdk_link(job(), host_with_free_hugepages(100));
  EXPECT_EQ(choice.link, DpdkLink::Memif);
  EXPECT_EQ(choice.reason,
            "auto: net_memif in copy mode: each side copies on transmit and receive; not vhost-user: the client needs "
            "256 MiB of hugepages (dpdk.memory), 100 MiB are free; not memif-zero-copy: the client needs 256 MiB of "
            "hugepages (dpdk.memory), 100 MiB are free");

  // Without vhost-user's drivers, a zero-copy memif client is next.
  pmd::HostFacts memif_only = host_with_free_hugepages(1024);
  memif_only.loadable_drivers = std::vector<std::string>{"net_memif", "mempool_ring"};
  choice = choose_dpdk_link(job(), memif_only);
  EXPECT_EQ(choice.link, DpdkLink::MemifZeroCopy);
  EXPECT_EQ(choice.reason, "auto: net_memif, zero-copy client: only the memif server copies; not vhost-user: DPDK's "
                           "net_vhost driver is not installed");
  memif_only.loadable_drivers = std::vector<std::string>{"mempool_ring"};
  EXPECT_NE(choice_error(job(), memif_only).find("bench.dpdk_link: auto finds no link this host can run: not "
                                                 "vhost-user: DPDK's net_vhost driver is not installed; not "
                                                 "memif-zero-copy: DPDK's net_memif driver is not installed"),
            std::string::npos);
}

TEST(DpdkLink, WithoutHugepagesAutoFallsBackToMemifCopyMode) {
  EXPECT_EQ(choose_dpdk_link(job(), host_with_free_hugepages(0)).link, DpdkLink::Memif);
  const LinkChoice unmounted = choose_dpdk_link(job(), host_with_free_hugepages(1024, false));
  EXPECT_EQ(unmounted.link, DpdkLink::Memif);
  EXPECT_NE(unmounted.reason.find("not vhost-user: no hugetlbfs is mounted"), std::string::npos) << unmounted.reason;
  // dpdk.no_huge=yes hides the hugepages a host has.
  const LinkChoice refused = choose_dpdk_link(job({"dpdk.no_huge=yes"}), host_with_free_hugepages(1024));
  EXPECT_EQ(refused.link, DpdkLink::Memif);
  EXPECT_NE(refused.reason.find("not vhost-user: it needs hugepages on the client, whose dpdk.no_huge is yes (--set)"),
            std::string::npos)
      << refused.reason;
}

TEST(DpdkLink, AForcedLinkRunsAsNamedOrFailsSayingWhy) {
  const LinkChoice forced = choose_dpdk_link(job({"bench.dpdk_link=memif"}), host_with_free_hugepages(1024));
  EXPECT_EQ(forced.link, DpdkLink::Memif);
  EXPECT_EQ(forced.reason, "bench.dpdk_link=memif (--set); net_memif in copy mode: each side copies on transmit and "
                           "receive");
  EXPECT_EQ(choice_error(job({"bench.dpdk_link=vhost-user"}), host_with_free_hugepages(100)),
            "--set: bench.dpdk_link: vhost-user cannot run here: the client needs 256 MiB of hugepages (dpdk.memory), "
            "100 MiB are free (bench.dpdk_link=auto picks the best link this host allows)");
  EXPECT_EQ(choice_error(job({"bench.dpdk_link=memif-zero-copy", "dpdk.no_huge=yes"}), host_with_free_hugepages(1024)),
            "--set: bench.dpdk_link: memif-zero-copy cannot run here: it needs hugepages on the client, whose "
            "dpdk.no_huge is yes (--set) (bench.dpdk_link=auto picks the best link this host allows)");
  // A server that insists on hugepages leaves too few for the client.
  EXPECT_EQ(choice_error(job({"bench.dpdk_link=vhost-user", "bench.server.dpdk=[dpdk.host_ip=10.96.0.1, dpdk.no_huge=no]"}),
                         host_with_free_hugepages(300)),
            "--set: bench.dpdk_link: vhost-user cannot run here: the server (dpdk.no_huge no, --set: bench.server.dpdk) "
            "and the client need 256 MiB + 256 MiB of hugepages, 300 MiB are free (bench.dpdk_link=auto picks the best "
            "link this host allows)");
  EXPECT_EQ(choose_dpdk_link(job({"bench.dpdk_link=configured"}), host_with_free_hugepages(0)).link,
            DpdkLink::Configured);
}

TEST(DpdkLink, TheChoiceReachesBothChildrenAsSettings) {
  config::Config conf = job();
  const LinkChoice choice = choose_dpdk_link(conf, host_with_free_hugepages(300));
  const std::vector<std::string> sets = settle_dpdk_link(choice, conf);
  ASSERT_EQ(sets.size(), 2u);
  EXPECT_EQ(sets[0], "bench.dpdk_link=vhost-user");
  EXPECT_EQ(sets[1], "bench.server.dpdk=dpdk.host_ip=10.96.0.1,dpdk.no_huge=yes");
  // A child started with the job and these settings runs the same link, its server off hugepages.
  config::Config child = job();
  for (const std::string& s : sets) child.set_assignment(s);
  EXPECT_EQ(side_config(child, Side::Server, "dpdk").get_string("dpdk.no_huge"), "yes");
  EXPECT_EQ(side_config(child, Side::Client, "dpdk").get_string("dpdk.no_huge"), "no");
  EXPECT_EQ(side_config(child, Side::Server, "dpdk").get_list("dpdk.vdev"), side_config(conf, Side::Server, "dpdk").get_list("dpdk.vdev"));
}

TEST(DpdkLink, EachLinkGivesBothSidesTheirPort) {
  const config::Config vhost = job({"bench.dpdk_link=vhost-user", "dpdk.eal_args=[--single-file-segments]",
                                    "bench.client.dpdk=[dpdk.host_ip=10.96.0.2, dpdk.hw_addr=02:00:00:00:96:02]"});
  const config::Config vhost_server = side_config(vhost, Side::Server, "dpdk");
  const config::Config vhost_client = side_config(vhost, Side::Client, "dpdk");
  EXPECT_EQ(vhost_server.get_list("dpdk.vdev"), std::vector<std::string>{"net_vhost0,iface=/run/x.sock,queues=1,tso=1"});
  EXPECT_EQ(vhost_server.get_string("dpdk.no_huge"), "auto");  // the server copies: any memory serves
  EXPECT_EQ(vhost_client.get_list("dpdk.vdev"),
            std::vector<std::string>{"net_virtio_user0,path=/run/x.sock,queues=1,mac=02:00:00:00:96:02"});
  EXPECT_EQ(vhost_client.get_string("dpdk.no_huge"), "no");
  EXPECT_EQ(vhost_client.get_list("dpdk.eal_args"), std::vector<std::string>{"--single-file-segments"});  // once
  EXPECT_EQ(vhost_client.get_ipv4("dpdk.host_ip").to_string(), "10.96.0.2");  // the side's own settings stay

  // memif's buffers hold a frame of the MTU (9000 + 14, to 64 bytes), never less than 2048.
  const config::Config zero_copy = job({"bench.dpdk_link=memif-zero-copy", "dpdk.mtu=9000"});
  const config::Config zc_server = side_config(zero_copy, Side::Server, "dpdk");
  const config::Config zc_client = side_config(zero_copy, Side::Client, "dpdk");
  EXPECT_EQ(zc_server.get_list("dpdk.vdev"),
            std::vector<std::string>{"net_memif0,role=server,socket=/run/x.sock,bsize=9024"});
  EXPECT_EQ(zc_server.get_string("dpdk.no_huge"), "auto");
  EXPECT_TRUE(zc_server.get_list("dpdk.eal_args").empty());
  EXPECT_EQ(zc_client.get_list("dpdk.vdev"),
            std::vector<std::string>{"net_memif0,role=client,socket=/run/x.sock,bsize=9024,zero-copy=yes"});
  EXPECT_EQ(zc_client.get_string("dpdk.no_huge"), "no");
  EXPECT_EQ(zc_client.get_list("dpdk.eal_args"), std::vector<std::string>{"--single-file-segments"});

  const config::Config memif_client = side_config(job({"bench.dpdk_link=memif"}), Side::Client, "dpdk");
  EXPECT_EQ(memif_client.get_list("dpdk.vdev"),
            std::vector<std::string>{"net_memif0,role=client,socket=/run/x.sock,bsize=2048"});
  EXPECT_EQ(memif_client.get_string("dpdk.no_huge"), "auto");
}

TEST(DpdkLink, ASideThatNamesItsOwnPortOrRefusesHugepagesIsAnError) {
  EXPECT_EQ(side_error(job({"bench.dpdk_link=memif", "bench.client.dpdk=[dpdk.host_ip=10.96.0.2, "
                                                     "'dpdk.vdev=[\"net_tap0,iface=x\"]']"}),
                       Side::Client),
            "--set: bench.dpdk_link: memif gives the client its port, but dpdk.vdev is set (--set: bench.client.dpdk); "
            "drop it, or set bench.dpdk_link=configured to keep that port");
  EXPECT_EQ(side_error(job({"bench.dpdk_link=vhost-user", "dpdk.allow=0000:03:00.0"}), Side::Server),
            "--set: bench.dpdk_link: vhost-user gives the server its port, but dpdk.allow is set (--set); drop it, or "
            "set bench.dpdk_link=configured to keep that port");
  EXPECT_EQ(side_error(job({"bench.dpdk_link=vhost-user", "dpdk.no_huge=yes"}), Side::Client),
            "--set: bench.dpdk_link: vhost-user needs hugepages on the client (its memory is shared with the server "
            "through hugepage files), but dpdk.no_huge is yes (--set)");
  EXPECT_EQ(side_error(job({"bench.dpdk_link=vhost-user", "dpdk.no_huge=yes"}), Side::Server), "");
  // Only `run` sees both sides start, so only it resolves auto.
  EXPECT_EQ(side_error(job(), Side::Server).rfind("job.yaml:", 0), 0u);
  EXPECT_NE(side_error(job(), Side::Server).find("bench.dpdk_link: auto is resolved by `bypass-bench run`"),
            std::string::npos);
}

TEST(DpdkLink, EveryCaseNamesItsLinkAndItsCopies) {
  const auto described = [](const config::Config& conf, const std::string& transport) {
    return describe_link(side_config(conf, Side::Client, transport));
  };
  const LinkDescription kernel = described(job(), "posix");
  EXPECT_EQ(kernel.name, "kernel");
  EXPECT_EQ(kernel.copies_per_round_trip, std::optional<uint64_t>(4));
  const LinkDescription vhost = described(job({"bench.dpdk_link=vhost-user"}), "dpdk");
  EXPECT_EQ(vhost.name, "vhost-user");
  EXPECT_EQ(vhost.copies_per_round_trip, std::optional<uint64_t>(2));
  EXPECT_EQ(described(job({"bench.dpdk_link=memif-zero-copy"}), "dpdk").copies_per_round_trip,
            std::optional<uint64_t>(2));
  EXPECT_EQ(described(job({"bench.dpdk_link=memif"}), "dpdk").copies_per_round_trip, std::optional<uint64_t>(4));
  // The job's own port: its driver, copies not claimed.
  const LinkDescription tap =
      described(job({"bench.dpdk_link=configured", "dpdk.vdev=[\"net_tap0,iface=bp0\"]"}), "dpdk");
  EXPECT_EQ(tap.name, "net_tap");
  EXPECT_FALSE(tap.copies_per_round_trip.has_value());
  EXPECT_EQ(described(job({"bench.dpdk_link=configured"}), "dpdk").name, "pci");
}

}  // namespace
}  // namespace bypass::bench

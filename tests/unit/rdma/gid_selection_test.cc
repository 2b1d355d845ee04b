// rdma.gid_index: auto on fake GID tables: sysfs's mlx5 layout (tests/data/hosts/mlx5-roce), the
// preference among addresses, the RoCE version, InfiniBand, and the error when there is none.
#include <gtest/gtest.h>

#include <cstdio>

#include "stack/rdma/gid_selection.h"
#include "tests/support/test_hosts.h"

namespace bypass::rdma {
namespace {


GidEntry entry(int index, const std::string& text, const std::string& type, const std::string& netdev = "eth0") {
  GidEntry e;
  e.index = index;
  // The tests write addresses as sysfs shows them once parsed: "v4:a.b.c.d" or 16 bytes of IPv6.
  if (text.rfind("v4:", 0) == 0) {
    e.gid[10] = e.gid[11] = 0xff;
    unsigned a, b, c, d;
    std::sscanf(text.c_str() + 3, "%u.%u.%u.%u", &a, &b, &c, &d);
    e.gid[12] = static_cast<uint8_t>(a), e.gid[13] = static_cast<uint8_t>(b);
    e.gid[14] = static_cast<uint8_t>(c), e.gid[15] = static_cast<uint8_t>(d);
  } else if (text == "fe80") {
    e.gid[0] = 0xfe, e.gid[1] = 0x80, e.gid[15] = 1;
  } else {  // a global IPv6 address, fd00::1
    e.gid[0] = 0xfd, e.gid[15] = 1;
  }
  e.type = type;
  e.netdev = netdev;
  return e;
}

TEST(GidTable, ReadsSysfsAndSkipsEmptyEntries) {
  const auto table = read_gid_table(HostFiles(fake_host_root("mlx5-roce")), "mlx5_0", 1);
  ASSERT_TRUE(table);
  ASSERT_EQ(table->size(), 6u);  // indexes 6 and 7 are empty
  EXPECT_EQ((*table)[3].describe(), "3: 192.168.10.5 RoCE v2 on ens1f0np0");
  EXPECT_EQ((*table)[0].describe(), "0: fe80::e42:a1ff:fe00:1 IB/RoCE v1 on ens1f0np0");
  EXPECT_EQ((*table)[5].address_text(), "fd00:10::5");
  EXPECT_FALSE(read_gid_table(HostFiles(fake_host_root("mlx5-roce")), "mlx5_9", 1));
  EXPECT_TRUE(read_gid_table(HostFiles(fake_host_root("mlx5-roce")), "rxe0", 1)->empty());
}

TEST(GidAuto, PicksTheRoceV2Ipv4GidOfAnMlx5Table) {
  const auto table = read_gid_table(HostFiles(fake_host_root("mlx5-roce")), "mlx5_0", 1);
  EXPECT_EQ(choose_gid(*table, true, "v2").index, 3);
  EXPECT_EQ(choose_gid(*table, true, "v1").index, 2);
}

TEST(GidAuto, PrefersIpv4ThenGlobalIpv6ThenLinkLocal) {
  const std::vector<GidEntry> all = {entry(0, "fe80", "RoCE v2"), entry(1, "v4:169.254.77.1", "RoCE v2"),
                                     entry(2, "fd00", "RoCE v2"), entry(3, "v4:10.1.0.7", "RoCE v2"),
                                     entry(4, "v4:10.1.0.8", "RoCE v2")};
  EXPECT_EQ(choose_gid(all, true, "v2").index, 3);  // the lowest index of the best kind
  EXPECT_EQ(choose_gid({all[0], all[1], all[2]}, true, "v2").index, 2);
  EXPECT_EQ(choose_gid({all[0], all[1]}, true, "v2").index, 1);
  EXPECT_EQ(choose_gid({all[0]}, true, "v2").index, 0);
}

TEST(GidAuto, InfinibandUsesThePortGid) {
  EXPECT_EQ(choose_gid({entry(0, "fe80", "", "")}, false, "v2").index, 0);
  EXPECT_EQ(choose_gid({}, false, "v2").index, -1);
}

TEST(GidAuto, NoGidOfTheVersionIsOneClearError) {
  const GidChoice none = choose_gid({entry(0, "fe80", "IB/RoCE v1", "ens1f0"), entry(1, "v4:10.0.0.1", "IB/RoCE v1", "ens1f0")},
                                    true, "v2");
  EXPECT_EQ(none.index, -1);
  EXPECT_EQ(none.error,
            "no RoCE v2 GID in the table (it holds 0: fe80::1 IB/RoCE v1 on ens1f0; 1: 10.0.0.1 IB/RoCE v1 on ens1f0); "
            "give the port's netdev an IP address: ip addr add ADDRESS/PREFIX dev ens1f0");
  EXPECT_EQ(choose_gid({}, true, "v2").error,
            "no RoCE v2 GID in the table (it is empty); give the port's netdev an IP address: ip addr add "
            "ADDRESS/PREFIX dev NETDEV");
}

}  // namespace
}  // namespace bypass::rdma

// The dpdk.* addressing options as the dpdk transport reads them (dpdk_inet_settings): IPv6 off
// by default, dpdk.host_ipv6 / ipv6_prefix_length / gateway_ipv6 into InetSettings::ipv6, and
// every bad value refused with the option's name and the value in the message.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "config/config.h"
#include "stack/dpdk/dpdk_stack.h"

namespace bypass {
namespace {

config::Config base() {
  config::Config c;
  c.set("dpdk.host_ip", "10.67.0.2");
  return c;
}

inet::Ipv6Address v6(const char* text) { return *inet::Ipv6Address::from_string(text); }

// The message of the std::runtime_error dpdk_inet_settings throws, or "" when it accepts.
std::string error_of(const config::Config& c) {
  try {
    dpdk_inet_settings(c);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(DpdkConfig, Ipv6IsOffUnlessHostIpv6IsGiven) {
  const inet::InetSettings s = dpdk_inet_settings(base());
  EXPECT_TRUE(s.ipv6.address.is_unspecified());
  EXPECT_EQ(s.address.value, 0x0a430002u);
}

TEST(DpdkConfig, Ipv6AddressPrefixAndGatewayFillTheSettings) {
  config::Config c = base();
  c.set("dpdk.host_ipv6", "fd00:67::2");
  inet::InetSettings s = dpdk_inet_settings(c);
  EXPECT_EQ(s.ipv6.address, v6("fd00:67::2"));
  EXPECT_EQ(s.ipv6.prefix_length, 64);  // the default
  EXPECT_TRUE(s.ipv6.gateway.is_unspecified());
  EXPECT_EQ(s.ipv6.reassembly_timeout, std::chrono::seconds(60));  // RFC 8200 §4.5
  c.set("dpdk.ipv6_reassembly_timeout", "2s");
  EXPECT_EQ(dpdk_inet_settings(c).ipv6.reassembly_timeout, std::chrono::seconds(2));

  c.set("dpdk.ipv6_prefix_length", "48");
  c.set("dpdk.gateway_ipv6", "fd00:67:0:9::1");  // on the /48
  s = dpdk_inet_settings(c);
  EXPECT_EQ(s.ipv6.prefix_length, 48);
  EXPECT_EQ(s.ipv6.gateway, v6("fd00:67:0:9::1"));

  c.set("dpdk.gateway_ipv6", "fe80::1");  // a router's link-local address (RFC 4861 §8)
  EXPECT_EQ(dpdk_inet_settings(c).ipv6.gateway, v6("fe80::1"));

  c.set("dpdk.host_ipv6", "[2001:db8::7]");  // brackets are tolerated
  c.set("dpdk.gateway_ipv6", "");
  c.set("dpdk.ipv6_prefix_length", "128");
  s = dpdk_inet_settings(c);
  EXPECT_EQ(s.ipv6.address, v6("2001:db8::7"));
  EXPECT_EQ(s.ipv6.prefix_length, 128);
}

TEST(DpdkConfig, BadIpv6ValuesAreNamed) {
  struct Case {
    const char* host;
    const char* gateway;
    const char* expected;  // a part of the message
  };
  const Case cases[] = {
      {"fd00::zz", "", "dpdk.host_ipv6: 'fd00::zz' is not an IPv6 address"},
      {"10.0.0.1", "", "dpdk.host_ipv6: '10.0.0.1' is not an IPv6 address"},
      {"ff02::1", "", "dpdk.host_ipv6: 'ff02::1' is not a unicast address"},
      {"ff05::1:3", "", "dpdk.host_ipv6: 'ff05::1:3' is not a unicast address"},
      {"::", "", "dpdk.host_ipv6: '::' is not a unicast address"},
      {"::1", "", "dpdk.host_ipv6: '::1' is not a unicast address"},
      {"fd00::2/64", "", "dpdk.host_ipv6: 'fd00::2/64': give the address alone"},
      {"fd00::2", "fd00::zz", "dpdk.gateway_ipv6: 'fd00::zz' is not an IPv6 address"},
      {"fd00::2", "ff02::2", "dpdk.gateway_ipv6: 'ff02::2' is not a unicast address"},
      {"fd00::2", "fd00::2", "dpdk.gateway_ipv6: 'fd00::2' is not a unicast address of another node"},
      {"fd00::2", "fd01::1", "dpdk.gateway_ipv6: 'fd01::1' is neither link-local (fe80::/10) nor on fd00::2/64"},
      {"", "fe80::1", "dpdk.gateway_ipv6: 'fe80::1' given without dpdk.host_ipv6"},
  };
  for (const Case& k : cases) {
    config::Config c = base();
    c.set("dpdk.host_ipv6", k.host);
    c.set("dpdk.gateway_ipv6", k.gateway);
    const std::string error = error_of(c);
    EXPECT_NE(error.find(k.expected), std::string::npos) << k.host << " / " << k.gateway << ": " << error;
  }
}

TEST(DpdkConfig, PrefixLengthIsRangeChecked) {
  config::Config c = base();
  for (const char* bad : {"0", "129", "-1", "x"}) {
    try {
      c.set("dpdk.ipv6_prefix_length", bad);
      ADD_FAILURE() << bad << " accepted";
    } catch (const config::ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("dpdk.ipv6_prefix_length"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace bypass

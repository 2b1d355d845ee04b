// The tcp.* options reach the protocol settings.
#include <gtest/gtest.h>

#include "config/config.h"
#include "stack/inet/inet_config.h"

namespace bypass::inet {
namespace {

using namespace std::chrono_literals;

TEST(InetConfig, DefaultsAndOverrides) {
  config::Config config;
  InetSettings settings;
  apply_tcp_config(config, settings);
  EXPECT_EQ(settings.tcp.rto_min, 200ms);
  EXPECT_TRUE(settings.tcp.window_scale);
  EXPECT_EQ(settings.tcp.max_window_shift, 7);
  EXPECT_FALSE(settings.tcp.keepalive);
  config.set("tcp.congestion", "newreno");
  config.set("tcp.rto_min", "50ms");
  config.set("tcp.window_scale", "0");
  config.set("tcp.keepalive_idle", "10s");
  config.set("tcp.delayed_ack", "0");
  apply_tcp_config(config, settings);
  EXPECT_EQ(settings.tcp.congestion, CongestionAlgorithm::NewReno);
  EXPECT_EQ(settings.tcp.rto_min, 50ms);
  EXPECT_FALSE(settings.tcp.window_scale);
  EXPECT_TRUE(settings.tcp.keepalive);
  EXPECT_EQ(settings.tcp.keepalive_idle, 10s);
  EXPECT_FALSE(settings.tcp.delayed_ack);
  config.set("tcp.congestion", "cubic");
  apply_tcp_config(config, settings);
  EXPECT_EQ(settings.tcp.congestion, CongestionAlgorithm::Cubic);
}

TEST(InetConfig, Ipv6AddressingFromText) {
  InetSettings settings;
  EXPECT_EQ(apply_ipv6_addressing("2001:db8::5/48", "fe80::1", settings), "");
  EXPECT_EQ(settings.ipv6.address, *Ipv6Address::from_string("2001:db8::5"));
  EXPECT_EQ(settings.ipv6.prefix_length, 48);
  EXPECT_EQ(settings.ipv6.gateway, *Ipv6Address::from_string("fe80::1"));
  EXPECT_EQ(apply_ipv6_addressing("2001:db8::6", "", settings), "");
  EXPECT_EQ(settings.ipv6.prefix_length, 64);  // the default
  EXPECT_TRUE(settings.ipv6.gateway.is_unspecified());
  // Refused, leaving the settings as they were.
  for (const char* bad : {"2001:db8::7/129", "2001:db8::7/", "2001:db8::7/x", "10.0.0.1", "ff02::1", "::", "::1/64"})
    EXPECT_NE(apply_ipv6_addressing(bad, "", settings), "") << bad;
  EXPECT_NE(apply_ipv6_addressing("2001:db8::7", "ff02::2", settings), "");
  EXPECT_EQ(settings.ipv6.address, *Ipv6Address::from_string("2001:db8::6"));
  // Empty: IPv6 off.
  EXPECT_EQ(apply_ipv6_addressing("", "", settings), "");
  EXPECT_TRUE(settings.ipv6.address.is_unspecified());
}

}  // namespace
}  // namespace bypass::inet

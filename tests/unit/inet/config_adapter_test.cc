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

}  // namespace
}  // namespace bypass::inet

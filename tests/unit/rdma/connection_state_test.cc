// The connection life cycle rules, and the transport's behaviour on a machine without RDMA.
#include "stack/rdma/connection_state.h"

#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <string>

#include "config/config.h"
#include "stack/network_stack.h"
#include "stack/rdma/rdma_worker.h"

namespace bypass::rdma {
namespace {

using S = ConnState;
constexpr S kAll[] = {S::Connecting, S::Handshaking, S::Established, S::Draining, S::Failed, S::Destroyed};

TEST(RdmaTuning, AckTimeoutRoundsUpToTheVerbsEncoding) {
  using std::chrono::nanoseconds;
  EXPECT_EQ(verbs_ack_timeout_exponent(nanoseconds(1)), 1);             // never 0 (= infinite)
  EXPECT_EQ(verbs_ack_timeout_exponent(nanoseconds(8192)), 1);          // 4.096 us * 2
  EXPECT_EQ(verbs_ack_timeout_exponent(nanoseconds(8193)), 2);
  EXPECT_EQ(verbs_ack_timeout_exponent(std::chrono::milliseconds(67)), 14);  // 67.1 ms
  EXPECT_EQ(verbs_ack_timeout_exponent(std::chrono::seconds(1)), 18);        // 1.07 s
  EXPECT_EQ(verbs_ack_timeout_exponent(std::chrono::hours(10)), 31);         // capped
}

TEST(RdmaTuning, ConfigMapsOntoQueuePairTimeouts) {
  config::Config conf;
  conf.set("rdma.ack_timeout", "1s");
  conf.set("rdma.retry_count", "5");
  const RdmaTuning t = RdmaTuning::from(conf);
  EXPECT_EQ(t.ack_timeout_exponent, 18);
  EXPECT_EQ(t.retry_count, 5);
  EXPECT_THROW(conf.set("rdma.retry_count", "8"), config::ConfigError);
}

TEST(RdmaTuning, ReceiveWindowIsCappedAtAQuarterOfThePool) {
  config::Config conf;
  EXPECT_EQ(RdmaTuning::from(conf).rx_window, 32u);  // the default: 32 of 1024 chunks
  conf.set("rdma.chunk_count", "64");
  EXPECT_EQ(RdmaTuning::from(conf).rx_window, 16u);
  conf.set("rdma.chunk_count", "16");
  conf.set("rdma.rx_window", "2");
  EXPECT_EQ(RdmaTuning::from(conf).rx_window, 2u);
  conf.set("rdma.chunk_count", "4096");
  conf.set("rdma.rx_window", "256");
  EXPECT_EQ(RdmaTuning::from(conf).rx_window, 256u);
  EXPECT_THROW(conf.set("rdma.rx_window", "1"), config::ConfigError);  // half a window must be >= 1
}

TEST(RdmaTuning, ConnectModeIsTcpOrRdmaCmAndNothingElse) {
  config::Config conf;
  EXPECT_FALSE(RdmaTuning::from(conf).use_cm);  // the side channel by default
  conf.set("rdma.connect_mode", "rdma_cm");
  EXPECT_TRUE(RdmaTuning::from(conf).use_cm);
  try {
    conf.set_assignment("rdma.connect_mode=cm", "job.yaml");
    FAIL() << "rdma.connect_mode=cm was accepted";
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("rdma.connect_mode: 'cm' is not one of tcp, rdma_cm"), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(RdmaTuning::from(conf).use_cm);  // the bad value changed nothing
}

TEST(ConnectionState, HappyPathAndTeardown) {
  EXPECT_TRUE(transition_allowed(S::Connecting, S::Handshaking));
  EXPECT_TRUE(transition_allowed(S::Handshaking, S::Established));
  EXPECT_TRUE(transition_allowed(S::Established, S::Draining));
  EXPECT_TRUE(transition_allowed(S::Draining, S::Destroyed));
  EXPECT_TRUE(transition_allowed(S::Established, S::Failed));
  EXPECT_TRUE(transition_allowed(S::Failed, S::Destroyed));
}

TEST(ConnectionState, NoShortcutsAndNoResurrection) {
  EXPECT_FALSE(transition_allowed(S::Connecting, S::Established)) << "no data before the handshake";
  EXPECT_FALSE(transition_allowed(S::Established, S::Destroyed)) << "must drain first";
  EXPECT_FALSE(transition_allowed(S::Failed, S::Established));
  EXPECT_FALSE(transition_allowed(S::Draining, S::Established));
  for (S to : kAll) EXPECT_FALSE(transition_allowed(S::Destroyed, to)) << to_string(to);
  for (S s : kAll) EXPECT_FALSE(transition_allowed(s, s)) << to_string(s);
}

TEST(ConnectionState, EveryLiveStateCanFailAndOnlyEstablishedSends) {
  for (S s : {S::Connecting, S::Handshaking, S::Established, S::Draining})
    EXPECT_TRUE(transition_allowed(s, S::Failed)) << to_string(s);
  for (S s : kAll) EXPECT_EQ(can_send(s), s == S::Established) << to_string(s);
}

TEST(RdmaWithoutDevice, StackCreationFailsWithAClearMessage) {
  int count = 0;
  ibv_device** list = ibv_get_device_list(&count);
  if (list) ibv_free_device_list(list);
  if (count > 0) GTEST_SKIP() << "an RDMA device is present; covered by the rdma suite";
  config::Config conf;
  conf.set("ms.type", "rdma");
  try {
    NetworkStack::create(conf);
    FAIL() << "rdma stack created without a device";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("ms.type=rdma"), std::string::npos) << what;
    EXPECT_NE(what.find("no RDMA device"), std::string::npos) << what;
  }
}

TEST(RdmaWithoutDevice, UnknownDeviceNameIsRejected) {
  config::Config conf;
  conf.set("ms.type", "rdma");
  conf.set("rdma.device", "nosuchdev9");
  try {
    NetworkStack::create(conf);
    FAIL() << "rdma stack created for a device that does not exist";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("nosuchdev9"), std::string::npos) << what;  // names the device...
  }
}

}  // namespace
}  // namespace bypass::rdma

// msgr/admin: the Prometheus exposition (escaping, one block per family) and the admin commands
// against a running posix messenger, including a stack whose workers do not answer.
#include <gtest/gtest.h>

#include <chrono>

#include "config/config.h"
#include "msgr/admin/admin_server.h"
#include "msgr/admin/metrics_writer.h"
#include "msgr/messenger.h"
#include "stack/network_stack.h"

namespace bypass::admin {
namespace {

TEST(MetricsWriter, EscapesLabelValuesAndHelp) {
  MetricsWriter out;
  out.add("bypass_x_total", MetricsWriter::Type::Counter, "a \\ b\nc", {{"name", "q\"u\\o\nte"}}, 7);
  EXPECT_EQ(out.render(),
            "# HELP bypass_x_total a \\\\ b\\nc\n"
            "# TYPE bypass_x_total counter\n"
            "bypass_x_total{name=\"q\\\"u\\\\o\\nte\"} 7\n");
}

TEST(MetricsWriter, KeepsEachFamilyInOneBlock) {
  MetricsWriter out;
  out.add("a_total", MetricsWriter::Type::Counter, "A", {{"worker", "0"}}, 1);
  out.add("b", MetricsWriter::Type::Gauge, "B", {{"worker", "0"}}, 2);
  out.add("a_total", MetricsWriter::Type::Counter, "A", {{"worker", "1"}}, 3);
  EXPECT_EQ(out.render(),
            "# HELP a_total A\n# TYPE a_total counter\na_total{worker=\"0\"} 1\na_total{worker=\"1\"} 3\n"
            "# HELP b B\n# TYPE b gauge\nb{worker=\"0\"} 2\n");
}

TEST(MetricsWriter, SanitizesNames) {
  EXPECT_EQ(MetricsWriter::sanitize_name("bypass_port.rx-bytes"), "bypass_port_rx_bytes");
  EXPECT_EQ(MetricsWriter::sanitize_name("0abc"), "_0abc");
  MetricsWriter out;
  out.add("m", MetricsWriter::Type::Gauge, "h", {{"a:b", "v"}}, 1);
  EXPECT_NE(out.render().find("m{a_b=\"v\"} 1"), std::string::npos);
}

class AdminCommands : public ::testing::Test {
 protected:
  void SetUp() override {
    conf_.set("ms.type", "posix");
    conf_.set("ms.workers", "3");
    conf_.set("ms.admin_socket", "/tmp/bypass-admin-unit-" + std::to_string(::getpid()) + ".sock");
    messenger_ = msgr::Messenger::create(conf_, msgr::EntityName{msgr::EntityType::Osd, 3});
    msgr::EntityAddr addr;
    ASSERT_TRUE(msgr::EntityAddr::parse("127.0.0.1:0", &addr));
    ASSERT_EQ(messenger_->bind(addr), 0);
    ASSERT_EQ(messenger_->start(), 0);
    server_ = AdminServer::acquire(conf_);
    ASSERT_NE(server_, nullptr);
  }
  void TearDown() override {
    if (messenger_) {
      messenger_->shutdown();
      messenger_->wait();
    }
  }
  config::Config conf_;
  std::unique_ptr<msgr::Messenger> messenger_;
  std::shared_ptr<AdminServer> server_;
};

TEST_F(AdminCommands, AnswersEveryCommand) {
  AdminServer::Reply perf = server_->execute("perf   dump");  // words may be spaced freely
  ASSERT_TRUE(perf.ok) << perf.body;
  EXPECT_NE(perf.body.find("\"name\":\"osd.3\""), std::string::npos) << perf.body;
  EXPECT_NE(perf.body.find("\"transport\":\"posix\""), std::string::npos) << perf.body;
  EXPECT_NE(perf.body.find("\"worker\":2"), std::string::npos) << perf.body;
  EXPECT_TRUE(server_->execute("conns").ok);
  EXPECT_NE(server_->execute("config show").body.find("\"ms.workers\":3"), std::string::npos);
  const AdminServer::Reply diff = server_->execute("config diff");
  ASSERT_TRUE(diff.ok);
  EXPECT_EQ(diff.body.find("\"ms.type\""), std::string::npos) << "ms.type was set to its default: " << diff.body;
  EXPECT_NE(diff.body.find("\"ms.workers\":{\"value\":\"3\",\"default\":\"2\",\"origin\":\"--set\"}"),
            std::string::npos) << diff.body;
  EXPECT_NE(server_->execute("version").body.find("\"version\":\""), std::string::npos);
  EXPECT_TRUE(server_->execute("help").ok);
}

TEST_F(AdminCommands, RejectsUnknownAndEmptyCommands) {
  const AdminServer::Reply bad = server_->execute("perf dumpx");
  EXPECT_FALSE(bad.ok);
  EXPECT_EQ(bad.body.rfind("unknown command 'perf dumpx'; commands: help, version, perf dump", 0), 0u) << bad.body;
  const AdminServer::Reply empty = server_->execute("   ");
  EXPECT_FALSE(empty.ok);
  EXPECT_EQ(empty.body.rfind("empty command", 0), 0u) << empty.body;
}

TEST_F(AdminCommands, MetricsCoverMessengerAndWorkers) {
  const std::string text = server_->metrics_text();
  EXPECT_NE(text.find("# TYPE bypass_msgr_msgs_sent_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("bypass_msgr_connections{transport=\"posix\",entity=\"osd.3\"} 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("bypass_worker_up{transport=\"posix\",worker=\"1\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("bypass_transport_bytes_sent_total{transport=\"posix\",worker=\"0\"}"), std::string::npos);
}

// A stack whose loops do not run (never started): commands answer after the worker timeout with
// the worker marked, instead of hanging the admin thread.
TEST(AdminServerStackOnly, UnresponsiveWorkersAreReportedNotWaitedFor) {
  config::Config conf;
  conf.set("ms.type", "posix");
  conf.set("ms.workers", "1");
  conf.set("ms.metrics_address", "127.0.0.1:0");
  std::shared_ptr<NetworkStack> stack = NetworkStack::create(conf);
  ScopedAdminAttachment attachment(conf, stack.get());
  std::shared_ptr<AdminServer> server = AdminServer::acquire(conf);
  const auto start = std::chrono::steady_clock::now();
  const AdminServer::Reply perf = server->execute("perf dump");
  EXPECT_LT(std::chrono::steady_clock::now() - start, AdminServer::kWorkerTimeout + std::chrono::seconds(1));
  ASSERT_TRUE(perf.ok);
  EXPECT_NE(perf.body.find("\"error\":\"the worker did not answer within 2 s\""), std::string::npos) << perf.body;
  EXPECT_NE(server->metrics_text().find("bypass_worker_up{transport=\"posix\",worker=\"0\"} 0\n"), std::string::npos);
}

TEST(AdminServerErrors, BadAddressesNameTheOption) {
  config::Config conf;
  conf.set("ms.metrics_address", "localhost:9100");
  try {
    AdminServer::acquire(conf);
    FAIL() << "no error";
  } catch (const config::ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("ms.metrics_address: 'localhost:9100' is not IP:PORT", 0), 0u) << e.what();
  }
  config::Config not_a_socket;
  not_a_socket.set("ms.admin_socket", "/etc/passwd");
  EXPECT_THROW(AdminServer::acquire(not_a_socket), config::ConfigError);
}

}  // namespace
}  // namespace bypass::admin

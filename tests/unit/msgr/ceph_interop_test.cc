// Interop with real Ceph (pacific, Debian's ceph-mon 16.2) on loopback:
//  - a Bypass client completes the msgr2.1 handshake with a monitor and gets MMonGetVersion
//    replies for "monmap" and "osdmap" whose versions match `ceph mon dump` / `ceph osd dump`;
//  - the `ceph` CLI pointed at a Bypass server completes the handshake with it, and the server
//    sees its CLIENT_IDENT and first message.
// Exits 77 (skip) when ceph-mon or the ceph CLI is not installed.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "config/config.h"
#include "msgr/messenger.h"
#include "msgr/wire/codec.h"

namespace bypass::msgr {
namespace {

using namespace std::chrono_literals;

constexpr uint16_t kMsgMonGetVersion = 19;       // CEPH_MSG_MON_GET_VERSION
constexpr uint16_t kMsgMonGetVersionReply = 20;  // CEPH_MSG_MON_GET_VERSION_REPLY

// MMonGetVersion: front = __le64 handle, string what ("monmap", "osdmap", ...).
class MonGetVersion : public Message {
 public:
  MonGetVersion(uint64_t handle, std::string what) : Message(kMsgMonGetVersion), handle_(handle), what_(std::move(what)) {}
  void encode_payload(uint64_t) override {
    wire::Encoder enc(front());
    enc.u64(handle_);
    enc.blob(what_);
  }

 private:
  uint64_t handle_;
  std::string what_;
};

// MMonGetVersionReply (HEAD_VERSION 2): __le64 handle, __le64 version, __le64 oldest_version.
class MonGetVersionReply : public Message {
 public:
  MonGetVersionReply() : Message(kMsgMonGetVersionReply, 2, 1) {}
  void decode_payload() override {
    std::string bytes = front().to_string();
    wire::Decoder dec(bytes, "MMonGetVersionReply");
    handle = dec.u64("handle");
    version = dec.u64("version");
    if (dec.remaining() >= 8) oldest_version = dec.u64("oldest_version");
  }
  uint64_t handle = 0, version = 0, oldest_version = 0;
};

std::string run(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  ::pclose(p);
  return out;
}

uint64_t json_epoch(const std::string& json) {
  auto pos = json.find("\"epoch\":");
  if (pos == std::string::npos) return UINT64_MAX;
  return std::strtoull(json.c_str() + pos + 8, nullptr, 10);
}

struct Mon {
  std::string dir;
  int port = 0;
  std::string conf;
  bool up = false;
  Mon() {
    std::mt19937 rng(static_cast<unsigned>(::getpid()) ^ static_cast<unsigned>(time(nullptr)));
    port = 20000 + static_cast<int>(rng() % 20000);
    dir = "/tmp/bypass-msgr-interop-" + std::to_string(::getpid());
    std::string out = run(std::string(BYPASS_CEPH_MON_UP) + " " + dir + " " + std::to_string(port) + " 2>&1");
    conf = dir + "/ceph.conf";
    up = out.find(conf) != std::string::npos;
    if (!up) std::fprintf(stderr, "monitor start failed:\n%s\n", out.c_str());
  }
  ~Mon() {
    std::ifstream pidfile(dir + "/mon.pid");
    pid_t pid = 0;
    if (pidfile >> pid && pid > 0) {
      ::kill(pid, SIGTERM);
      for (int i = 0; i < 50 && ::kill(pid, 0) == 0; ++i) std::this_thread::sleep_for(100ms);
      if (::kill(pid, 0) == 0) ::kill(pid, SIGKILL);
    }
    run("rm -rf " + dir);
  }
};

class ReplyCollector : public Dispatcher {
 public:
  bool ms_can_fast_dispatch(const Message&) const override { return false; }
  bool ms_dispatch(const MessageRef& m) override {
    std::lock_guard<std::mutex> guard(lock);
    types.push_back(m->type());
    if (auto r = std::dynamic_pointer_cast<MonGetVersionReply>(m)) replies[r->handle] = r->version;
    cv.notify_all();
    return true;
  }
  std::mutex lock;
  std::condition_variable cv;
  std::vector<uint16_t> types;
  std::map<uint64_t, uint64_t> replies;
};

config::Config conf_for_interop() {
  config::Config conf;
  conf.apply_environment();
  conf.set("ms.workers", "1");
  return conf;
}

TEST(CephInterop, MonitorAnswersMonGetVersion) {
  Mon mon;
  ASSERT_TRUE(mon.up);
  uint64_t monmap_epoch = json_epoch(run("timeout 20 ceph -c " + mon.conf + " mon dump -f json 2>/dev/null"));
  uint64_t osdmap_epoch = json_epoch(run("timeout 20 ceph -c " + mon.conf + " osd dump -f json 2>/dev/null"));
  ASSERT_NE(monmap_epoch, UINT64_MAX);
  ASSERT_NE(osdmap_epoch, UINT64_MAX);

  ReplyCollector d;
  auto msgr = Messenger::create(conf_for_interop(), EntityName{EntityType::Client, -1});
  msgr->set_default_policy(Policy::lossy_client());
  msgr->registry().add(kMsgMonGetVersionReply, [] { return std::make_shared<MonGetVersionReply>(); });
  msgr->add_dispatcher(&d);
  ASSERT_EQ(msgr->start(), 0);
  EntityAddr mon_addr;
  ASSERT_TRUE(EntityAddr::parse("v2:127.0.0.1:" + std::to_string(mon.port) + "/0", &mon_addr));
  ConnectionRef con = msgr->connect_to(EntityType::Mon, EntityAddrVec{{mon_addr}});
  con->send_message(std::make_shared<MonGetVersion>(1, "monmap"));
  con->send_message(std::make_shared<MonGetVersion>(2, "osdmap"));
  {
    std::unique_lock<std::mutex> guard(d.lock);
    d.cv.wait_for(guard, 20s, [&] { return d.replies.size() == 2; });
    ASSERT_EQ(d.replies.size(), 2u) << msgr->perf_dump_json();
    EXPECT_EQ(d.replies[1], monmap_epoch);
    EXPECT_EQ(d.replies[2], osdmap_epoch);
  }
  EXPECT_TRUE(con->is_connected());
  EXPECT_EQ(con->peer_name().type, EntityType::Mon);
  std::printf("monmap epoch %llu, osdmap epoch %llu via Bypass; perf %s\n",
              static_cast<unsigned long long>(monmap_epoch), static_cast<unsigned long long>(osdmap_epoch),
              msgr->perf_dump_json().c_str());
  msgr->shutdown();
}

TEST(CephInterop, CephCliHandshakesWithBypassServer) {
  ReplyCollector d;
  auto msgr = Messenger::create(conf_for_interop(), EntityName{EntityType::Mon, 0});
  msgr->set_default_policy(Policy::stateless_server());
  msgr->add_dispatcher(&d);
  EntityAddr addr;
  ASSERT_TRUE(EntityAddr::parse("v2:127.0.0.1:0", &addr));
  ASSERT_EQ(msgr->bind(addr), 0);
  ASSERT_EQ(msgr->start(), 0);
  EntityAddr bound = msgr->my_addrs().addrs.at(0);
  std::string cmd = "timeout 20 ceph -c /dev/null --no-mon-config -m v2:127.0.0.1:" + std::to_string(bound.port()) +
                    " --auth-client-required none --connect-timeout 5 -s 2>&1";
  std::thread cli([&] { run(cmd); });
  {
    std::unique_lock<std::mutex> guard(d.lock);
    d.cv.wait_for(guard, 20s, [&] { return !d.types.empty(); });
    ASSERT_FALSE(d.types.empty()) << msgr->perf_dump_json();
    std::printf("ceph CLI's first message type: %u\n", d.types.front());
  }
  EXPECT_NE(msgr->perf_dump_json().find("\"connections_accepted\":1"), std::string::npos) << msgr->perf_dump_json();
  msgr->shutdown();
  cli.join();
}

}  // namespace
}  // namespace bypass::msgr

int main(int argc, char** argv) {
  if (std::system("command -v ceph-mon >/dev/null 2>&1 && command -v ceph >/dev/null 2>&1 && command -v monmaptool >/dev/null 2>&1") != 0) {
    std::printf("SKIP: ceph-mon/ceph/monmaptool not installed (apt-get install -y ceph-mon ceph-common)\n");
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

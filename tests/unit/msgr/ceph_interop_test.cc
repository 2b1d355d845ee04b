// Interop with real Ceph (pacific, Debian's ceph-mon 16.2) on loopback:
//  - a Bypass client completes the msgr2.1 handshake with a monitor and gets MMonGetVersion
//    replies for "monmap" and "osdmap" whose versions match `ceph mon dump` / `ceph osd dump`,
//    both in process (probe_mon_versions) and through `bypass-bench ceph-mon-version`;
//  - `bypass-bench ceph-mon-version --count/--duration` measures the monitor's request rate and
//    writes a result file that `bypass-bench compare` reads;
//  - the `ceph` CLI pointed at a Bypass server completes the handshake with it, and the server
//    sees its CLIENT_IDENT and first message;
//  - the frames the monitor and the `ceph` CLI exchange, recorded now, read and reproduce byte for
//    byte (ceph_frames_check.h, as msgr-ceph-frames checks the committed capture).
// Exits 77 (skip) when ceph-mon or the ceph CLI is not installed.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "config/config.h"
#include "msgr/auth/cephx_client.h"
#include "msgr/messenger.h"
#include "msgr/mon_auth.h"
#include "msgr/wire/control_frames.h"
#include "msgr/mon_get_version.h"
#include "tests/support/subprocess.h"
#include "tests/unit/msgr/auth_reply_collector.h"
#include "tests/unit/msgr/ceph_frames_check.h"

namespace bypass::msgr {
namespace {

using namespace std::chrono_literals;

using bypass::test::CommandResult;
using bypass::test::run_with_status;

std::string run(const std::string& cmd) { return run_with_status(cmd).out; }

using JsonValue = nlohmann::json;

// The "epoch" of `ceph ... dump -f json`; UINT64_MAX when the command printed no such document.
uint64_t json_epoch(const std::string& text) {
  const JsonValue doc = JsonValue::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("epoch") || !doc["epoch"].is_number_unsigned()) return UINT64_MAX;
  return doc["epoch"].get<uint64_t>();
}

struct Mon {
  std::string host;  // as it appears in an address: 127.0.0.1, [::1]
  std::string dir;
  int port = 0;
  std::string conf;
  bool up = false;
  // auth "none" or "cephx" (then dir/keyring holds mon. and client.admin).
  // with_osd: also osd.0 (memstore); its address is then in osd_addr.
  // extra_conf: more [global] lines for its ceph.conf; `tag` tells its directory from the others'.
  // ip: the daemons' address; "::1" makes an IPv6-only cluster (ms_bind_ipv6).
  explicit Mon(const std::string& auth = "none", bool with_osd = false, const std::string& extra_conf = "",
               const std::string& tag = "", const std::string& ip = "127.0.0.1")
      : host(ip.find(':') == std::string::npos ? ip : "[" + ip + "]") {
    dir = "/tmp/bypass-msgr-interop-" + std::to_string(::getpid()) + "-" + auth + (with_osd ? "-osd" : "") + tag;
    // The script picks a free port (and another one if that is taken) and writes it into ceph.conf.
    std::string out = run("AUTH=" + auth + (with_osd ? " OSD=1 " : " ") + "EXTRA_CONF='" + extra_conf + "' " +
                          std::string(BYPASS_CEPH_MON_UP) + " " + dir + " auto " + ip + " 2>&1");
    conf = dir + "/ceph.conf";
    if (out.find(conf) != std::string::npos) port = mon_port(conf);
    up = port > 0;
    if (up && with_osd) {
      std::ifstream in(dir + "/osd.addr");
      std::getline(in, osd_addr);
      up = !osd_addr.empty();
    }
    if (!up) std::fprintf(stderr, "monitor start failed:\n%s\n", out.c_str());
  }
  // The port of the "mon host = v2:IP:PORT" line of `conf_path`, or 0.
  static int mon_port(const std::string& conf_path) {
    std::ifstream in(conf_path);
    const std::string key = "mon host = v2:";
    for (std::string line; std::getline(in, line);)
      if (line.rfind(key, 0) == 0) return std::atoi(line.c_str() + line.rfind(':') + 1);
    return 0;
  }
  ~Mon() {
    for (const char* daemon : {"/osd.pid", "/mon.pid"}) {
      std::ifstream pidfile(dir + daemon);
      pid_t pid = 0;
      if (pidfile >> pid && pid > 0) {
        ::kill(pid, SIGTERM);
        for (int i = 0; i < 50 && ::kill(pid, 0) == 0; ++i) std::this_thread::sleep_for(100ms);
        if (::kill(pid, 0) == 0) ::kill(pid, SIGKILL);
      }
    }
    run("rm -rf " + dir);
  }
  std::string msgr2_addr() const { return "v2:" + host + ":" + std::to_string(port); }
  std::string keyring() const { return dir + "/keyring"; }
  std::string osd_addr;
};

// Records the type of every message the server receives.
class MessageTypeCollector : public Dispatcher {
 public:
  bool ms_dispatch(const MessageRef& m) override {
    std::lock_guard<std::mutex> guard(lock);
    types.push_back(m->type());
    cv.notify_all();
    return true;
  }
  std::mutex lock;
  std::condition_variable cv;
  std::vector<uint16_t> types;
};

config::Config conf_for_interop() {
  config::Config conf;
  conf.apply_environment();
  conf.set("ms.workers", "1");
  return conf;
}

// One monitor for the probe tests (starting one takes seconds), with the versions the ceph CLI
// reports, which every probe must match.
class MonProbe : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    mon_ = new Mon();
    if (!mon_->up) return;
    // A fresh cluster has monmap and osdmap both at epoch 1; two osdmap changes make them differ,
    // so a probe that mixed up its two answers would fail.
    run("timeout 20 ceph -c " + mon_->conf + " osd set noout >/dev/null 2>&1");
    run("timeout 20 ceph -c " + mon_->conf + " osd unset noout >/dev/null 2>&1");
    monmap_epoch_ = json_epoch(run("timeout 20 ceph -c " + mon_->conf + " mon dump -f json 2>/dev/null"));
    osdmap_epoch_ = json_epoch(run("timeout 20 ceph -c " + mon_->conf + " osd dump -f json 2>/dev/null"));
  }
  static void TearDownTestSuite() {
    delete mon_;
    mon_ = nullptr;
  }
  void SetUp() override {
    ASSERT_TRUE(mon_->up);
    ASSERT_NE(monmap_epoch_, UINT64_MAX) << "ceph mon dump gave no epoch";
    ASSERT_NE(osdmap_epoch_, UINT64_MAX) << "ceph osd dump gave no epoch";
    ASSERT_NE(monmap_epoch_, osdmap_epoch_) << "the osdmap changes did not take";
  }
  static Mon* mon_;
  static uint64_t monmap_epoch_;
  static uint64_t osdmap_epoch_;
};
Mon* MonProbe::mon_ = nullptr;
uint64_t MonProbe::monmap_epoch_ = UINT64_MAX;
uint64_t MonProbe::osdmap_epoch_ = UINT64_MAX;

TEST_F(MonProbe, MonitorAnswersMonGetVersion) {
  EntityAddr mon_addr;
  ASSERT_TRUE(EntityAddr::parse(mon_->msgr2_addr(), &mon_addr));
  const MonVersionProbeResult result = probe_mon_versions(conf_for_interop(), mon_addr, 20s);
  ASSERT_TRUE(result.ok) << result.error;
  EXPECT_EQ(result.versions.monmap, monmap_epoch_);
  EXPECT_EQ(result.versions.osdmap, osdmap_epoch_);
  std::printf("monmap epoch %llu, osdmap epoch %llu via Bypass\n",
              static_cast<unsigned long long>(result.versions.monmap),
              static_cast<unsigned long long>(result.versions.osdmap));
}

TEST_F(MonProbe, BenchToolPrintsTheMonitorsVersions) {
  const CommandResult bench = run_with_status(std::string("timeout 60 ") + BYPASS_BENCH +
                                              " --set ms.workers=1 ceph-mon-version --mon " +
                                              mon_->msgr2_addr() + " --timeout 20s");
  EXPECT_EQ(bench.status, 0) << bench.out;
  EXPECT_EQ(bench.out, "monmap " + std::to_string(monmap_epoch_) + "\nosdmap " + std::to_string(osdmap_epoch_) + "\n");
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST_F(MonProbe, BenchToolMeasuresTheMonitorsRequestRate) {
  const std::string dir = mon_->dir + "/rate";
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  const std::string bench = std::string("timeout 60 ") + BYPASS_BENCH + " --set ms.workers=1 ceph-mon-version --mon " +
                            mon_->msgr2_addr() + " --timeout 20s";
  // A count run is exact in its number of replies; a duration run takes per-second samples.
  const CommandResult counted = run_with_status(bench + " --count 3000 --depth 4 --output " + dir + "/count.json");
  ASSERT_EQ(counted.status, 0) << counted.out;
  EXPECT_NE(counted.out.find("requests/s"), std::string::npos) << counted.out;
  const CommandResult timed =
      run_with_status(bench + " --duration 2s --warmup 200ms --output " + dir + "/duration.json");
  ASSERT_EQ(timed.status, 0) << timed.out;

  const JsonValue count_doc = JsonValue::parse(read_file(dir + "/count.json"));
  EXPECT_EQ(count_doc.at("schema").get<std::string>(), "bypass-bench/1");
  EXPECT_EQ(count_doc.at("config").at("ms.workers").get<std::string>(), "1");
  ASSERT_EQ(count_doc.at("cases").size(), 1u);
  const JsonValue& c = count_doc.at("cases").at(0);
  EXPECT_EQ(c.at("transport").get<std::string>(), "posix");
  EXPECT_EQ(c.at("mode").get<std::string>(), "reqrep");
  EXPECT_EQ(c.at("iodepth").get<uint64_t>(), 4u);
  EXPECT_EQ(c.at("message_size").get<uint64_t>(), 18u);  // handle (8) + "osdmap" as a Ceph string (4 + 6)
  EXPECT_EQ(c.at("totals").at("messages").get<uint64_t>(), 3000u);
  EXPECT_EQ(c.at("totals").at("errors").get<uint64_t>(), 0u);
  const JsonValue& latency = c.at("latency_us");
  EXPECT_GT(latency.at("p50").get<double>(), 0.0);
  EXPECT_LE(latency.at("p50").get<double>(), latency.at("p99").get<double>());
  EXPECT_LE(latency.at("p99").get<double>(), latency.at("max").get<double>());
  EXPECT_DOUBLE_EQ(latency.at("cdf").back().at(1).get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(latency.at("cdf").back().at(0).get<double>(), latency.at("max").get<double>());
  EXPECT_GT(c.at("cpu").at("client").at("process_seconds").get<double>(), 0.0);

  const JsonValue duration_doc = JsonValue::parse(read_file(dir + "/duration.json"));
  const JsonValue& d = duration_doc.at("cases").at(0);
  // At least the asked-for time; the loop notices the end within 50 ms, a loaded machine later.
  EXPECT_GE(d.at("seconds").get<double>(), 2.0);
  EXPECT_LT(d.at("seconds").get<double>(), 5.0);
  EXPECT_GE(d.at("samples").size(), 2u);
  EXPECT_GT(d.at("totals").at("messages").get<uint64_t>(), 0u);

  // The two files side by side, and plotted.
  const CommandResult compared = run_with_status(std::string("timeout 20 ") + BYPASS_BENCH + " compare " + dir +
                                                 "/count.json " + dir + "/duration.json --plot " + dir + "/plot.svg");
  ASSERT_EQ(compared.status, 0) << compared.out;
  EXPECT_NE(compared.out.find("ceph-mon posix d4 [baseline]"), std::string::npos) << compared.out;
  EXPECT_NE(compared.out.find("ceph-mon posix d1"), std::string::npos) << compared.out;
  EXPECT_NE(read_file(dir + "/plot.svg").find("data-case=\"ceph-mon posix d1\""), std::string::npos);
}

// Records `scenarios` between the ceph CLI and the monitor of `conf_var`=ceph.conf with capture.sh,
// then checks them as msgr-ceph-frames checks the committed capture (ceph_frames_check.h).
void check_fresh_capture(const Mon& mon, const std::string& conf_var, const std::vector<std::string>& scenarios) {
  const std::string dir = mon.dir + "/frames";
  std::string names;
  for (const auto& s : scenarios) names += " " + s;
  const CommandResult captured =
      run_with_status(conf_var + "=" + mon.conf + " " + BYPASS_CEPH_FRAMES_CAPTURE + " " + dir + names + " 2>&1");
  if (captured.status == 77) GTEST_SKIP() << captured.out;
  ASSERT_EQ(captured.status, 0) << captured.out;
  for (const auto& s : scenarios) {
    SCOPED_TRACE(s);
    test::check_ceph_capture(s, test::load_ceph_capture(dir, s));
  }
}

TEST_F(MonProbe, FramesCephSendsAreReadAndReproduced) { check_fresh_capture(*mon_, "NONE_CONF", {"none-crc"}); }

// A monitor that requires cephx (auth * required = cephx) and the admin keyring ceph-authtool made.
class CephxMonProbe : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    mon_ = new Mon("cephx");
    if (!mon_->up) return;
    // As in MonProbe: make the two epochs differ so mixed-up answers show.
    run("timeout 20 ceph -c " + mon_->conf + " osd set noout >/dev/null 2>&1");
    run("timeout 20 ceph -c " + mon_->conf + " osd unset noout >/dev/null 2>&1");
    monmap_epoch_ = json_epoch(run("timeout 20 ceph -c " + mon_->conf + " mon dump -f json 2>/dev/null"));
    osdmap_epoch_ = json_epoch(run("timeout 20 ceph -c " + mon_->conf + " osd dump -f json 2>/dev/null"));
  }
  static void TearDownTestSuite() {
    delete mon_;
    mon_ = nullptr;
  }
  void SetUp() override {
    ASSERT_TRUE(mon_->up);
    ASSERT_NE(monmap_epoch_, UINT64_MAX) << "ceph mon dump gave no epoch";
    ASSERT_NE(osdmap_epoch_, monmap_epoch_) << "the osdmap changes did not take";
  }
  // bypass-bench ceph-mon-version with `settings` (--set ...) against the cephx monitor.
  static CommandResult bench(const std::string& settings) {
    return run_with_status(std::string("timeout 60 ") + BYPASS_BENCH + " --set ms.workers=1 " + settings +
                           " ceph-mon-version --mon " + mon_->msgr2_addr() + " --timeout 20s 2>&1");
  }
  static std::string cephx(const std::string& keyring) { return "--set ms.auth=cephx --set ms.keyring=" + keyring; }
  static Mon* mon_;
  static uint64_t monmap_epoch_;
  static uint64_t osdmap_epoch_;
};
Mon* CephxMonProbe::mon_ = nullptr;
uint64_t CephxMonProbe::monmap_epoch_ = UINT64_MAX;
uint64_t CephxMonProbe::osdmap_epoch_ = UINT64_MAX;

TEST_F(CephxMonProbe, BenchToolAuthenticatesWithTheAdminKeyringInCrcAndSecureMode) {
  const std::string want =
      "monmap " + std::to_string(monmap_epoch_) + "\nosdmap " + std::to_string(osdmap_epoch_) + "\n";
  for (const char* mode : {"crc", "secure"}) {
    const CommandResult r = bench(cephx(mon_->keyring()) + " --set ms.mode=" + mode);
    EXPECT_EQ(r.status, 0) << mode << ": " << r.out;
    EXPECT_EQ(r.out, want) << mode;
  }
}

// In process, so the messenger's counters show which mode the session really used.
// "mon-secure" is ms.mode=crc with ms.mon_client_mode=secure: secure to monitors, crc elsewhere.
TEST_F(CephxMonProbe, SecureModeIsWhatTheSessionUses) {
  for (const char* mode : {"crc", "secure", "mon-secure"}) {
    config::Config conf = conf_for_interop();
    conf.set("ms.auth", "cephx");
    conf.set("ms.keyring", mon_->keyring());
    const bool mon_secure = std::string(mode) == "mon-secure";
    conf.set("ms.mode", mon_secure ? "crc" : mode);
    if (mon_secure) conf.set("ms.mon_client_mode", "secure");
    EntityAddr addr;
    ASSERT_TRUE(EntityAddr::parse(mon_->msgr2_addr(), &addr));
    MessageTypeCollector d;
    MonClient client = connect_mon_client(conf, addr, d);
    ASSERT_NE(client.messenger, nullptr) << client.error;
    client.connection->send_message(std::make_shared<MonGetVersion>(1, "osdmap"));
    {
      std::unique_lock<std::mutex> guard(d.lock);
      d.cv.wait_for(guard, 20s, [&] { return !d.types.empty(); });
      ASSERT_EQ(d.types.size(), 1u) << mode << ": " << client.connection->last_fault();
      EXPECT_EQ(d.types.front(), kMsgMonGetVersionReply);
    }
    const std::string perf = client.messenger->perf_dump_json();
    EXPECT_NE(perf.find(std::string("\"links_secure\":") + (std::string(mode) == "crc" ? "0" : "1")), std::string::npos)
        << mode << ": " << perf;
    client.messenger->shutdown();
    client.messenger->wait();
  }
}

TEST_F(CephxMonProbe, FramesCephSendsAreReadAndReproduced) {
  check_fresh_capture(*mon_, "CEPHX_CONF", {"cephx-crc", "cephx-secure", "bad-method"});
}

TEST_F(CephxMonProbe, WrongKeyFailsSayingTheMonitorRejectedIt) {
  const std::string keyring = mon_->dir + "/wrong.keyring";
  ASSERT_EQ(run_with_status("ceph-authtool --create-keyring " + keyring + " --gen-key -n client.admin").status, 0);
  const CommandResult r = bench(cephx(keyring));
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("cephx: the monitor rejected client.admin's key"), std::string::npos) << r.out;
}

TEST_F(CephxMonProbe, UnknownNameFailsNamingIt) {
  const std::string keyring = mon_->dir + "/nobody.keyring";
  ASSERT_EQ(run_with_status("ceph-authtool --create-keyring " + keyring + " --gen-key -n client.nobody").status, 0);
  const CommandResult r = bench(cephx(keyring) + " --set ms.auth_name=client.nobody");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("cephx: the monitor rejected client.nobody's key"), std::string::npos) << r.out;
  // A name the keyring itself lacks is caught before the monitor is asked.
  const CommandResult missing = bench(cephx(keyring));
  EXPECT_EQ(missing.status, 1) << missing.out;
  EXPECT_NE(missing.out.find("has no key for client.admin"), std::string::npos) << missing.out;
}

// Issue 13 item 8: the monitor refuses our method; the error says what it wants and what we had.
TEST_F(CephxMonProbe, AuthNoneAgainstACephxMonitorSaysWhatItRequires) {
  const CommandResult none = bench("");
  EXPECT_EQ(none.status, 1) << none.out;
  EXPECT_NE(none.out.find("the monitor requires cephx; Bypass was configured with none"), std::string::npos)
      << none.out;
  const CommandResult shared = bench("--set ms.auth=shared_secret --set ms.secret=x");
  EXPECT_NE(shared.out.find("the monitor requires cephx; Bypass was configured with shared_secret"),
            std::string::npos)
      << shared.out;
}

// A real ceph-osd (memstore) in a cephx cluster: the client gets the OSD's ticket from the
// monitor (and renews it with GET_PRINCIPAL_SESSION_KEY), the OSD challenges the authorizer built
// from it and answers SERVER_IDENT.
TEST(CephxOsd, OsdAcceptsTheAuthorizerAndAnswersServerIdent) {
  if (std::system("command -v ceph-osd >/dev/null 2>&1") != 0) GTEST_SKIP() << "ceph-osd is not installed";
  Mon cluster("cephx", true);
  ASSERT_TRUE(cluster.up);
  for (const char* mode : {"crc", "secure"}) {
    const CommandResult r = run_with_status(std::string("timeout 60 ") + BYPASS_BENCH +
                                            " --set ms.workers=1 --set ms.auth=cephx --set ms.keyring=" +
                                            cluster.keyring() + " --set ms.mode=" + mode + " ceph-mon-version --mon " +
                                            cluster.msgr2_addr() + " --osd " + cluster.osd_addr + " --timeout 20s 2>&1");
    EXPECT_EQ(r.status, 0) << mode << ": " << r.out;
    // The OSD ticket is renewed on the monitor session first, and the OSD accepts the renewed one.
    EXPECT_NE(r.out.find("osd ticket renewed (cephx GET_PRINCIPAL_SESSION_KEY)\nosd.0 " + cluster.osd_addr +
                         ": session established (SERVER_IDENT)"),
              std::string::npos)
        << mode << ": " << r.out;
  }
  // Auth none against the cephx OSD fails first at the monitor; the client says what it wants.
  const CommandResult none = run_with_status(std::string("timeout 60 ") + BYPASS_BENCH +
                                             " --set ms.workers=1 ceph-mon-version --mon " + cluster.msgr2_addr() +
                                             " --osd " + cluster.osd_addr + " --timeout 20s 2>&1");
  EXPECT_NE(none.out.find("the monitor requires cephx"), std::string::npos) << none.out;
}

// An IPv6-only cluster (Ceph's ms_bind_ipv6, monitor and OSD on [::1]): the bench tool reaches
// the monitor and the OSD at their IPv6 addresses, authenticates with cephx and talks secure mode.
TEST(CephxOsd, IPv6OnlyClusterAnswersOverIPv6) {
  if (std::system("command -v ceph-osd >/dev/null 2>&1") != 0) GTEST_SKIP() << "ceph-osd is not installed";
  Mon cluster("cephx", true, "", "-v6", "::1");
  ASSERT_TRUE(cluster.up);
  ASSERT_EQ(cluster.osd_addr.rfind("v2:[::1]:", 0), 0u) << cluster.osd_addr;
  const CommandResult r = run_with_status(std::string("timeout 60 ") + BYPASS_BENCH +
                                          " --set ms.workers=1 --set ms.auth=cephx --set ms.keyring=" +
                                          cluster.keyring() + " --set ms.mode=secure ceph-mon-version --mon " +
                                          cluster.msgr2_addr() + " --osd " + cluster.osd_addr + " --timeout 20s 2>&1");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("monmap "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("osd.0 " + cluster.osd_addr + ": session established (SERVER_IDENT)"), std::string::npos)
      << r.out;
}

// A counter of Messenger::perf_dump_json(); -1 when it has none of that name.
long perf_counter(const std::string& perf, const std::string& name) {
  const JsonValue counters = JsonValue::parse(perf).at("counters");
  return counters.contains(name) ? counters[name].get<long>() : -1L;
}

double seconds_between(std::chrono::system_clock::time_point from, std::chrono::system_clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// A real monitor whose auth tickets live 16 s (`auth mon ticket ttl`; Ceph's default is 12 h) and
// its secret for them rotates as often. One client session is kept past the first auth ticket's
// expiry: the client renews the auth ticket on that session at half-life (GET_AUTH_SESSION_KEY
// with the old ticket, as MonClient::_check_auth_tickets does), each renewed ticket valid the
// monitor's auth ttl (a ticket asked for through GET_PRINCIPAL_SESSION_KEY would be valid the
// service ttl, 1 h), and after the first ticket's expiry the monitor still hands out service
// tickets for the renewed one.
TEST(CephxAuthTicket, RealMonitorRenewsItOnTheSessionPastItsTtl) {
  constexpr int kAuthTtl = 16;
  Mon cluster("cephx", false, "auth mon ticket ttl = " + std::to_string(kAuthTtl), "-auth-ttl");
  ASSERT_TRUE(cluster.up);
  config::Config conf = conf_for_interop();
  conf.set("ms.auth", "cephx");
  conf.set("ms.keyring", cluster.keyring());
  conf.set("ms.mode", "secure");
  EntityAddr addr;
  ASSERT_TRUE(EntityAddr::parse(cluster.msgr2_addr(), &addr));
  test::AuthReplyCollector d;
  MonClient client = connect_mon_client(conf, addr, d);
  ASSERT_NE(client.messenger, nullptr) << client.error;
  client.connection->send_message(std::make_shared<MonGetVersion>(1, "osdmap"));
  auto store = client.messenger->cephx_tickets();
  ASSERT_NE(store, nullptr);
  for (int i = 0; i < 200 && !store->get(auth::kServiceAuth); ++i) std::this_thread::sleep_for(100ms);
  const auto first = store->get(auth::kServiceAuth);
  ASSERT_TRUE(first.has_value()) << client.connection->last_fault();
  const auto start = std::chrono::system_clock::now();
  const uint64_t global_id = store->global_id();
  EXPECT_NEAR(2 * seconds_between(first->renew_after, first->expires), kAuthTtl, 1.0);

  // 3 s past the first auth ticket's expiry (renewed at 8 s and 16 s by then).
  std::this_thread::sleep_until(first->expires + 3s);
  ASSERT_TRUE(client.connection->is_connected()) << client.connection->last_fault();
  const auto renewed = store->get(auth::kServiceAuth);
  ASSERT_TRUE(renewed.has_value());
  const auto now = std::chrono::system_clock::now();
  const std::string perf = client.messenger->perf_dump_json();
  std::printf("auth ticket: the first (secret_id %llu) expired %.1f s after the session began; the one held %.1f s "
              "after it (secret_id %llu) expires %.1f s later, valid %.1f s; %ld renewals on the session\n",
              static_cast<unsigned long long>(first->secret_id), seconds_between(start, first->expires),
              seconds_between(start, now), static_cast<unsigned long long>(renewed->secret_id),
              seconds_between(now, renewed->expires), 2 * seconds_between(renewed->renew_after, renewed->expires),
              perf_counter(perf, "cephx_auth_renewals"));
  EXPECT_GT(renewed->expires, now);
  EXPECT_GT(renewed->expires, first->expires + 5s);
  EXPECT_NE(renewed->blob, first->blob);
  EXPECT_NEAR(2 * seconds_between(renewed->renew_after, renewed->expires), kAuthTtl, 1.0)
      << "the auth ticket held is not one GET_AUTH_SESSION_KEY renewed (valid the auth mon ticket ttl)";
  EXPECT_GE(perf_counter(perf, "cephx_auth_renewals"), 2) << perf;
  EXPECT_EQ(store->global_id(), global_id);

  // A service ticket renewal with the renewed auth ticket, after the first one expired.
  const size_t seen = d.count();
  const auto auth_ticket = store->get(auth::kServiceAuth);
  constexpr uint32_t kServiceOsd = 0x04;
  client.connection->send_message(std::make_shared<MonAuth>(
      wire::kAuthCephx, auth::principal_request(*auth_ticket, store->global_id(), kServiceOsd)));
  std::shared_ptr<MonAuthReply> reply = d.wait_reply(auth::kCephxGetPrincipalSessionKey, seen, 20s);
  ASSERT_NE(reply, nullptr) << "no answer to GET_PRINCIPAL_SESSION_KEY";
  ASSERT_EQ(reply->result, 0) << reply->result_msg;
  const auto tickets = auth::principal_reply(reply->result_bl, auth_ticket->session_key);
  ASSERT_EQ(tickets.size(), 1u);
  EXPECT_EQ(tickets[0].service_id, kServiceOsd);
  EXPECT_GT(tickets[0].expires, std::chrono::system_clock::now() + 60s);
  EXPECT_GT(std::chrono::system_clock::now(), first->expires);

  // GET_PRINCIPAL_SESSION_KEY hands out no auth ticket, even when asked for one (what Bypass
  // clients did before they renewed it with GET_AUTH_SESSION_KEY, so their auth ticket expired);
  // a Bypass server answers the same way.
  const size_t seen_again = d.count();
  client.connection->send_message(std::make_shared<MonAuth>(
      wire::kAuthCephx, auth::principal_request(*auth_ticket, store->global_id(), auth::kServiceAuth | kServiceOsd)));
  reply = d.wait_reply(auth::kCephxGetPrincipalSessionKey, seen_again, 20s);
  ASSERT_NE(reply, nullptr) << "no answer to GET_PRINCIPAL_SESSION_KEY for auth and osd";
  ASSERT_EQ(reply->result, 0) << reply->result_msg;
  const auto asked_auth = auth::principal_reply(reply->result_bl, auth_ticket->session_key);
  ASSERT_EQ(asked_auth.size(), 1u);
  EXPECT_EQ(asked_auth[0].service_id, kServiceOsd);
  client.messenger->shutdown();
  client.messenger->wait();
}

// A port nothing listens on: the probe must fail fast with a reason, not wait out its timeout.
TEST(MonVersionProbe, ClosedPortFailsFastWithAReason) {
  EntityAddr closed;
  ASSERT_TRUE(EntityAddr::parse("v2:127.0.0.1:1", &closed));
  const auto started = std::chrono::steady_clock::now();
  const MonVersionProbeResult result = probe_mon_versions(conf_for_interop(), closed, 20s);
  EXPECT_FALSE(result.ok);
  EXPECT_NE(result.error.find("refused"), std::string::npos) << result.error;
  EXPECT_LT(std::chrono::steady_clock::now() - started, 10s);
}

TEST(CephInterop, CephCliHandshakesWithBypassServer) {
  MessageTypeCollector d;
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

// The ceph CLI authenticates with cephx against a Bypass server holding its keyring (monitor-style),
// in secure mode (the CLI's default preference for monitors), then sends its first message.
TEST(CephInterop, CephCliCompletesCephxWithBypassServer) {
  const std::string dir = "/tmp/bypass-msgr-interop-cli-" + std::to_string(::getpid());
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  const std::string keyring = dir + "/keyring";
  ASSERT_EQ(run_with_status("ceph-authtool --create-keyring " + keyring + " --gen-key -n client.admin").status, 0);
  MessageTypeCollector d;
  config::Config conf = conf_for_interop();
  conf.set("ms.auth", "cephx");
  conf.set("ms.keyring", keyring);
  auto msgr = Messenger::create(conf, EntityName{EntityType::Mon, 0});
  msgr->set_default_policy(Policy::stateless_server());
  msgr->add_dispatcher(&d);
  EntityAddr addr;
  ASSERT_TRUE(EntityAddr::parse("v2:127.0.0.1:0", &addr));
  ASSERT_EQ(msgr->bind(addr), 0);
  ASSERT_EQ(msgr->start(), 0);
  EntityAddr bound = msgr->my_addrs().addrs.at(0);
  std::string cmd = "timeout 20 ceph -c /dev/null --no-mon-config -m v2:127.0.0.1:" + std::to_string(bound.port()) +
                    " --keyring " + keyring + " -n client.admin --auth-client-required cephx --connect-timeout 5 -s 2>&1";
  std::thread cli([&] { run(cmd); });
  {
    std::unique_lock<std::mutex> guard(d.lock);
    d.cv.wait_for(guard, 20s, [&] { return !d.types.empty(); });
    ASSERT_FALSE(d.types.empty()) << msgr->perf_dump_json();
    std::printf("ceph CLI's first message after cephx: type %u\n", d.types.front());
  }
  const std::string perf = msgr->perf_dump_json();
  EXPECT_NE(perf.find("\"handshake_failures\":0"), std::string::npos) << perf;
  EXPECT_NE(perf.find("\"links_secure\":1"), std::string::npos) << perf;
  msgr->shutdown();
  cli.join();
  run("rm -rf " + dir);
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

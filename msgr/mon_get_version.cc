#include "msgr/mon_get_version.h"

#include <condition_variable>
#include <exception>
#include <map>
#include <memory>
#include <mutex>

#include "msgr/mon_auth.h"
#include "msgr/policy.h"
#include "msgr/auth/cephx_client.h"
#include "msgr/wire/control_frames.h"
#include "msgr/wire/codec.h"

namespace bypass::msgr {

MonGetVersion::MonGetVersion(uint64_t handle, std::string what)
    : Message(kMsgMonGetVersion), handle_(handle), what_(std::move(what)) {}

void MonGetVersion::encode_payload(uint64_t) {
  wire::Encoder enc(front());
  enc.u64(handle_);
  enc.blob(what_);
}

MonGetVersionReply::MonGetVersionReply() : Message(kMsgMonGetVersionReply, 2, 1) {}

void MonGetVersionReply::decode_payload() {
  std::string bytes = front().to_string();
  wire::Decoder dec(bytes, "MMonGetVersionReply");
  handle = dec.u64("handle");
  version = dec.u64("version");
  if (dec.remaining() >= 8) oldest_version = dec.u64("oldest_version");
}

namespace {

constexpr uint64_t kMonmapHandle = 1;
constexpr uint64_t kOsdmapHandle = 2;

// Collects the two replies, and the first connection failure so the probe can stop waiting early
// and say why instead of reporting a bare timeout.
class VersionReplyCollector : public Dispatcher {
 public:
  bool ms_dispatch(const MessageRef& m) override {
    if (auto auth = std::dynamic_pointer_cast<MonAuthReply>(m)) {
      std::lock_guard<std::mutex> guard(lock_);
      auth_reply_ = auth;
      changed_.notify_all();
      return true;
    }
    auto reply = std::dynamic_pointer_cast<MonGetVersionReply>(m);
    if (!reply) return false;
    std::lock_guard<std::mutex> guard(lock_);
    versions_[reply->handle] = reply->version;
    changed_.notify_all();
    return true;
  }
  bool ms_handle_refused(const ConnectionRef&) override {
    record_failure("connection refused");
    return true;
  }
  void ms_handle_connect(const ConnectionRef& con) override {
    std::lock_guard<std::mutex> guard(lock_);
    if (con && con->peer_name().type == EntityType::Osd) osd_ = con->peer_name().to_string();
    changed_.notify_all();
  }
  std::shared_ptr<MonAuthReply> wait_auth_reply(std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> guard(lock_);
    changed_.wait_for(guard, timeout, [&] { return auth_reply_ || !failure_.empty(); });
    return auth_reply_;
  }
  // The OSD session: true once its SERVER_IDENT arrived (name in *osd), false on a failure or timeout.
  bool wait_osd(std::chrono::milliseconds timeout, std::string* osd, std::string* failure) {
    std::unique_lock<std::mutex> guard(lock_);
    changed_.wait_for(guard, timeout, [&] { return !osd_.empty() || !failure_.empty(); });
    *osd = osd_;
    *failure = failure_;
    return !osd_.empty();
  }
  bool ms_handle_reset(const ConnectionRef& con) override {
    // A failed handshake says why itself (the monitor wants another auth method, rejected our
    // key, ...); anything else is a drop.
    const std::string why = con ? con->last_fault() : std::string();
    record_failure(why.rfind("handshake failed", 0) == 0 ? why : "connection dropped before the monitor answered");
    return true;
  }

  // True when both versions arrived; false on a connection failure or when `timeout` passed.
  bool wait(std::chrono::milliseconds timeout, MonMapVersions* out, std::string* failure) {
    std::unique_lock<std::mutex> guard(lock_);
    changed_.wait_for(guard, timeout, [&] { return have_both() || !failure_.empty(); });
    if (!have_both()) {
      *failure = failure_;
      return false;
    }
    out->monmap = versions_.at(kMonmapHandle);
    out->osdmap = versions_.at(kOsdmapHandle);
    return true;
  }

 private:
  bool have_both() const { return versions_.count(kMonmapHandle) && versions_.count(kOsdmapHandle); }
  void record_failure(const std::string& why) {
    std::lock_guard<std::mutex> guard(lock_);
    if (failure_.empty()) failure_ = why;
    changed_.notify_all();
  }

  std::mutex lock_;
  std::condition_variable changed_;
  std::map<uint64_t, uint64_t> versions_;  // handle -> version
  std::string failure_;
  std::string osd_;
  std::shared_ptr<MonAuthReply> auth_reply_;
};

// GET_PRINCIPAL_SESSION_KEY for the OSD service in an MAuth on the monitor session; the new ticket
// replaces the one in the messenger's store. Returns why it failed, or "".
std::string renew_osd_ticket(Messenger& messenger, const ConnectionRef& mon, VersionReplyCollector& collector,
                             std::chrono::milliseconds timeout) {
  auto store = messenger.cephx_tickets();
  std::optional<auth::CephxTicket> auth_ticket = store->get(auth::kServiceAuth);
  if (!auth_ticket) return "cephx: no auth ticket to ask for service tickets with";
  constexpr uint32_t kServiceOsd = 0x04;
  mon->send_message(std::make_shared<MonAuth>(
      wire::kAuthCephx, auth::principal_request(*auth_ticket, store->global_id(), kServiceOsd)));
  std::shared_ptr<MonAuthReply> reply = collector.wait_auth_reply(timeout);
  if (!reply) return "no answer to GET_PRINCIPAL_SESSION_KEY within " + config::format_duration(timeout);
  if (reply->result != 0)
    return "cephx: the monitor refused service tickets (result " + std::to_string(reply->result) + ": " +
           reply->result_msg + ")";
  try {
    for (const auto& t : auth::principal_reply(reply->result_bl, auth_ticket->session_key)) store->put(t);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

MonClient connect_mon_client(const config::Config& conf, const EntityAddr& mon, Dispatcher& dispatcher) {
  MonClient client;
  try {
    client.messenger = Messenger::create(conf, EntityName{EntityType::Client, -1});
  } catch (const std::exception& e) {
    client.error = std::string("cannot create the messenger: ") + e.what();
    return client;
  }
  client.messenger->set_default_policy(Policy::lossy_client());
  client.messenger->registry().add(kMsgMonGetVersionReply, [] { return std::make_shared<MonGetVersionReply>(); });
  client.messenger->registry().add(kMsgAuthReply, [] { return std::make_shared<MonAuthReply>(); });
  client.messenger->add_dispatcher(&dispatcher);
  if (int r = client.messenger->start(); r != 0) {
    client.error = "cannot start the messenger (error " + std::to_string(r) + ")";
    client.messenger.reset();
    return client;
  }
  client.connection = client.messenger->connect_to(EntityType::Mon, EntityAddrVec{{mon}});
  return client;
}

MonVersionProbeResult probe_mon_versions(const config::Config& conf, const EntityAddr& mon,
                                         std::chrono::milliseconds timeout, const EntityAddr* osd) {
  MonVersionProbeResult result;
  const std::string where = "monitor " + mon.to_string();
  VersionReplyCollector collector;
  MonClient client = connect_mon_client(conf, mon, collector);
  if (!client.messenger) {
    result.error = client.error;
    return result;
  }
  client.connection->send_message(std::make_shared<MonGetVersion>(kMonmapHandle, "monmap"));
  client.connection->send_message(std::make_shared<MonGetVersion>(kOsdmapHandle, "osdmap"));
  std::string failure;
  result.ok = collector.wait(timeout, &result.versions, &failure);
  if (!result.ok) {
    result.error = failure.empty()
                       ? where + " did not answer within " + config::format_duration(timeout)
                       : where + ": " + failure;
  }
  if (result.ok && osd && client.messenger->cephx_tickets()) {
    // Renew the OSD ticket the monitor handed out with the session, as a long-lived client would.
    std::string why = renew_osd_ticket(*client.messenger, client.connection, collector, timeout);
    if (!why.empty()) {
      result.ok = false;
      result.error = where + ": " + why;
    } else {
      result.osd_ticket_renewed = true;
    }
  }
  if (result.ok && osd) {
    client.messenger->connect_to(EntityType::Osd, EntityAddrVec{{*osd}});
    if (!collector.wait_osd(timeout, &result.osd_name, &failure)) {
      result.ok = false;
      result.error = "osd " + osd->to_string() + (failure.empty() ? " did not answer within " +
                                                                      config::format_duration(timeout)
                                                                : ": " + failure);
    }
  }
  client.messenger->shutdown();
  client.messenger->wait();
  return result;
}

}  // namespace bypass::msgr

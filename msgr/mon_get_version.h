// MMonGetVersion / MMonGetVersionReply (Ceph's CEPH_MSG_MON_GET_VERSION{,_REPLY}) and a probe
// that asks a real monitor for its current monmap and osdmap versions. The probe is the smallest
// useful exchange with a Ceph cluster: it needs the msgr2 handshake and one round trip, nothing
// else (the monitor answers it without a session or authentication when auth is "none").
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "config/config.h"
#include "msgr/dispatcher.h"
#include "msgr/entity.h"
#include "msgr/message.h"
#include "msgr/messenger.h"

namespace bypass::msgr {

constexpr uint16_t kMsgMonGetVersion = 19;       // CEPH_MSG_MON_GET_VERSION
constexpr uint16_t kMsgMonGetVersionReply = 20;  // CEPH_MSG_MON_GET_VERSION_REPLY

// MMonGetVersion: front = __le64 handle, string what ("monmap", "osdmap", "mdsmap", ...).
class MonGetVersion : public Message {
 public:
  MonGetVersion(uint64_t handle, std::string what);
  void encode_payload(uint64_t features) override;

 private:
  uint64_t handle_;
  std::string what_;
};

// MMonGetVersionReply (HEAD_VERSION 2): __le64 handle, __le64 version, __le64 oldest_version
// (the last one only from version 2 on).
class MonGetVersionReply : public Message {
 public:
  MonGetVersionReply();
  void decode_payload() override;

  uint64_t handle = 0;
  uint64_t version = 0;
  uint64_t oldest_version = 0;
};

struct MonMapVersions {
  uint64_t monmap = 0;
  uint64_t osdmap = 0;
};

struct MonVersionProbeResult {
  bool ok = false;
  MonMapVersions versions;  // valid when ok
  std::string error;        // one line saying what failed, when !ok
  std::string osd_name;     // with an OSD to visit: the name its SERVER_IDENT gave ("osd.0")
  bool osd_ticket_renewed = false;  // cephx: the OSD ticket came again by GET_PRINCIPAL_SESSION_KEY
};

// A client messenger talking to one monitor: started, with a lossy client policy, the
// MMonGetVersionReply type registered and the caller's dispatcher added.
struct MonClient {
  std::unique_ptr<Messenger> messenger;  // nullptr when it could not be created or started
  ConnectionRef connection;
  std::string error;  // why messenger is nullptr
};

// Builds the messenger from `conf` (ms.type picks the transport) and connects to `mon`. Never
// throws. Shut the messenger down (shutdown(), wait()) before `dispatcher` goes away.
MonClient connect_mon_client(const config::Config& conf, const EntityAddr& mon, Dispatcher& dispatcher);

// Connects to the monitor at `mon` as a client on a messenger built from `conf` (ms.type picks the
// transport: posix, dpdk, ...), asks for the "monmap" and "osdmap" versions and waits at most
// `timeout` for both answers. Never throws: a transport that cannot start, a refused or dropped
// connection and a silent monitor all come back as !ok with the reason.
// With `osd`, the same messenger then opens a session to that OSD and waits for its SERVER_IDENT;
// with cephx it first renews its OSD ticket (GET_PRINCIPAL_SESSION_KEY in an MAuth) and presents
// the authorizer built from the renewed one.
MonVersionProbeResult probe_mon_versions(const config::Config& conf, const EntityAddr& mon,
                                         std::chrono::milliseconds timeout, const EntityAddr* osd = nullptr);

}  // namespace bypass::msgr

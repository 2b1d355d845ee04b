// What a messenger shows on the admin socket (`conns`) and on /metrics (admin::AdminSource).
#include "msgr/async_connection.h"
#include "msgr/async_messenger.h"

namespace bypass::msgr {

void AsyncConnection::write_admin_json(Json& out) const {
  EntityName peer;
  EntityAddrVec addrs;
  {
    std::lock_guard<std::mutex> guard(peer_lock_);
    peer = peer_name_;
    addrs = peer_addrs_;
  }
  const size_t queued = queued_for_admin_.load(std::memory_order_relaxed);
  const Worker* w = worker();
  out.begin_object()
      .field("peer", peer.to_string())
      .field("peer_addrs", addrs.to_string())
      .field("side", client_side_ ? "client" : "server")
      .field("policy", is_lossy() ? "lossy" : "lossless")
      .field("state", is_connected() ? "connected" : "not connected")
      .field("worker", w ? static_cast<int64_t>(w->id()) : int64_t{-1})
      .field("queued_messages", uint64_t{queued})
      .field("in_seq", in_seq_snapshot())
      .end_object();
}

void AsyncMessenger::write_sessions(Json& out) const {
  std::lock_guard<std::mutex> guard(lock_);
  for (const AsyncConnectionRef& con : connections_) con->write_admin_json(out);
}

void AsyncMessenger::write_metrics(admin::MetricsWriter& out, const admin::MetricsWriter::Labels& labels) const {
  admin::MetricsWriter::Labels with_entity = labels;
  with_entity.emplace_back("entity", name_.to_string());
  perf_.for_each([&](const char* name, uint64_t value) {
    out.add(std::string("bypass_msgr_") + name + "_total", admin::MetricsWriter::Type::Counter,
            std::string("Messenger counter ") + name, with_entity, value);
  });
  size_t connections;
  {
    std::lock_guard<std::mutex> guard(lock_);
    connections = connections_.size();
  }
  out.add("bypass_msgr_connections", admin::MetricsWriter::Type::Gauge, "Sessions the messenger tracks", with_entity,
          connections);
  out.add("bypass_msgr_dispatch_throttle_bytes", admin::MetricsWriter::Type::Gauge,
          "Bytes of received messages waiting for or in dispatch", with_entity, dispatch_throttle_.current());
}

}  // namespace bypass::msgr

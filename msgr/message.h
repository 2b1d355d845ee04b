// Message: the unit applications exchange. A typed header (type, priority, tid, version) plus
// three payload parts that travel as separate msgr2 segments: front (the encoded fields), middle
// (rarely used) and data (bulk bytes, kept zero-copy).
//
// Applications either use Message directly (fill front/middle/data) or derive from it and
// register the type with MessageRegistry so received messages come back as their own class
// (encode_payload() runs before sending, decode_payload() after receiving).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "msgr/entity.h"
#include "base/buffer_list.h"

namespace bypass::msgr {

class Connection;
using ConnectionRef = std::shared_ptr<Connection>;

constexpr uint16_t kMsgPriorityLow = 64;
constexpr uint16_t kMsgPriorityDefault = 127;
constexpr uint16_t kMsgPriorityHigh = 196;

class Message {
 public:
  explicit Message(uint16_t type, uint16_t version = 1, uint16_t compat_version = 1)
      : type_(type), version_(version), compat_version_(compat_version) {}
  virtual ~Message() = default;
  Message(const Message&) = delete;
  Message& operator=(const Message&) = delete;

  uint16_t type() const { return type_; }
  uint16_t version() const { return version_; }
  uint16_t compat_version() const { return compat_version_; }
  uint16_t priority() const { return priority_; }
  void set_priority(uint16_t p) { priority_ = p; }
  uint64_t tid() const { return tid_; }
  void set_tid(uint64_t tid) { tid_ = tid; }
  // Sequence number on its connection (set when sent / received).
  uint64_t seq() const { return seq_; }

  BufferList& front() { return front_; }
  BufferList& middle() { return middle_; }
  BufferList& data() { return data_; }
  const BufferList& front() const { return front_; }
  const BufferList& middle() const { return middle_; }
  const BufferList& data() const { return data_; }
  size_t payload_length() const { return front_.length() + middle_.length() + data_.length(); }

  // Fired once, on the connection's worker thread, when the peer acknowledges the message
  // (lossless policies) or it has been handed to the transport (lossy ones). `delivered` is false
  // when the message was dropped (connection reset or marked down).
  void set_completion(std::function<void(bool delivered)> hook) { completion_ = std::move(hook); }

  // Received messages: where they came from.
  const ConnectionRef& connection() const { return connection_; }
  const EntityName& source() const { return source_; }

  // Typed messages: fill front/middle/data from fields, or fields from them.
  virtual void encode_payload(uint64_t /*peer_features*/) {}
  virtual void decode_payload() {}
  virtual std::string name() const { return "msg(" + std::to_string(type_) + ")"; }

 private:
  friend class AsyncConnection;
  uint16_t type_;
  uint16_t version_;
  uint16_t compat_version_;
  uint16_t priority_ = kMsgPriorityDefault;
  uint64_t tid_ = 0;
  uint64_t seq_ = 0;
  BufferList front_, middle_, data_;
  std::function<void(bool)> completion_;
  ConnectionRef connection_;
  EntityName source_;
  bool encoded_ = false;
  // While handed over from another thread (AsyncConnection's lock-free send stack): the link to
  // the next message and the reference that keeps this one alive.
  Message* handover_next_ = nullptr;
  std::shared_ptr<Message> handover_ref_;
};

using MessageRef = std::shared_ptr<Message>;

// Factory of typed messages by type id. Unregistered types arrive as plain Message.
// create() runs for every received message and takes no lock: add() publishes a new immutable
// table (copy on write; types are registered at start-up, so the few old tables are simply kept
// until the registry goes away).
class MessageRegistry {
 public:
  using Factory = std::function<MessageRef()>;
  void add(uint16_t type, Factory factory);
  MessageRef create(uint16_t type, uint16_t version, uint16_t compat) const;

 private:
  using Table = std::map<uint16_t, Factory>;
  std::mutex add_lock_;
  std::vector<std::unique_ptr<const Table>> tables_;  // every published table, newest last
  std::atomic<const Table*> current_{nullptr};
};

}  // namespace bypass::msgr

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
// Connections are shared: a received message keeps its connection alive for the reply.
using ConnectionRef = std::shared_ptr<Connection>;

// Ceph's CEPH_MSG_PRIO_* values for the header's priority field. The field travels to the peer
// for its own use; Bypass sends the messages of one connection in order whatever their priority.
constexpr uint16_t kMsgPriorityLow = 64;       // CEPH_MSG_PRIO_LOW
constexpr uint16_t kMsgPriorityDefault = 127;  // CEPH_MSG_PRIO_DEFAULT
constexpr uint16_t kMsgPriorityHigh = 196;     // CEPH_MSG_PRIO_HIGH

class Message {
 public:
  // `type` selects the receiver's MessageRegistry factory; `version` and `compat_version` go in
  // the header so a receiver knows which encoding of the payload it got (as in Ceph).
  explicit Message(uint16_t type, uint16_t version = 1, uint16_t compat_version = 1)
      : type_(type), version_(version), compat_version_(compat_version) {}
  virtual ~Message() = default;
  Message(const Message&) = delete;
  Message& operator=(const Message&) = delete;

  uint16_t type() const { return type_; }  // the application's message type id
  uint16_t version() const { return version_; }  // encoding version of the payload
  // Oldest encoding version a receiver must understand to decode this payload.
  uint16_t compat_version() const { return compat_version_; }
  uint16_t priority() const { return priority_; }  // one of kMsgPriority*, by default Default
  void set_priority(uint16_t p) { priority_ = p; }  // before sending; see kMsgPriorityDefault
  // Transaction id: chosen by the application, carried unchanged, so a reply can name the
  // request it answers.
  uint64_t tid() const { return tid_; }
  void set_tid(uint64_t tid) { tid_ = tid; }  // before sending
  // Sequence number on its connection (set when sent / received).
  uint64_t seq() const { return seq_; }

  // The three payload segments, to fill before sending or read after receiving. data is for
  // bulk bytes: its buffers are sent and received without copying.
  BufferList& front() { return front_; }
  // see front(); the middle list is made on first use (a message carries one rarely), so a
  // message that has none saves its 144 bytes: fewer cache lines to write when it is made and to
  // read when it goes, which a thousand connections' messages do cold.
  BufferList& middle() { return middle_ ? *middle_ : make_middle(); }
  BufferList& data() { return data_; }  // see front()
  const BufferList& front() const { return front_; }  // see front()
  const BufferList& middle() const { return middle_ ? *middle_ : empty_middle(); }  // see front()
  const BufferList& data() const { return data_; }  // see front()
  // Bytes of front, middle and data together: what the receiver's byte throttles count.
  size_t payload_length() const { return front_.length() + middle().length() + data_.length(); }

  // Fired once, on the connection's worker thread, when the peer acknowledges the message
  // (lossless policies) or it has been handed to the transport (lossy ones). `delivered` is false
  // when the message was dropped (connection reset or marked down).
  void set_completion(std::function<void(bool delivered)> hook) { completion_ = std::move(hook); }

  // Received messages: where they came from.
  const ConnectionRef& connection() const { return connection_; }
  const EntityName& source() const { return source_; }  // the sender's name

  // Typed messages: fill front/middle/data from fields, or fields from them.
  virtual void encode_payload(uint64_t /*peer_features*/) {}
  // Called on the worker thread after receipt; a throw faults the connection (bad payload).
  virtual void decode_payload() {}
  // For logs and errors; typed messages return their own name.
  virtual std::string name() const { return "msg(" + std::to_string(type_) + ")"; }

 private:
  friend class AsyncConnection;
  uint16_t type_;
  uint16_t version_;
  uint16_t compat_version_;
  uint16_t priority_ = kMsgPriorityDefault;
  // Gives the middle list's block back to the pool of the thread that drops the message.
  struct MiddleDeleter {
    void operator()(BufferList* middle) const;
  };
  BufferList& make_middle();
  static const BufferList& empty_middle();

  uint64_t tid_ = 0;
  uint64_t seq_ = 0;
  std::unique_ptr<BufferList, MiddleDeleter> middle_;  // beside the header fields: see middle()
  BufferList front_, data_;
  std::function<void(bool)> completion_;
  ConnectionRef connection_;
  EntityName source_;
  bool encoded_ = false;
  // While handed over from another thread (AsyncConnection's lock-free send stack): the link to
  // the next message and the reference that keeps this one alive.
  Message* handover_next_ = nullptr;
  std::shared_ptr<Message> handover_ref_;
};

// Messages are shared between the application and the connection that sends or received them.
using MessageRef = std::shared_ptr<Message>;

// A new plain Message for the per-message path (a server's reply to each request, a client's
// request per io, every received message of an unregistered type): the message and its reference
// count share one block from the calling thread's block pools (base/pool_allocator.h) rather than
// the heap, and the block goes back to the pool of the thread that drops the last reference. So a
// request/reply loop makes no heap call per message once the pools are warm (malloc's own cache
// holds 7 blocks of a size: a queue depth of 128 freed its replies to the heap's bins). A message
// made on one thread and dropped on another (sent from outside the connection's worker) still
// costs the maker a malloc: its pool never gets the block back.
MessageRef make_message(uint16_t type, uint16_t version = 1, uint16_t compat_version = 1);

// Factory of typed messages by type id. Unregistered types arrive as plain Message.
// create() runs for every received message and takes no lock: add() publishes a new immutable
// table (copy on write; types are registered at start-up, so the few old tables are simply kept
// until the registry goes away).
class MessageRegistry {
 public:
  // Makes an empty message of a registered type, for decode_payload() to fill.
  using Factory = std::function<MessageRef()>;
  // Registers (or replaces) the factory for `type`; thread-safe, meant for start-up.
  void add(uint16_t type, Factory factory);
  // A new message of `type` from its factory, or a plain Message carrying the given header
  // fields when the type is not registered.
  MessageRef create(uint16_t type, uint16_t version, uint16_t compat) const;

 private:
  using Table = std::map<uint16_t, Factory>;
  // First: create() reads only this, and a messenger keeps it beside its other per-message fields.
  std::atomic<const Table*> current_{nullptr};
  std::mutex add_lock_;
  std::vector<std::unique_ptr<const Table>> tables_;  // every published table, newest last
};

}  // namespace bypass::msgr

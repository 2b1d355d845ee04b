// Life cycle of one RDMA connection (the QP plus its TCP side channel), kept separate from the
// verbs calls so the rules can be unit-tested without a device.
//
//   Connecting  -> Handshaking           client: the side-channel TCP connect finished
//   Handshaking -> Established           QP in RTS and the peer confirmed (Reply / Ready)
//   Established -> Draining              close(): wait for posted sends (data, then FIN) to complete
//   any live    -> Failed                refused, timed out, side-channel EOF without FIN, QP error
//   Draining/Failed -> Destroyed         owner closed and every work request completed or flushed
//
// Failed keeps the socket readable so the owner sees the error; Draining and Failed are left only
// when nothing the device may still touch (chunks, held segments) is outstanding.
#pragma once

#include <cstdint>

namespace bypass::rdma {

enum class ConnState : uint8_t { Connecting, Handshaking, Established, Draining, Failed, Destroyed };

constexpr const char* to_string(ConnState s) {
  switch (s) {
    case ConnState::Connecting: return "connecting";
    case ConnState::Handshaking: return "handshaking";
    case ConnState::Established: return "established";
    case ConnState::Draining: return "draining";
    case ConnState::Failed: return "failed";
    case ConnState::Destroyed: return "destroyed";
  }
  return "?";
}

constexpr bool transition_allowed(ConnState from, ConnState to) {
  using S = ConnState;
  switch (from) {
    case S::Connecting: return to == S::Handshaking || to == S::Failed || to == S::Draining;
    case S::Handshaking: return to == S::Established || to == S::Failed || to == S::Draining;
    case S::Established: return to == S::Draining || to == S::Failed;
    case S::Draining: return to == S::Failed || to == S::Destroyed;
    case S::Failed: return to == S::Destroyed;
    case S::Destroyed: return false;
  }
  return false;
}

// Whether the owner may still post data sends in this state.
constexpr bool can_send(ConnState s) { return s == ConnState::Established; }

}  // namespace bypass::rdma

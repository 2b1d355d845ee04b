// msgr2.1 frames: the preamble, up to four segments and the epilogue, in crc mode or secure mode.
//
// Layout (Ceph src/msg/async/frames_v2.{h,cc}, revision 1 "onwire" format):
//   preamble (32 bytes): __u8 tag, __u8 num_segments, 4 x {__le32 length, __le16 alignment},
//                        __u8 flags (bit 0: segments compressed — never set by us, rejected),
//                        __u8 reserved, __le32 crc32c(seed 0) of the 28 bytes before it.
//   crc mode:    preamble | segment0 | __le32 crc32c(-1) of segment0 (only when segment0 is not
//                empty) | segments 1..n-1 | epilogue (only when n > 1):
//                {__u8 late_status, 3 x __le32 crc32c(-1) of segments 1..3}.
//   secure mode: AES-GCM(preamble | first 48 bytes of segment0, zero-padded) + tag
//                | AES-GCM(rest of segment0, padded to 16) + tag (only when segment0 > 48 bytes)
//                | AES-GCM(segments 1..n-1 each padded to 16 | 16-byte epilogue) + tag (n > 1).
// late_status: 0xe complete, 0x1 aborted (the sender gave up on the frame; it is dropped); any other
// value is treated as corruption (senders always write exactly one of the two).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include "msgr/wire/aes_gcm.h"
#include "base/buffer_list.h"

namespace bypass::msgr::wire {

// msgr2.1 frame tags (Ceph src/msg/async/frames_v2.h, enum class Tag).
enum class Tag : uint8_t {
  Hello = 1,
  AuthRequest = 2,
  AuthBadMethod = 3,
  AuthReplyMore = 4,
  AuthRequestMore = 5,
  AuthDone = 6,
  AuthSignature = 7,
  ClientIdent = 8,
  ServerIdent = 9,
  IdentMissingFeatures = 10,
  SessionReconnect = 11,
  SessionReset = 12,
  SessionRetry = 13,
  SessionRetryGlobal = 14,
  SessionReconnectOk = 15,
  Wait = 16,
  Message = 17,
  Keepalive2 = 18,
  Keepalive2Ack = 19,
  Ack = 20,
  CompressionRequest = 21,
  CompressionDone = 22,
};
constexpr uint8_t kFirstTag = 1;
constexpr uint8_t kLastTag = 22;

// Ceph's name of a tag ("CLIENT_IDENT"), as errors and logs print it; "UNKNOWN" for any other
// value. A switch without a default, so a tag added above without a name fails to compile (-Wswitch).
constexpr const char* tag_name(Tag tag) {
  switch (tag) {
    case Tag::Hello: return "HELLO";
    case Tag::AuthRequest: return "AUTH_REQUEST";
    case Tag::AuthBadMethod: return "AUTH_BAD_METHOD";
    case Tag::AuthReplyMore: return "AUTH_REPLY_MORE";
    case Tag::AuthRequestMore: return "AUTH_REQUEST_MORE";
    case Tag::AuthDone: return "AUTH_DONE";
    case Tag::AuthSignature: return "AUTH_SIGNATURE";
    case Tag::ClientIdent: return "CLIENT_IDENT";
    case Tag::ServerIdent: return "SERVER_IDENT";
    case Tag::IdentMissingFeatures: return "IDENT_MISSING_FEATURES";
    case Tag::SessionReconnect: return "SESSION_RECONNECT";
    case Tag::SessionReset: return "SESSION_RESET";
    case Tag::SessionRetry: return "SESSION_RETRY";
    case Tag::SessionRetryGlobal: return "SESSION_RETRY_GLOBAL";
    case Tag::SessionReconnectOk: return "SESSION_RECONNECT_OK";
    case Tag::Wait: return "WAIT";
    case Tag::Message: return "MESSAGE";
    case Tag::Keepalive2: return "KEEPALIVE2";
    case Tag::Keepalive2Ack: return "KEEPALIVE2_ACK";
    case Tag::Ack: return "ACK";
    case Tag::CompressionRequest: return "COMPRESSION_REQUEST";
    case Tag::CompressionDone: return "COMPRESSION_DONE";
  }
  return "UNKNOWN";
}

class FrameError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

constexpr size_t kMaxSegments = 4;
constexpr size_t kPreambleSize = 32;
constexpr size_t kPreambleInlineSize = 48;  // segment-0 bytes carried in the preamble's GCM unit
constexpr size_t kSegmentCrcSize = 4;
constexpr size_t kCrcEpilogueSize = 13;
constexpr size_t kSecureEpilogueSize = 16;
constexpr size_t kCryptoBlock = 16;
constexpr uint8_t kLateStatusAborted = 0x1;
constexpr uint8_t kLateStatusComplete = 0xe;
constexpr uint8_t kLateStatusMask = 0xf;
constexpr uint8_t kPreambleFlagCompressed = 0x1;

// Segment alignments Ceph advertises (the receiver may use them for buffer placement).
constexpr uint16_t kDefaultAlignment = 8;
constexpr uint16_t kPageAlignment = 4096;

// Upper bounds on what a peer may make us buffer, checked as soon as the preamble arrives.
struct FrameLimits {
  uint32_t max_segment = 16u << 20;       // any one of segments 0..2
  uint32_t max_data_segment = 64u << 20;  // segment 3 (message data)
  uint64_t max_frame = 80u << 20;         // sum of all segments
};

struct SegmentDesc {
  uint32_t length = 0;
  uint16_t alignment = kDefaultAlignment;
};

struct Frame {
  Tag tag = Tag::Hello;
  size_t num_segments = 1;
  std::array<BufferList, kMaxSegments> segments;
  std::array<uint16_t, kMaxSegments> alignments{};
  bool aborted = false;  // the sender marked it aborted in the epilogue; drop it
  size_t onwire_length = 0;
};

// Builds on-wire frames. Owned by one connection's sending side.
//
// Small pieces (preamble, segment 0 when short, crcs, epilogue) and, in secure mode, the whole
// ciphertext are written into scratch blocks the assembler owns and hands out as shared views; a
// block is reused once no queued frame refers to it any more, so a connection in steady state
// allocates nothing per frame. Segments 1..3 travel as shared views in crc mode (no copy; those of
// at most 64 bytes are copied next to segment 0, so a small front does not split the frame) and are
// encrypted straight into the scratch block in secure mode (one pass, no staging buffer).
class FrameAssembler {
 public:
  // Switch to secure mode; every later frame is encrypted with `tx`.
  void set_cipher(std::unique_ptr<AesGcmStream> tx) { tx_ = std::move(tx); }
  bool secure() const { return tx_ != nullptr; }
  AesGcmStream* cipher() { return tx_.get(); }

  // Appends the on-wire bytes to `out`. Trailing empty segments are dropped (a frame has at
  // least one segment). Throws CryptoError when the cipher cannot take another frame.
  void assemble(Tag tag, std::span<const BufferList> segments, std::span<const uint16_t> alignments,
                BufferList& out);
  void assemble_control(Tag tag, const BufferList& payload, BufferList& out) {
    const uint16_t align = kDefaultAlignment;
    assemble(tag, std::span<const BufferList>(&payload, 1), std::span<const uint16_t>(&align, 1), out);
  }
  // A control frame whose payload is flat bytes (ACK, KEEPALIVE2: encoded on the stack).
  void assemble_control(Tag tag, std::string_view payload, BufferList& out);
  // A MESSAGE frame: segment 0 is the encoded ceph_msg_header2 (flat bytes, copied), then the
  // message's front, middle and data. Same bytes as assemble() with those four segments.
  void assemble_message(std::string_view header, const BufferList& front, const BufferList& middle,
                        const BufferList& data, BufferList& out);

  // How many scratch blocks were allocated so far (tests: steady state allocates none).
  uint64_t scratch_blocks_allocated() const { return scratch_allocations_; }

 private:
  // One segment's bytes: flat (segment 0 of a MESSAGE) or a BufferList.
  struct Piece {
    std::string_view flat;
    const BufferList* list = nullptr;
    size_t length() const { return list ? list->length() : flat.size(); }
  };
  void assemble_pieces(Tag tag, std::span<const Piece> pieces, std::span<const uint16_t> alignments,
                       BufferList& out);
  void assemble_crc(const char* preamble, std::span<const Piece> pieces, BufferList& out);
  void assemble_secure(const char* preamble, std::span<const Piece> pieces, BufferList& out);
  // `n` writable bytes in a scratch block; `view` shares them for appending to an output list.
  char* scratch(size_t n, BufferSegment* view);

  static constexpr size_t kScratchBlock = 256 * 1024;
  static constexpr size_t kSpareBlocks = 4;
  std::unique_ptr<AesGcmStream> tx_;
  BufferSegment scratch_block_;
  size_t scratch_used_ = 0;
  std::array<BufferSegment, kSpareBlocks> spare_blocks_;
  uint64_t scratch_allocations_ = 0;
};

// Incremental frame parser. Owned by one connection's receiving side.
class FrameReader {
 public:
  explicit FrameReader(FrameLimits limits = {}) : limits_(limits) {}
  void set_cipher(std::unique_ptr<AesGcmStream> rx) { rx_ = std::move(rx); }
  bool secure() const { return rx_ != nullptr; }
  void set_limits(const FrameLimits& limits) { limits_ = limits; }

  // Consumes bytes from the front of `input` (secure mode decrypts them in place: the caller must
  // not share that memory with anyone who still reads the ciphertext). Returns true with one complete, verified frame in
  // *out; false when more bytes are needed (everything usable has been consumed). Throws
  // FrameError (bad crc, unknown tag, bad segment count, oversized segment, bad late status) or
  // CryptoError (authentication failure); after a throw the reader must not be used again.
  bool read(BufferList& input, Frame* out);
  // Bytes the reader needs before it can make progress (for read-size hints).
  size_t wanted() const;

 private:
  void parse_preamble(const char* block);
  void finish_crc(BufferList& input, Frame* out);
  void finish_secure(BufferList& input, Frame* out);
  // Decrypts one sealed unit (ciphertext + tag) in place and drops the tag: the plaintext stays
  // in the same (received) memory, so a secure frame costs no allocation and no copy on receipt.
  void open_in_place(BufferList& unit);
  size_t body_length() const;

  FrameLimits limits_;
  std::unique_ptr<AesGcmStream> rx_;
  bool have_preamble_ = false;
  Tag tag_ = Tag::Hello;
  size_t num_segments_ = 0;
  std::array<SegmentDesc, kMaxSegments> descs_{};
  BufferList inline_;  // secure mode: decrypted 48 bytes of segment 0 from the preamble unit
  BufferList unit_;    // secure mode: the unit being opened (kept for its storage)
};

inline uint32_t pad_to_block(uint32_t len) {
  return static_cast<uint32_t>((uint64_t{len} + kCryptoBlock - 1) / kCryptoBlock * kCryptoBlock);
}

}  // namespace bypass::msgr::wire

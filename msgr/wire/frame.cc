#include "msgr/wire/frame.h"

#include <cstring>

namespace bypass::msgr::wire {

namespace {
constexpr const char* kTagNames[] = {
    "?",
    "HELLO",
    "AUTH_REQUEST",
    "AUTH_BAD_METHOD",
    "AUTH_REPLY_MORE",
    "AUTH_REQUEST_MORE",
    "AUTH_DONE",
    "AUTH_SIGNATURE",
    "CLIENT_IDENT",
    "SERVER_IDENT",
    "IDENT_MISSING_FEATURES",
    "SESSION_RECONNECT",
    "SESSION_RESET",
    "SESSION_RETRY",
    "SESSION_RETRY_GLOBAL",
    "SESSION_RECONNECT_OK",
    "WAIT",
    "MESSAGE",
    "KEEPALIVE2",
    "KEEPALIVE2_ACK",
    "ACK",
    "COMPRESSION_REQUEST",
    "COMPRESSION_DONE",
};

void put_le32(char* at, uint32_t v) {
  for (int i = 0; i < 4; ++i) at[i] = static_cast<char>(v >> (8 * i));
}
void put_le16(char* at, uint16_t v) {
  at[0] = static_cast<char>(v);
  at[1] = static_cast<char>(v >> 8);
}
uint32_t get_le32(const char* at) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t{static_cast<uint8_t>(at[i])} << (8 * i);
  return v;
}
uint16_t get_le16(const char* at) {
  return static_cast<uint16_t>(static_cast<uint8_t>(at[0]) | (static_cast<uint8_t>(at[1]) << 8));
}

void append_zeros(BufferList& bl, size_t n) {
  if (n) std::memset(bl.append_hole(n), 0, n);
}

// Moves the first n bytes of `from` into a contiguous view (copying only when split).
std::string_view take_contiguous(BufferList& from, size_t n, BufferList& holder) {
  holder.clear();
  from.splice_front(n, holder);
  return {holder.c_str(), n};
}
}  // namespace

const char* tag_name(Tag tag) {
  auto v = static_cast<uint8_t>(tag);
  return v >= kFirstTag && v <= kLastTag ? kTagNames[v] : "UNKNOWN";
}

void FrameAssembler::assemble(Tag tag, std::span<const BufferList> segments,
                              std::span<const uint16_t> alignments, BufferList& out) {
  if (segments.empty() || segments.size() > kMaxSegments || alignments.size() < segments.size())
    throw FrameError("frame needs 1 to 4 segments with alignments");
  size_t count = segments.size();
  while (count > 1 && segments[count - 1].empty()) --count;

  char preamble[kPreambleSize] = {};
  preamble[0] = static_cast<char>(tag);
  preamble[1] = static_cast<char>(count);
  for (size_t i = 0; i < count; ++i) {
    put_le32(preamble + 2 + i * 6, static_cast<uint32_t>(segments[i].length()));
    put_le16(preamble + 6 + i * 6, alignments[i]);
  }
  // preamble[26] flags (compression off) and [27] reserved stay zero.
  put_le32(preamble + 28, crc32c(0, preamble, 28));

  if (!tx_) {
    out.append_copy(preamble, sizeof(preamble));
    if (!segments[0].empty()) {
      uint32_t crc = segments[0].crc32c(0xffffffffu);
      out.append(segments[0]);
      char crc_bytes[4];
      put_le32(crc_bytes, crc);
      out.append_copy(crc_bytes, 4);
    }
    if (count == 1) return;
    char epilogue[kCrcEpilogueSize] = {};
    epilogue[0] = static_cast<char>(kLateStatusComplete);
    for (size_t i = 1; i < count; ++i) {
      put_le32(epilogue + 1 + (i - 1) * 4, segments[i].crc32c(0xffffffffu));
      out.append(segments[i]);
    }
    out.append_copy(epilogue, sizeof(epilogue));
    return;
  }

  // Secure mode: the preamble travels with up to 48 bytes of segment 0 in one GCM unit.
  const BufferList& seg0 = segments[0];
  uint32_t padded0 = pad_to_block(static_cast<uint32_t>(seg0.length()));
  BufferList first;
  first.append_copy(preamble, sizeof(preamble));
  size_t inline_len = std::min<size_t>(seg0.length(), kPreambleInlineSize);
  first.append(seg0.sub(0, inline_len));
  append_zeros(first, kPreambleInlineSize - inline_len);
  tx_->seal(first, out);
  if (padded0 > kPreambleInlineSize) {
    BufferList rest = seg0.sub(inline_len, seg0.length() - inline_len);
    append_zeros(rest, padded0 - seg0.length());
    tx_->seal(rest, out);
  }
  if (count == 1) return;
  BufferList tail;
  for (size_t i = 1; i < count; ++i) {
    tail.append(segments[i]);
    append_zeros(tail, pad_to_block(static_cast<uint32_t>(segments[i].length())) - segments[i].length());
  }
  char epilogue[kSecureEpilogueSize] = {};
  epilogue[0] = static_cast<char>(kLateStatusComplete);
  tail.append_copy(epilogue, sizeof(epilogue));
  tx_->seal(tail, out);
}

size_t FrameReader::body_length() const {
  size_t len = 0;
  if (!rx_) {
    if (descs_[0].length) len += descs_[0].length + kSegmentCrcSize;
    if (num_segments_ > 1) {
      for (size_t i = 1; i < num_segments_; ++i) len += descs_[i].length;
      len += kCrcEpilogueSize;
    }
    return len;
  }
  uint32_t padded0 = pad_to_block(descs_[0].length);
  if (padded0 > kPreambleInlineSize) len += padded0 - kPreambleInlineSize + kAesGcmTagLen;
  if (num_segments_ > 1) {
    for (size_t i = 1; i < num_segments_; ++i) len += pad_to_block(descs_[i].length);
    len += kSecureEpilogueSize + kAesGcmTagLen;
  }
  return len;
}

size_t FrameReader::wanted() const {
  if (!have_preamble_) return rx_ ? kPreambleSize + kPreambleInlineSize + kAesGcmTagLen : kPreambleSize;
  return body_length();
}

void FrameReader::parse_preamble(const char* block) {
  uint32_t expected = get_le32(block + 28);
  uint32_t actual = crc32c(0, block, 28);
  if (expected != actual)
    throw FrameError("bad preamble crc: calculated " + std::to_string(actual) + ", frame says " +
                     std::to_string(expected));
  uint8_t tag = static_cast<uint8_t>(block[0]);
  if (tag < kFirstTag || tag > kLastTag) throw FrameError("unknown frame tag " + std::to_string(tag));
  size_t count = static_cast<uint8_t>(block[1]);
  if (count < 1 || count > kMaxSegments)
    throw FrameError("bad segment count " + std::to_string(count) + " in " + tag_name(Tag(tag)) + " frame");
  if (block[26] & kPreambleFlagCompressed)
    throw FrameError(std::string("compressed ") + tag_name(Tag(tag)) + " frame, but compression was not negotiated");
  uint64_t total = 0;
  for (size_t i = 0; i < kMaxSegments; ++i) {
    descs_[i].length = get_le32(block + 2 + i * 6);
    descs_[i].alignment = get_le16(block + 6 + i * 6);
    if (i >= count && descs_[i].length)
      throw FrameError("segment " + std::to_string(i) + " has length beyond the segment count");
    uint32_t limit = i == 3 ? limits_.max_data_segment : limits_.max_segment;
    if (descs_[i].length > limit)
      throw FrameError(std::string(tag_name(Tag(tag))) + " segment " + std::to_string(i) + " of " +
                       std::to_string(descs_[i].length) + " bytes exceeds the limit of " +
                       std::to_string(limit));
    total += descs_[i].length;
  }
  if (count > 1 && descs_[count - 1].length == 0)
    throw FrameError("last of " + std::to_string(count) + " segments is empty");
  if (total > limits_.max_frame)
    throw FrameError(std::string(tag_name(Tag(tag))) + " frame of " + std::to_string(total) +
                     " bytes exceeds the limit of " + std::to_string(limits_.max_frame));
  tag_ = Tag(tag);
  num_segments_ = count;
  have_preamble_ = true;
}

bool FrameReader::read(BufferList& input, Frame* out) {
  BufferList holder;
  if (!have_preamble_) {
    if (!rx_) {
      if (input.length() < kPreambleSize) return false;
      parse_preamble(take_contiguous(input, kPreambleSize, holder).data());
    } else {
      constexpr size_t unit = kPreambleSize + kPreambleInlineSize + kAesGcmTagLen;
      if (input.length() < unit) return false;
      BufferList plain;
      rx_->open(take_contiguous(input, unit, holder), plain);
      parse_preamble(plain.c_str());
      inline_ = plain.sub(kPreambleSize, kPreambleInlineSize);
    }
  }
  size_t need = body_length();
  if (input.length() < need) return false;
  BufferList body;
  input.splice_front(need, body);
  *out = Frame{};
  out->tag = tag_;
  out->num_segments = num_segments_;
  for (size_t i = 0; i < kMaxSegments; ++i) out->alignments[i] = descs_[i].alignment;
  out->onwire_length = need + (rx_ ? kPreambleSize + kPreambleInlineSize + kAesGcmTagLen : kPreambleSize);
  if (rx_)
    finish_secure(body, out);
  else
    finish_crc(body, out);
  have_preamble_ = false;
  inline_.clear();
  return true;
}

void FrameReader::finish_crc(BufferList& body, Frame* out) {
  BufferList holder;
  if (descs_[0].length) {
    body.splice_front(descs_[0].length, out->segments[0]);
    uint32_t expected = get_le32(take_contiguous(body, kSegmentCrcSize, holder).data());
    uint32_t actual = out->segments[0].crc32c(0xffffffffu);
    if (expected != actual)
      throw FrameError(std::string("bad crc on segment 0 of ") + tag_name(tag_) + " frame: calculated " +
                       std::to_string(actual) + ", frame says " + std::to_string(expected));
  }
  if (num_segments_ == 1) return;
  for (size_t i = 1; i < num_segments_; ++i) body.splice_front(descs_[i].length, out->segments[i]);
  const char* epilogue = take_contiguous(body, kCrcEpilogueSize, holder).data();
  uint8_t late = static_cast<uint8_t>(epilogue[0]);
  if (late != kLateStatusComplete && late != kLateStatusAborted)
    throw FrameError("bad late status " + std::to_string(late) + " in epilogue");
  out->aborted = late == kLateStatusAborted;
  for (size_t i = 1; i < num_segments_; ++i) {
    uint32_t expected = get_le32(epilogue + 1 + (i - 1) * 4);
    uint32_t actual = out->segments[i].crc32c(0xffffffffu);
    if (expected != actual)
      throw FrameError("bad crc on segment " + std::to_string(i) + " of " + tag_name(tag_) +
                       " frame: calculated " + std::to_string(actual) + ", frame says " +
                       std::to_string(expected));
  }
}

void FrameReader::finish_secure(BufferList& body, Frame* out) {
  BufferList holder;
  uint32_t len0 = descs_[0].length;
  uint32_t padded0 = pad_to_block(len0);
  BufferList seg0 = std::move(inline_);
  if (padded0 > kPreambleInlineSize) {
    size_t unit = padded0 - kPreambleInlineSize + kAesGcmTagLen;
    rx_->open(take_contiguous(body, unit, holder), seg0);
  }
  seg0.truncate(len0);
  out->segments[0] = std::move(seg0);
  if (num_segments_ == 1) return;
  BufferList plain;
  rx_->open(take_contiguous(body, body.length(), holder), plain);
  for (size_t i = 1; i < num_segments_; ++i) {
    plain.splice_front(descs_[i].length, out->segments[i]);
    plain.trim_front(pad_to_block(descs_[i].length) - descs_[i].length);
  }
  uint8_t late = static_cast<uint8_t>(plain.c_str()[0]);
  if (late != kLateStatusComplete && late != kLateStatusAborted)
    throw FrameError("bad late status " + std::to_string(late) + " in secure epilogue");
  out->aborted = late == kLateStatusAborted;
}

}  // namespace bypass::msgr::wire

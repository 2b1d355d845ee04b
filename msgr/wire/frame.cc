#include "msgr/wire/frame.h"

#include <cstring>

#include "msgr/wire/le.h"

namespace bypass::msgr::wire {

namespace {
void put_le32(char* at, uint32_t v) { store_le(at, v); }
void put_le16(char* at, uint16_t v) { store_le(at, v); }
uint32_t get_le32(const char* at) { return load_le<uint32_t>(at); }
uint16_t get_le16(const char* at) { return load_le<uint16_t>(at); }

constexpr char kZeros[kCryptoBlock] = {};

// Feeds bytes [offset, offset + len) of a piece through the cipher into dst.
void crypt_range(AesGcmStream& cipher, std::string_view flat, const BufferList* list, size_t offset, size_t len,
                 char* dst) {
  if (!list) {
    cipher.crypt(flat.data() + offset, dst, len);
    return;
  }
  for (const auto& seg : list->segments()) {
    if (len == 0) break;
    if (offset >= seg.length()) {
      offset -= seg.length();
      continue;
    }
    size_t n = std::min(len, seg.length() - offset);
    cipher.crypt(seg.data() + offset, dst, n);
    dst += n;
    len -= n;
    offset = 0;
  }
}
}  // namespace

char* FrameAssembler::scratch(size_t n, BufferSegment* view) {
  if (n > kScratchBlock) {  // a huge frame (secure mode, big data segment): its own block
    ++scratch_allocations_;
    *view = BufferSegment::allocate(n);
    return view->data();
  }
  if (scratch_used_ + n > scratch_block_.length()) {
    // The current block is full. Reuse a spare no queued frame refers to any more (only this
    // assembler holds it); keep the full one as a spare while frames still point into it.
    BufferSegment next;
    for (auto& spare : spare_blocks_) {
      if (!spare.empty() && spare.use_count() == 1) {
        next = std::move(spare);
        spare = BufferSegment();
        break;
      }
    }
    if (next.empty()) {
      ++scratch_allocations_;
      next = BufferSegment::allocate(kScratchBlock);
    }
    if (!scratch_block_.empty()) {
      for (auto& spare : spare_blocks_) {
        if (spare.empty()) {
          spare = std::move(scratch_block_);
          break;
        }
      }
    }
    scratch_block_ = std::move(next);
    scratch_used_ = 0;
  }
  *view = scratch_block_.sub(scratch_used_, n);
  scratch_used_ += n;
  return view->data();
}

void FrameAssembler::assemble(Tag tag, std::span<const BufferList> segments,
                              std::span<const uint16_t> alignments, BufferList& out) {
  if (segments.empty() || segments.size() > kMaxSegments || alignments.size() < segments.size())
    throw FrameError("frame needs 1 to 4 segments with alignments");
  std::array<Piece, kMaxSegments> pieces;
  for (size_t i = 0; i < segments.size(); ++i) pieces[i].list = &segments[i];
  assemble_pieces(tag, std::span<const Piece>(pieces.data(), segments.size()), alignments, out);
}

void FrameAssembler::assemble_control(Tag tag, std::string_view payload, BufferList& out) {
  const uint16_t align = kDefaultAlignment;
  const Piece piece{payload, nullptr};
  assemble_pieces(tag, std::span<const Piece>(&piece, 1), std::span<const uint16_t>(&align, 1), out);
}

void FrameAssembler::assemble_message(std::string_view header, const BufferList& front, const BufferList& middle,
                                      const BufferList& data, BufferList& out) {
  static constexpr uint16_t kAlignments[kMaxSegments] = {kDefaultAlignment, kDefaultAlignment, kDefaultAlignment,
                                                         kPageAlignment};
  const std::array<Piece, kMaxSegments> pieces = {Piece{header, nullptr}, Piece{{}, &front}, Piece{{}, &middle},
                                                  Piece{{}, &data}};
  assemble_pieces(Tag::Message, pieces, kAlignments, out);
}

void FrameAssembler::assemble_pieces(Tag tag, std::span<const Piece> pieces, std::span<const uint16_t> alignments,
                                     BufferList& out) {
  size_t count = pieces.size();
  while (count > 1 && pieces[count - 1].length() == 0) --count;
  pieces = pieces.first(count);

  char preamble[kPreambleSize] = {};
  preamble[0] = static_cast<char>(tag);
  preamble[1] = static_cast<char>(count);
  for (size_t i = 0; i < count; ++i) {
    put_le32(preamble + 2 + i * 6, static_cast<uint32_t>(pieces[i].length()));
    put_le16(preamble + 6 + i * 6, alignments[i]);
  }
  // preamble[26] flags (compression off) and [27] reserved stay zero.
  put_le32(preamble + 28, crc32c(0, preamble, 28));
  if (tx_)
    assemble_secure(preamble, pieces, out);
  else
    assemble_crc(preamble, pieces, out);
}

void FrameAssembler::assemble_crc(const char* preamble, std::span<const Piece> pieces, BufferList& out) {
  // Segment 0 up to this size is copied next to the preamble (one contiguous piece: the header of
  // a MESSAGE, a control payload); longer ones travel as shared views.
  constexpr size_t kCopySegment0Max = 4096;
  const Piece& seg0 = pieces[0];
  const size_t len0 = seg0.length();
  const bool copy0 = len0 <= kCopySegment0Max || !seg0.list;
  const size_t head_len = kPreambleSize + (len0 && copy0 ? len0 + kSegmentCrcSize : 0);
  BufferSegment view;
  char* head = scratch(head_len, &view);
  std::memcpy(head, preamble, kPreambleSize);
  if (len0 && copy0) {
    char* body = head + kPreambleSize;
    if (seg0.list)
      seg0.list->copy_out(0, len0, body);
    else
      std::memcpy(body, seg0.flat.data(), len0);
    put_le32(body + len0, crc32c(0xffffffffu, body, len0));
  }
  out.append(std::move(view));
  if (len0 && !copy0) {
    out.append(*seg0.list);
    put_le32(scratch(kSegmentCrcSize, &view), seg0.list->crc32c(0xffffffffu));
    out.append(std::move(view));
  }
  if (pieces.size() == 1) return;
  // Segments 1..3 up to this size are copied into the scratch block too (a message's front of a
  // few bytes, a small data segment): the frame then stays one contiguous piece from the preamble
  // to the epilogue, where a shared view of a few bytes would cost the stack a piece of its own
  // per message (one more copy into the packet's header and more segments in every list on the way).
  constexpr size_t kCopySmallSegmentMax = 64;
  uint32_t crcs[kMaxSegments - 1] = {};
  for (size_t i = 1; i < pieces.size(); ++i) {
    const BufferList& segment = *pieces[i].list;
    const size_t len = segment.length();
    if (len > 0 && len <= kCopySmallSegmentMax) {
      char* copy = scratch(len, &view);
      segment.copy_out(0, len, copy);
      crcs[i - 1] = crc32c(0xffffffffu, copy, len);
      out.append(std::move(view));
    } else {
      crcs[i - 1] = segment.crc32c(0xffffffffu);
      out.append(segment);
    }
  }
  char* epilogue = scratch(kCrcEpilogueSize, &view);
  std::memset(epilogue, 0, kCrcEpilogueSize);
  epilogue[0] = static_cast<char>(kLateStatusComplete);
  for (size_t i = 1; i < pieces.size(); ++i) put_le32(epilogue + 1 + (i - 1) * 4, crcs[i - 1]);
  out.append(std::move(view));
}

void FrameAssembler::assemble_secure(const char* preamble, std::span<const Piece> pieces, BufferList& out) {
  // Secure mode: the preamble travels with up to 48 bytes of segment 0 in one GCM unit.
  AesGcmStream& cipher = *tx_;
  const Piece& seg0 = pieces[0];
  const size_t len0 = seg0.length();
  const uint32_t padded0 = pad_to_block(static_cast<uint32_t>(len0));
  const size_t inline_len = std::min<size_t>(len0, kPreambleInlineSize);
  size_t total = kPreambleSize + kPreambleInlineSize + kAesGcmTagLen;
  if (padded0 > kPreambleInlineSize) total += padded0 - kPreambleInlineSize + kAesGcmTagLen;
  if (pieces.size() > 1) {
    for (size_t i = 1; i < pieces.size(); ++i) total += pad_to_block(static_cast<uint32_t>(pieces[i].length()));
    total += kSecureEpilogueSize + kAesGcmTagLen;
  }
  BufferSegment view;
  char* dst = scratch(total, &view);

  char first[kPreambleSize + kPreambleInlineSize] = {};
  std::memcpy(first, preamble, kPreambleSize);
  if (seg0.list)
    seg0.list->copy_out(0, inline_len, first + kPreambleSize);
  else
    std::memcpy(first + kPreambleSize, seg0.flat.data(), inline_len);
  cipher.begin_seal();
  cipher.crypt(first, dst, sizeof(first));
  dst += sizeof(first);
  cipher.finish_seal(dst);
  dst += kAesGcmTagLen;

  if (padded0 > kPreambleInlineSize) {
    cipher.begin_seal();
    crypt_range(cipher, seg0.flat, seg0.list, inline_len, len0 - inline_len, dst);
    dst += len0 - inline_len;
    cipher.crypt(kZeros, dst, padded0 - len0);
    dst += padded0 - len0;
    cipher.finish_seal(dst);
    dst += kAesGcmTagLen;
  }
  if (pieces.size() > 1) {
    cipher.begin_seal();
    for (size_t i = 1; i < pieces.size(); ++i) {
      const size_t len = pieces[i].length();
      crypt_range(cipher, {}, pieces[i].list, 0, len, dst);
      dst += len;
      const size_t pad = pad_to_block(static_cast<uint32_t>(len)) - len;
      cipher.crypt(kZeros, dst, pad);
      dst += pad;
    }
    char epilogue[kSecureEpilogueSize] = {};
    epilogue[0] = static_cast<char>(kLateStatusComplete);
    cipher.crypt(epilogue, dst, sizeof(epilogue));
    dst += sizeof(epilogue);
    cipher.finish_seal(dst);
  }
  out.append(std::move(view));
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

void FrameReader::open_in_place(BufferList& unit) {
  const size_t len = unit.length();
  if (len < kAesGcmTagLen)
    throw CryptoError("secure unit of " + std::to_string(len) + " bytes is shorter than the tag");
  AesTag tag;
  unit.copy_out(len - kAesGcmTagLen, kAesGcmTagLen, tag.data());
  rx_->begin_open(tag);
  size_t left = len - kAesGcmTagLen;
  for (const auto& seg : unit.segments()) {
    if (left == 0) break;
    size_t n = std::min(left, seg.length());
    rx_->crypt(seg.data(), seg.data(), n);
    left -= n;
  }
  rx_->finish_open();
  unit.truncate(len - kAesGcmTagLen);
}

bool FrameReader::read(BufferList& input, Frame* out) {
  if (!have_preamble_) {
    if (!rx_) {
      if (input.length() < kPreambleSize) return false;
      char preamble[kPreambleSize];
      input.copy_out(0, kPreambleSize, preamble);
      parse_preamble(preamble);
      input.trim_front(kPreambleSize);
    } else {
      constexpr size_t unit = kPreambleSize + kPreambleInlineSize + kAesGcmTagLen;
      if (input.length() < unit) return false;
      inline_.clear();
      input.splice_front(unit, inline_);
      open_in_place(inline_);
      char preamble[kPreambleSize];
      inline_.copy_out(0, kPreambleSize, preamble);
      parse_preamble(preamble);
      inline_.trim_front(kPreambleSize);  // the 48 bytes of segment 0 stay
    }
  }
  size_t need = body_length();
  if (input.length() < need) return false;
  out->tag = tag_;
  out->num_segments = num_segments_;
  out->aborted = false;
  for (size_t i = 0; i < kMaxSegments; ++i) {
    out->alignments[i] = descs_[i].alignment;
    // Most are empty already (moved into a message, or cleared when the last input ended).
    if (out->segments[i].segment_count() != 0) out->segments[i].clear();
  }
  out->onwire_length = need + (rx_ ? kPreambleSize + kPreambleInlineSize + kAesGcmTagLen : kPreambleSize);
  have_preamble_ = false;  // whatever happens below, this preamble is used up
  if (rx_)
    finish_secure(input, out);
  else
    finish_crc(input, out);
  return true;
}

void FrameReader::finish_crc(BufferList& input, Frame* out) {
  if (descs_[0].length) {
    input.splice_front(descs_[0].length, out->segments[0]);
    char crc[kSegmentCrcSize];
    input.copy_out(0, kSegmentCrcSize, crc);
    input.trim_front(kSegmentCrcSize);
    uint32_t expected = get_le32(crc);
    uint32_t actual = out->segments[0].crc32c(0xffffffffu);
    if (expected != actual)
      throw FrameError(std::string("bad crc on segment 0 of ") + tag_name(tag_) + " frame: calculated " +
                       std::to_string(actual) + ", frame says " + std::to_string(expected));
    out->segments[0].remember_crc32c(0xffffffffu, actual);
  }
  if (num_segments_ == 1) return;
  for (size_t i = 1; i < num_segments_; ++i) input.splice_front(descs_[i].length, out->segments[i]);
  char epilogue[kCrcEpilogueSize];
  input.copy_out(0, kCrcEpilogueSize, epilogue);
  input.trim_front(kCrcEpilogueSize);
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
    // Verified: the bytes sent on again (a reply echoing them, a forwarded write) need no new pass.
    out->segments[i].remember_crc32c(0xffffffffu, actual);
  }
}

void FrameReader::finish_secure(BufferList& input, Frame* out) {
  const uint32_t len0 = descs_[0].length;
  const uint32_t padded0 = pad_to_block(len0);
  BufferList& seg0 = out->segments[0];
  seg0 = std::move(inline_);
  if (padded0 > kPreambleInlineSize) {
    unit_.clear();
    input.splice_front(padded0 - kPreambleInlineSize + kAesGcmTagLen, unit_);
    open_in_place(unit_);
    seg0.append(std::move(unit_));
  }
  seg0.truncate(len0);
  if (num_segments_ == 1) return;
  size_t tail = kSecureEpilogueSize + kAesGcmTagLen;
  for (size_t i = 1; i < num_segments_; ++i) tail += pad_to_block(descs_[i].length);
  unit_.clear();
  input.splice_front(tail, unit_);
  open_in_place(unit_);
  for (size_t i = 1; i < num_segments_; ++i) {
    unit_.splice_front(descs_[i].length, out->segments[i]);
    unit_.trim_front(pad_to_block(descs_[i].length) - descs_[i].length);
  }
  char late_byte;
  unit_.copy_out(0, 1, &late_byte);
  unit_.clear();
  uint8_t late = static_cast<uint8_t>(late_byte);
  if (late != kLateStatusComplete && late != kLateStatusAborted)
    throw FrameError("bad late status " + std::to_string(late) + " in secure epilogue");
  out->aborted = late == kLateStatusAborted;
}

}  // namespace bypass::msgr::wire

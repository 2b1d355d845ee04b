#include "base/buffer_list.h"

#include <isa-l/crc.h>

#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <new>
#include <stdexcept>

namespace bypass {

BufferSegment BufferSegment::allocate(size_t capacity, BufferSharing sharing) {
  const size_t bytes = sizeof(BufferStorage) + capacity;
  const int size_class = block_pool::class_for(bytes);
  BufferStorage* header;
  if (size_class < block_pool::kClasses) {
    header = static_cast<BufferStorage*>(block_pool::get(size_class));
    header->init(BufferStorage::Origin::pooled_block, sharing);
    header->size_class = static_cast<uint8_t>(size_class);
  } else {
    void* block = std::malloc(bytes);
    if (block == nullptr) throw std::bad_alloc();
    header = static_cast<BufferStorage*>(block);
    header->init(BufferStorage::Origin::heap_block, sharing);
  }
  BufferSegment s;
  s.storage_ = header;
  s.data_ = reinterpret_cast<char*>(header + 1);
  s.length_ = capacity;
  return s;
}

BufferSegment BufferSegment::copy_of(const void* data, size_t len, BufferSharing sharing) {
  BufferSegment s = allocate(len, sharing);
  if (len) std::memcpy(s.data_, data, len);
  return s;
}

BufferSegment BufferSegment::wrap(char* data, size_t len, BufferReleaseFn release, void* context,
                                  BufferSharing sharing) {
  auto* header = static_cast<BufferStorage*>(block_pool::get(0));
  BufferSegment s = wrap(header, data, len, release, context, sharing);
  header->origin = BufferStorage::Origin::foreign;
  return s;
}

BufferSegment BufferSegment::wrap(BufferStorage* header_memory, char* data, size_t len, BufferReleaseFn release,
                                  void* context, BufferSharing sharing) {
  auto* header = new (header_memory) BufferStorage;
  header->init(BufferStorage::Origin::foreign_header, sharing);
  header->release = release;
  header->context = context;
  BufferSegment s;
  s.storage_ = header;
  s.data_ = data;
  s.length_ = len;
  return s;
}

BufferSegment BufferSegment::borrow(const char* data, size_t len) {
  BufferSegment s;
  s.data_ = const_cast<char*>(data);
  s.length_ = len;
  return s;
}

size_t BufferSegment::room_after() const {
  if (storage_ == nullptr || storage_->origin != BufferStorage::Origin::pooled_block) return 0;
  const char* block_end = reinterpret_cast<const char*>(storage_) + block_pool::kClassBytes[storage_->size_class];
  return static_cast<size_t>(block_end - (data_ + length_));
}

BufferList& BufferList::operator=(BufferList&& other) noexcept {
  if (this != &other) {
    segments_ = std::move(other.segments_);
    length_ = other.length_;
    tail_room_ = other.tail_room_;
    crc_memo_ = other.crc_memo_;
    other.segments_.clear();
    other.length_ = 0;
    other.tail_room_ = 0;
    other.crc_memo_ = 0;
  }
  return *this;
}

// A copy shares the bytes but must never write into the original's spare tail room.
BufferList::BufferList(const BufferList& other)
    : segments_(other.segments_),
      length_(other.length_),
      tail_room_(0),
      crc_memo_(other.crc_memo_) {}

BufferList& BufferList::operator=(const BufferList& other) {
  if (this != &other) {
    segments_ = other.segments_;
    length_ = other.length_;
    tail_room_ = 0;
    crc_memo_ = other.crc_memo_;
  }
  return *this;
}

void BufferList::append(BufferSegment segment) {
  if (segment.empty()) return;
  length_ += segment.length();
  tail_room_ = 0;
  crc_memo_ = 0;
  // A view that starts where the last one ends, in the same storage, widens it instead (as Ceph's
  // bufferlist::append does): a frame's epilogue and the next frame's preamble, cut one after the
  // other from the assembler's scratch block, travel as one piece through TCP and the tx chain.
  if (!segments_.empty() && segment.continues(segments_.back())) {
    segments_.back().extend(segment.length());
    return;  // `segment` drops its count on the way out: the widened view holds one
  }
  segments_.push_back(std::move(segment));
}

void BufferList::append(const BufferList& other) {
  if (&other == this) {  // appending to the deque being iterated would invalidate the iteration
    const BufferList copy(other);
    append(copy);
    return;
  }
  const bool was_empty = segments_.empty();
  for (const auto& s : other.segments_) append(s);
  if (was_empty) crc_memo_ = other.crc_memo_;
}

void BufferList::append(BufferList&& other) {
  if (segments_.empty()) {
    *this = std::move(other);
    tail_room_ = 0;  // other's tail room stays valid, but keep the rule simple: no sharing of room
    return;
  }
  for (auto& s : other.segments_) {
    length_ += s.length();
    segments_.push_back(std::move(s));
  }
  tail_room_ = 0;
  crc_memo_ = 0;
  other.clear();
}

void BufferList::prepend(BufferSegment segment) {
  if (segment.empty()) return;
  length_ += segment.length();
  crc_memo_ = 0;
  segments_.push_front(std::move(segment));
  if (segments_.size() == 1) tail_room_ = 0;
}

char* BufferList::append_hole(size_t len) {
  if (len == 0) return nullptr;
  crc_memo_ = 0;
  if (tail_room_ >= len) {
    BufferSegment& last = segments_.back();
    char* at = last.data() + last.length();
    last.extend(len);
    tail_room_ -= len;
    length_ += len;
    return at;
  }
  BufferSegment block = BufferSegment::allocate(std::max(len, append_block));
  block.truncate(len);
  char* at = block.data();
  length_ += len;
  tail_room_ = block.room_after();
  segments_.push_back(std::move(block));
  return at;
}

void BufferList::append_copy(const void* data, size_t len) {
  const char* src = static_cast<const char*>(data);
  // Fill the current tail block first so many small appends share blocks.
  if (tail_room_ > 0 && len > 0) {
    size_t n = std::min(len, tail_room_);
    std::memcpy(append_hole(n), src, n);
    src += n;
    len -= n;
  }
  if (len > 0) std::memcpy(append_hole(len), src, len);
}

void BufferList::clear() {
  segments_.clear();
  length_ = 0;
  tail_room_ = 0;
  crc_memo_ = 0;
}

size_t BufferList::trim_front(size_t n) {
  if (n > length_) throw std::out_of_range("BufferList::trim_front past end");
  if (n > 0) crc_memo_ = 0;
  length_ -= n;
  size_t removed = 0;
  while (n > 0) {
    BufferSegment& front = segments_.front();
    if (front.length() <= n) {
      n -= front.length();
      segments_.pop_front();
      ++removed;
    } else {
      front.trim_front(n);
      n = 0;
    }
  }
  if (segments_.empty()) tail_room_ = 0;
  return removed;
}

void BufferList::truncate(size_t n) {
  if (n >= length_) return;
  crc_memo_ = 0;
  size_t keep = n;
  size_t i = 0;
  for (; i < segments_.size(); ++i) {
    if (segments_[i].length() >= keep) break;
    keep -= segments_[i].length();
  }
  if (keep == 0) {
    segments_.truncate(i);
  } else {
    segments_[i].truncate(keep);
    segments_.truncate(i + 1);
  }
  length_ = n;
  tail_room_ = 0;
}

void BufferList::splice_front(size_t n, BufferList& out) {
  if (n > length_) throw std::out_of_range("BufferList::splice_front past end");
  if (n > 0) crc_memo_ = 0;
  length_ -= n;
  while (n > 0) {
    BufferSegment& front = segments_.front();
    if (front.length() <= n) {
      n -= front.length();
      out.append(std::move(front));
      segments_.pop_front();
    } else {
      out.append(front.sub(0, n));
      front.trim_front(n);
      n = 0;
    }
  }
  if (segments_.empty()) tail_room_ = 0;
}

BufferList BufferList::sub(size_t offset, size_t len) const {
  Position from_front;
  return sub(offset, len, from_front);
}

BufferList BufferList::sub(size_t offset, size_t len, Position& hint) const {
  if (offset + len > length_) throw std::out_of_range("BufferList::sub past end");
  if (hint.index >= segments_.size() || hint.start > offset) hint = {};
  while (hint.index < segments_.size() && hint.start + segments_[hint.index].length() <= offset) {
    hint.start += segments_[hint.index].length();
    ++hint.index;
  }
  BufferList out;
  offset -= hint.start;
  for (size_t i = hint.index; i < segments_.size() && len > 0; ++i) {
    const BufferSegment& s = segments_[i];
    size_t n = std::min(len, s.length() - offset);
    out.append(s.sub(offset, n));
    offset = 0;
    len -= n;
  }
  return out;
}

void BufferList::copy_out_spanning(size_t offset, size_t len, void* dst) const {
  if (offset > length_ || len > length_ - offset) throw std::out_of_range("BufferList::copy_out past end");
  char* to = static_cast<char*>(dst);
  for (const auto& s : segments_) {
    if (len == 0) break;
    if (offset >= s.length()) {
      offset -= s.length();
      continue;
    }
    size_t n = std::min(len, s.length() - offset);
    std::memcpy(to, s.data() + offset, n);
    to += n;
    offset = 0;
    len -= n;
  }
}

std::string BufferList::to_string() const {
  std::string out(length_, '\0');
  if (length_) copy_out(0, length_, out.data());
  return out;
}

char* BufferList::c_str() {
  crc_memo_ = 0;  // the caller gets writable bytes
  if (segments_.empty()) return nullptr;
  if (segments_.size() > 1) {
    BufferSegment flat = BufferSegment::allocate(length_);
    copy_out(0, length_, flat.data());
    segments_.clear();
    segments_.push_back(std::move(flat));
    tail_room_ = 0;
  }
  return segments_.front().data();
}

bool BufferList::contents_equal(const BufferList& other) const {
  if (other.length_ != length_) return false;
  return contents_equal(std::string_view(other.to_string()));
}

bool BufferList::contents_equal(std::string_view bytes) const {
  if (bytes.size() != length_) return false;
  size_t at = 0;
  for (const auto& s : segments_) {
    if (std::memcmp(s.data(), bytes.data() + at, s.length()) != 0) return false;
    at += s.length();
  }
  return true;
}

int BufferList::to_iovec(struct iovec* iov, int max_iov, size_t offset) const {
  int used = 0;
  for (const auto& s : segments_) {
    if (used == max_iov) break;
    if (offset >= s.length()) {
      offset -= s.length();
      continue;
    }
    iov[used].iov_base = s.data() + offset;
    iov[used].iov_len = s.length() - offset;
    offset = 0;
    ++used;
  }
  return used;
}

uint32_t BufferList::crc32c(uint32_t seed) const {
  if (crc_memo_ != 0 && crc_memo_ >> 32 == seed) return static_cast<uint32_t>(crc_memo_);
  uint32_t crc = seed;
  for (const auto& s : segments_) crc = ::bypass::crc32c(crc, s.data(), s.length());
  return crc;
}

void BufferList::share_across_threads() const {
  for (const auto& s : segments_) s.share_across_threads();
}

namespace {
#if defined(__x86_64__)
// Below this length the SSE4.2 crc32 instruction, eight bytes at a time, beats ISA-L: its folding
// kernels (crc32_iscsi_by16_10 with VPCLMULQDQ here) only start at 256 bytes and take a slow
// byte-wise path below, about 25-40 ns for the 28-byte preamble or the 41-byte message header
// against 5-13 ns inline. Every msgr2 frame has at least two such crcs on each side.
constexpr size_t kInlineCrcMax = 255;

__attribute__((target("sse4.2"))) uint32_t crc32c_sse42(uint32_t seed, const unsigned char* p, size_t len) {
  uint64_t crc = seed;
  for (; len >= 8; p += 8, len -= 8) {
    uint64_t word;
    std::memcpy(&word, p, sizeof(word));
    crc = __builtin_ia32_crc32di(crc, word);
  }
  auto crc32 = static_cast<uint32_t>(crc);
  if (len >= 4) {
    uint32_t word;
    std::memcpy(&word, p, sizeof(word));
    crc32 = __builtin_ia32_crc32si(crc32, word);
    p += 4;
    len -= 4;
  }
  for (; len > 0; ++p, --len) crc32 = __builtin_ia32_crc32qi(crc32, *p);
  return crc32;
}

const bool have_sse42 = __builtin_cpu_supports("sse4.2");

// ISA-L 2.30's crc32_iscsi_by16_10 (the AVX-512/VPCLMULQDQ kernel it picks on this class of CPU)
// returns with the upper halves of the vector registers dirty: it has no vzeroupper. Until
// something clears them, every legacy-SSE instruction the compiler emits for our code (a movups
// in a header decode, a 16-byte copy) pays the SSE/AVX transition: perf showed 93 % of
// MessageHeader2::decode's samples on its first movups. One vzeroupper after the call ends that.
__attribute__((target("avx"))) void clear_upper_vector_state() { __builtin_ia32_vzeroupper(); }
const bool have_avx = __builtin_cpu_supports("avx");
#endif
}  // namespace

uint32_t crc32c(uint32_t seed, const void* data, size_t len) {
  // Same convention as Ceph's ceph_crc32c(): no pre/post inversion beyond the caller's seed.
  auto* bytes = static_cast<unsigned char*>(const_cast<void*>(data));
#if defined(__x86_64__)
  if (len <= kInlineCrcMax && have_sse42) return crc32c_sse42(seed, bytes, len);
#endif
  // crc32_iscsi takes an int length: feed larger ranges in chunks (the CRC chains exactly).
  constexpr size_t kMaxChunk = size_t{1} << 30;
  uint32_t crc = seed;
  while (len > 0) {
    const size_t chunk = std::min(len, kMaxChunk);
    crc = crc32_iscsi(bytes, static_cast<int>(chunk), crc);
    bytes += chunk;
    len -= chunk;
  }
#if defined(__x86_64__)
  if (have_avx) clear_upper_vector_state();
#endif
  return crc;
}

}  // namespace bypass

// BufferList: an ordered list of refcounted buffer segments.
//
// A segment is a view (pointer + length) into storage kept alive by a BufferStorage header
// (base/buffer_storage.h: an intrusive count, plain unless the storage is shared across threads).
// The storage is either our own block (header and bytes in one allocation from the thread's block
// pool) or foreign memory (an mbuf, a registered RDMA chunk) wrapped with a release function that
// runs when the last view on it is dropped. This is what lets transports hand data up and down
// without copying: splicing, trimming and sub-ranging only move views, never bytes. Segments sit in
// a small inline vector (a few inline, the rest in a pooled array), so a steady stream of appends,
// trims and sub-lists on one worker makes no heap calls.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "base/buffer_storage.h"
#include "base/segment_vector.h"

namespace bypass {

// One view (pointer + length) into refcounted storage; copying a segment shares the storage and
// copies no bytes (see the file comment).
class BufferSegment {
 public:
  BufferSegment() = default;
  // Another view of the same bytes: one more count on the storage.
  BufferSegment(const BufferSegment& other) : storage_(other.storage_), data_(other.data_), length_(other.length_) {
    if (storage_ != nullptr) storage_->ref();
  }
  // Takes other's count over (no count change); other is left without storage.
  BufferSegment(BufferSegment&& other) noexcept
      : storage_(std::exchange(other.storage_, nullptr)), data_(other.data_), length_(other.length_) {}
  // Views other's bytes instead, dropping this view's count on its old storage.
  BufferSegment& operator=(const BufferSegment& other) {
    if (other.storage_ != nullptr) other.storage_->ref();
    if (storage_ != nullptr) storage_->unref();
    storage_ = other.storage_;
    data_ = other.data_;
    length_ = other.length_;
    return *this;
  }
  // Takes other's view and count over, dropping this view's count on its old storage.
  BufferSegment& operator=(BufferSegment&& other) noexcept {
    if (this != &other) {
      if (storage_ != nullptr) storage_->unref();
      storage_ = std::exchange(other.storage_, nullptr);
      data_ = other.data_;
      length_ = other.length_;
    }
    return *this;
  }
  ~BufferSegment() {
    if (storage_ != nullptr) storage_->unref();
  }

  // A fresh block of `capacity` bytes; length starts at `capacity` (caller fills it).
  static BufferSegment allocate(size_t capacity, BufferSharing sharing = BufferSharing::worker_local);
  // A copy of `data` in a fresh block.
  static BufferSegment copy_of(const void* data, size_t len, BufferSharing sharing = BufferSharing::worker_local);
  // Foreign memory; `release(context, header)` runs once, when the last view on it is gone. The
  // header comes from the thread's pool.
  static BufferSegment wrap(char* data, size_t len, BufferReleaseFn release, void* context,
                            BufferSharing sharing = BufferSharing::worker_local);
  // The same with the header in memory the owner already has (`header_memory`: header_size bytes,
  // 8-byte aligned, untouched by the owner until `release` runs): no allocation at all.
  static BufferSegment wrap(BufferStorage* header_memory, char* data, size_t len, BufferReleaseFn release,
                            void* context, BufferSharing sharing = BufferSharing::worker_local);
  // Bytes the second wrap() needs at `header_memory`.
  static constexpr size_t header_size = sizeof(BufferStorage);
  // Static or caller-owned memory that outlives every view (no count, no release).
  static BufferSegment borrow(const char* data, size_t len);

  char* data() const { return data_; }  // first byte of the view
  size_t length() const { return length_; }  // bytes in the view
  bool empty() const { return length_ == 0; }  // no bytes in the view
  std::string_view view() const { return {data_, length_}; }  // the bytes, for reading
  // Writable bytes after this view's end inside its own block (0 for foreign memory).
  size_t room_after() const;

  // Narrow the view: drop `n` bytes from the front or keep only the first `n`.
  void trim_front(size_t n) { data_ += n; length_ -= n; }
  void truncate(size_t n) { length_ = n; }  // keeps the first `n` bytes (n <= length())
  // Another view of [offset, offset+len) of this one, sharing its storage (unchecked).
  BufferSegment sub(size_t offset, size_t len) const {
    BufferSegment s = *this;
    s.data_ += offset;
    s.length_ = len;
    return s;
  }
  // True when this view and `other` share storage and are adjacent, so they can be merged.
  bool continues(const BufferSegment& other) const {
    return storage_ == other.storage_ && other.data_ + other.length_ == data_;
  }
  void extend(size_t n) { length_ += n; }  // grows the view into its room_after() bytes (n <= room_after())
  // Count of views on the storage (for tests and leak checks; 0 for borrowed memory).
  long use_count() const { return storage_ != nullptr ? static_cast<long>(storage_->count()) : 0; }
  // Identifies the storage (tests; null for borrowed memory).
  const void* storage_id() const { return storage_; }
  // How the storage counts; borrowed memory has no count and reports across_threads.
  BufferSharing sharing() const { return storage_ != nullptr ? storage_->sharing : BufferSharing::across_threads; }
  // Makes the storage's count atomic for good (see buffer_storage.h): call it on the thread that
  // holds every view of it, before handing some to another thread.
  void share_across_threads() const {
    if (storage_ != nullptr) storage_->share_across_threads();
  }

 private:
  BufferStorage* storage_ = nullptr;
  char* data_ = nullptr;
  size_t length_ = 0;
};

class BufferList {
 public:
  BufferList() = default;
  BufferList(const BufferList& other);             // shares segments, copies no bytes
  // Shares other's segments; never writes into their spare room.
  BufferList& operator=(const BufferList& other);
  // Takes other's segments; other is left empty.
  BufferList(BufferList&& other) noexcept { *this = std::move(other); }
  BufferList& operator=(BufferList&& other) noexcept;  // takes other's segments; other is left empty

  size_t length() const { return length_; }  // bytes in the list
  bool empty() const { return length_ == 0; }  // no bytes
  // Views the content is spread over (iovecs a send needs).
  size_t segment_count() const { return segments_.size(); }
  // In order; invalidated by any change to the list.
  std::span<const BufferSegment> segments() const { return segments_.span(); }

  // Appends share the segment (no copy).
  void append(BufferSegment segment);
  void append(const BufferList& other);  // shares other's segments (appending a list to itself works)
  void append(BufferList&& other);    // moves other's segments; other becomes empty
  void prepend(BufferSegment segment);  // puts a segment in front (a header onto a payload)
  // Copies bytes into a tail block with spare room (allocated in blocks of `append_block`).
  void append_copy(const void* data, size_t len);
  void append_copy(std::string_view text) { append_copy(text.data(), text.size()); }  // the same for a string
  // Reserves `len` contiguous writable bytes at the tail; returns their address.
  char* append_hole(size_t len);

  void clear();  // drops every segment (their storage goes when no other view holds it)
  // Drop the first `n` bytes (n <= length()); returns how many whole segments went.
  size_t trim_front(size_t n);
  // Keep only the first `n` bytes.
  void truncate(size_t n);
  // Move the first `n` bytes into `out` (appended), sharing segments.
  void splice_front(size_t n, BufferList& out);
  // A new list viewing [offset, offset+len) of this one.
  BufferList sub(size_t offset, size_t len) const;

  // Where one segment starts: lets a sender that reads a long list front to back (TCP's send
  // buffer, one segment at a time) resume sub() there instead of walking from the front, which
  // costs O(bytes in flight) per segment. Appends keep a Position valid; after trim_front the
  // holder calls shift(); anything else needs a fresh Position.
  struct Position {
    size_t index = 0;  // segment index
    size_t start = 0;  // offset of that segment's first byte
    void shift(size_t segments_removed, size_t bytes_removed) {
      if (index < segments_removed) {
        *this = {};
        return;
      }
      index -= segments_removed;
      start = start >= bytes_removed ? start - bytes_removed : 0;  // the front segment, partly trimmed
    }
  };
  // sub(offset, len), starting the search at `hint` when it lies at or before `offset`; `hint`
  // is left at the segment holding `offset`.
  BufferList sub(size_t offset, size_t len, Position& hint) const;

  // Copy [offset, offset+len) into dst. Inline where the bytes lie in the first segment, as most
  // small reads do (a frame's crc and epilogue, a header), so a constant `len` becomes a load.
  void copy_out(size_t offset, size_t len, void* dst) const {
    if (!segments_.empty() && offset <= segments_.front().length() && len <= segments_.front().length() - offset) {
      if (len != 0) std::memcpy(dst, segments_.front().data() + offset, len);
      return;
    }
    copy_out_spanning(offset, len, dst);
  }
  std::string to_string() const;  // a flat copy of the content (tests, logs, small values)
  // Make the content a single segment (copies only when it is not already one); returns its start.
  char* c_str();
  bool contents_equal(const BufferList& other) const;  // same bytes, however segmented
  bool contents_equal(std::string_view bytes) const;  // same bytes as `bytes`, compared without flattening

  // Fill iov with up to max_iov segments starting at byte `offset`; returns the count used.
  int to_iovec(struct iovec* iov, int max_iov, size_t offset = 0) const;

  // CRC32C (Castagnoli) over the content, seeded like Ceph's bufferlist::crc32c(seed); without a
  // pass over the bytes when the list remembers it for this seed (remember_crc32c).
  uint32_t crc32c(uint32_t seed) const;
  // Says that crc32c(seed) of the content is `crc`: a reader that has just verified the bytes
  // against the checksum they arrived with (msgr's FrameReader). Sending the same bytes on then
  // costs no second pass (a reply that echoes a request's data, a primary forwarding a client's
  // write), as Ceph's buffer::raw crc cache does. Any change through the list's own methods
  // forgets it; copies, moves and an append into an empty list keep it. Bytes written through a
  // segment's data() pointer are not seen: whoever does that calls forget_crc32c().
  void remember_crc32c(uint32_t seed, uint32_t crc) { crc_memo_ = uint64_t{seed} << 32 | crc; }
  // Drops what remember_crc32c() said: the bytes were changed behind the list's back.
  void forget_crc32c() { crc_memo_ = 0; }

  // Makes every segment's storage count atomic (BufferSegment::share_across_threads): the thread
  // holding every view calls it before handing this list to another thread while views stay here.
  void share_across_threads() const;

  // The smallest tail block append_copy() and append_hole() allocate.
  static constexpr size_t append_block = 4096;

 private:
  void copy_out_spanning(size_t offset, size_t len, void* dst) const;  // copy_out past the first segment

  // Four inline: a message frame's parts, a TCP segment's header and payload pieces.
  SegmentVector<BufferSegment, 4> segments_;
  size_t length_ = 0;
  size_t tail_room_ = 0;  // writable bytes after the last segment's end, inside its own block
  // remember_crc32c(): seed << 32 | crc, 0 when none is known (seed 0 with crc 0 is then simply
  // never remembered). One word, so that moving a list stays as cheap as it was.
  uint64_t crc_memo_ = 0;
};

// CRC32C of a flat range (ISA-L's crc32_iscsi underneath), chainable: crc32c(seed, a+b) ==
// crc32c(crc32c(seed, a), b).
uint32_t crc32c(uint32_t seed, const void* data, size_t len);

}  // namespace bypass

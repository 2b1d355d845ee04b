// Hierarchical timing wheel behind EventCenter timers (internal to stack/).
//
// Time is counted in ticks of 100 us since the wheel was built. Four levels of 256 slots cover
// 2^32 ticks (about 5 days); a deadline further out waits in an overflow list that is re-examined
// every 2^24 ticks. Level L slot s holds timers whose expiry tick has bits [8L, 8L+8) equal to s;
// they move one level down ("cascade") when the wheel reaches the start of their block — the
// classic Linux/Varghese-Lauck scheme. Add and cancel are O(1): timers live in a node pool and
// sit on intrusive doubly-linked slot lists; an id is (generation << 32 | node index), so a stale
// id never cancels a recycled node.
//
// A timer never fires early: its expiry tick is the deadline rounded up, and a tick is processed
// only once the clock has passed its start. Timers due in one advance() run in deadline order.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

namespace bypass::detail {

class TimerWheel {
 public:
  using Clock = std::chrono::steady_clock;
  using Callback = std::function<void()>;
  using TimerId = uint64_t;

  static constexpr std::chrono::nanoseconds kTick = std::chrono::microseconds(100);
  static constexpr int kLevels = 4;
  static constexpr int kSlotBits = 8;
  static constexpr int kSlots = 1 << kSlotBits;

  explicit TimerWheel(Clock::time_point start = Clock::now());
  TimerWheel(const TimerWheel&) = delete;
  TimerWheel& operator=(const TimerWheel&) = delete;

  TimerId add(Clock::time_point deadline, Callback callback);
  // False when the id already fired, was cancelled, or never existed.
  bool cancel(TimerId id);
  size_t size() const { return live_; }

  // A time at which advance() may have work, never later than the earliest deadline: the start of
  // the first occupied tick or of the next cascade, or an earlier expiry remembered from add() or
  // from a timer cancelled since. O(1) between advances that pass it, since a busy loop asks every
  // iteration.
  std::optional<Clock::time_point> next_wakeup() const;

  // Run every timer whose deadline is <= now, in deadline order (insertion order on ties).
  // Callbacks may add and cancel timers. Returns the number of callbacks run.
  int advance(Clock::time_point now);

 private:
  static constexpr uint32_t kNil = UINT32_MAX;
  static constexpr uint16_t kOverflowBucket = kLevels * kSlots;
  static constexpr int kBuckets = kLevels * kSlots + 1;
  enum class State : uint8_t { Free, Queued, Due };

  struct Node {
    Clock::time_point deadline;
    uint64_t expire_tick = 0;
    uint64_t seq = 0;
    Callback callback;
    uint32_t prev = kNil;
    uint32_t next = kNil;
    uint32_t generation = 1;
    uint16_t bucket = 0;
    State state = State::Free;
  };
  struct DueTimer {
    Clock::time_point deadline;
    uint64_t seq;
    uint32_t index;
    uint32_t generation;
  };

  uint64_t tick_of(Clock::time_point t, bool round_up) const;
  Clock::time_point time_of_tick(uint64_t tick) const;
  // Puts a queued node into the bucket its expiry tick selects; returns the first tick at which the
  // wheel must look at it (see add()).
  uint64_t place(uint32_t index);
  void link(uint32_t index, uint16_t bucket);
  void unlink(uint32_t index);
  void release(uint32_t index);
  void cascade(int level, int slot);
  void readmit_overflow();
  void collect_tick(uint64_t tick);
  // The first tick at or after next_tick_ that has timers to collect or to cascade (max if none).
  uint64_t next_event_tick() const;
  // next_event_ when it still applies, else next_event_tick() (remembered).
  uint64_t bounded_next_event_tick() const;
  // First occupied slot of `level` at or after `slot` (wrapping), as an offset 0..255, or -1.
  int next_occupied(int level, int slot) const;

  Clock::time_point start_;
  uint64_t next_tick_ = 0;  // the first tick not yet processed
  uint64_t next_seq_ = 0;
  size_t live_ = 0;
  size_t queued_ = 0;  // nodes sitting in buckets (not yet collected as due)
  // Nodes live in fixed chunks: growing never moves a node (no relocation cost for millions of
  // timers, and references stay valid while callbacks add timers).
  static constexpr uint32_t kChunkBits = 12;
  static constexpr uint32_t kChunk = 1u << kChunkBits;
  Node& node(uint32_t index) { return chunks_[index >> kChunkBits][index & (kChunk - 1)]; }
  std::vector<std::unique_ptr<Node[]>> chunks_;
  uint32_t node_count_ = 0;
  std::vector<uint32_t> free_;
  std::array<uint32_t, kBuckets> heads_;
  std::array<std::array<uint64_t, kSlots / 64>, kLevels> occupied_{};
  std::vector<DueTimer> due_;
  // A lower bound of next_event_tick() (valid while next_event_known_): add() lowers it, cancel()
  // leaves it (waking early costs one empty advance), advance() forgets it once it has passed it.
  mutable uint64_t next_event_ = 0;
  mutable bool next_event_known_ = false;
};

}  // namespace bypass::detail

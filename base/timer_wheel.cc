#include "base/timer_wheel.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <stdexcept>

namespace bypass::detail {

namespace {
constexpr uint64_t kLevelSpan(int level) { return uint64_t{1} << (TimerWheel::kSlotBits * level); }
constexpr uint64_t kOverflowRecheck = kLevelSpan(TimerWheel::kLevels - 1);  // 2^24 ticks
}  // namespace

TimerWheel::TimerWheel(Clock::time_point start) : start_(start) {
  heads_.fill(kNil);
  // The due list grows only when more timers fall due in one advance than ever before; starting
  // with room for a busy tick keeps that growth out of a running data path.
  due_.reserve(256);
}

uint64_t TimerWheel::tick_of(Clock::time_point t, bool round_up) const {
  if (t <= start_) return 0;
  const uint64_t ns = static_cast<uint64_t>((t - start_).count());
  const uint64_t tick = static_cast<uint64_t>(kTick.count());
  return round_up ? ns / tick + (ns % tick != 0) : ns / tick;
}

TimerWheel::Clock::time_point TimerWheel::time_of_tick(uint64_t tick) const {
  return start_ + std::chrono::nanoseconds(static_cast<int64_t>(tick) * kTick.count());
}

TimerWheel::TimerId TimerWheel::add(Clock::time_point deadline, Callback callback) {
  uint32_t index;
  if (!free_.empty()) {
    index = free_.back();
    free_.pop_back();
  } else {
    if (node_count_ >= kNil - kChunk) throw std::length_error("TimerWheel: too many timers");
    if (node_count_ % kChunk == 0) {
      chunks_.push_back(std::make_unique<Node[]>(kChunk));
      // Every node may come back to the free list: give it room now, not one push at a time later
      // while a data path runs (release() then never allocates).
      free_.reserve(chunks_.size() * kChunk);
    }
    index = node_count_++;
  }
  Node& n = node(index);
  n.deadline = deadline;
  n.expire_tick = tick_of(deadline, /*round_up=*/true);
  n.seq = next_seq_++;
  n.callback = std::move(callback);
  n.state = State::Queued;
  ++live_;
  // The bound must not pass the tick where a cascade brings this node down, or advance() would
  // jump over that tick and the timer would fire only when the wheel next came round.
  const uint64_t visible = place(index);
  if (next_event_known_) next_event_ = std::min(next_event_, visible);
  return (static_cast<uint64_t>(n.generation) << 32) | index;
}

bool TimerWheel::cancel(TimerId id) {
  const uint32_t index = static_cast<uint32_t>(id & 0xffffffffu);
  const uint32_t generation = static_cast<uint32_t>(id >> 32);
  if (index >= node_count_) return false;
  Node& n = node(index);
  if (n.generation != generation || n.state == State::Free) return false;
  if (n.state == State::Queued) unlink(index);
  // A Due node is still listed in due_; bumping its generation makes advance() skip it.
  Callback dropped = std::move(n.callback);
  release(index);
  return true;  // `dropped` is destroyed here, after the wheel is consistent again
}

uint64_t TimerWheel::place(uint32_t index) {
  Node& n = node(index);
  const uint64_t expire = std::max(n.expire_tick, next_tick_);
  const uint64_t delta = expire - next_tick_;
  uint16_t bucket = kOverflowBucket;
  // Where the wheel first has to look at the node: its own tick on level 0; on a higher level the
  // start of its block there, when the cascade brings it down; in overflow the next recheck.
  uint64_t visible = (next_tick_ + kOverflowRecheck - 1) / kOverflowRecheck * kOverflowRecheck;
  for (int level = 0; level < kLevels; ++level) {
    if (delta < kLevelSpan(level + 1)) {
      const int shift = kSlotBits * level;
      const int slot = static_cast<int>((expire >> shift) & (kSlots - 1));
      bucket = static_cast<uint16_t>(level * kSlots + slot);
      visible = std::max(next_tick_, (expire >> shift) << shift);
      break;
    }
  }
  link(index, bucket);
  return visible;
}

void TimerWheel::link(uint32_t index, uint16_t bucket) {
  Node& n = node(index);
  n.bucket = bucket;
  n.prev = kNil;
  n.next = heads_[bucket];
  if (n.next != kNil) node(n.next).prev = index;
  heads_[bucket] = index;
  if (bucket != kOverflowBucket) occupied_[bucket / kSlots][(bucket % kSlots) / 64] |= uint64_t{1} << (bucket % 64);
  ++queued_;
}

void TimerWheel::unlink(uint32_t index) {
  Node& n = node(index);
  if (n.prev != kNil) {
    node(n.prev).next = n.next;
  } else {
    heads_[n.bucket] = n.next;
  }
  if (n.next != kNil) node(n.next).prev = n.prev;
  if (heads_[n.bucket] == kNil && n.bucket != kOverflowBucket)
    occupied_[n.bucket / kSlots][(n.bucket % kSlots) / 64] &= ~(uint64_t{1} << (n.bucket % 64));
  n.prev = n.next = kNil;
  --queued_;
}

void TimerWheel::release(uint32_t index) {
  Node& n = node(index);
  n.callback = nullptr;
  n.state = State::Free;
  if (++n.generation == 0) n.generation = 1;  // id 0 is never valid
  free_.push_back(index);
  --live_;
}

void TimerWheel::cascade(int level, int slot) {
  const uint16_t bucket = static_cast<uint16_t>(level * kSlots + slot);
  uint32_t index = heads_[bucket];
  heads_[bucket] = kNil;
  occupied_[level][slot / 64] &= ~(uint64_t{1} << (slot % 64));
  while (index != kNil) {
    const uint32_t next = node(index).next;
    --queued_;
    place(index);
    index = next;
  }
}

void TimerWheel::readmit_overflow() {
  uint32_t index = heads_[kOverflowBucket];
  heads_[kOverflowBucket] = kNil;
  while (index != kNil) {
    const uint32_t next = node(index).next;
    --queued_;
    place(index);  // lands back in overflow while still more than 2^32 ticks away
    index = next;
  }
}

void TimerWheel::collect_tick(uint64_t tick) {
  const int slot = static_cast<int>(tick & (kSlots - 1));
  if (slot == 0) {
    // Entering a new level-0 block: bring the matching higher-level slots down, lowest first.
    for (int level = 1; level < kLevels; ++level) {
      const int upper = static_cast<int>((tick >> (kSlotBits * level)) & (kSlots - 1));
      cascade(level, upper);
      if (upper != 0) break;
    }
    if (tick % kOverflowRecheck == 0) readmit_overflow();
  }
  uint32_t index = heads_[slot];
  heads_[slot] = kNil;
  occupied_[0][slot / 64] &= ~(uint64_t{1} << (slot % 64));
  while (index != kNil) {
    Node& n = node(index);
    const uint32_t next = n.next;
    n.state = State::Due;
    n.prev = n.next = kNil;
    --queued_;
    due_.push_back(DueTimer{n.deadline, n.seq, index, n.generation});
    index = next;
  }
}

int TimerWheel::next_occupied(int level, int slot) const {
  const auto& words = occupied_[level];
  const int bit = slot % 64;
  for (int step = 0; step <= kSlots / 64; ++step) {
    const int word = (slot / 64 + step) % (kSlots / 64);
    uint64_t bits = words[word];
    if (step == 0) bits &= ~uint64_t{0} << bit;                          // at or after slot
    if (step == kSlots / 64) bits &= bit ? (uint64_t{1} << bit) - 1 : 0;  // wrapped: before slot
    if (bits) {
      const int found = word * 64 + std::countr_zero(bits);
      return (found - slot + kSlots) % kSlots;
    }
  }
  return -1;
}

uint64_t TimerWheel::next_event_tick() const {
  uint64_t best = std::numeric_limits<uint64_t>::max();
  if (queued_ == 0) return best;
  const int offset0 = next_occupied(0, static_cast<int>(next_tick_ & (kSlots - 1)));
  if (offset0 >= 0) best = next_tick_ + static_cast<uint64_t>(offset0);
  for (int level = 1; level < kLevels; ++level) {
    const int shift = kSlotBits * level;
    // The cascade of the current block already ran unless we sit exactly on its first tick.
    uint64_t block = next_tick_ >> shift;
    if (next_tick_ & (kLevelSpan(level) - 1)) ++block;
    const int offset = next_occupied(level, static_cast<int>(block & (kSlots - 1)));
    if (offset >= 0) best = std::min(best, (block + static_cast<uint64_t>(offset)) << shift);
  }
  if (heads_[kOverflowBucket] != kNil) {
    best = std::min(best, (next_tick_ + kOverflowRecheck - 1) / kOverflowRecheck * kOverflowRecheck);
  }
  return best;
}

uint64_t TimerWheel::bounded_next_event_tick() const {
  // Every tick before next_tick_ is done, so a remembered bound below it says nothing any more.
  if (!next_event_known_ || next_event_ < next_tick_) {
    next_event_ = next_event_tick();
    next_event_known_ = true;
  }
  return next_event_;
}

std::optional<TimerWheel::Clock::time_point> TimerWheel::next_wakeup() const {
  if (queued_ == 0) return std::nullopt;
  const uint64_t tick = bounded_next_event_tick();
  if (tick == std::numeric_limits<uint64_t>::max()) return std::nullopt;
  return time_of_tick(tick);
}

int TimerWheel::advance(Clock::time_point now) {
  const uint64_t target = tick_of(now, /*round_up=*/false);
  while (next_tick_ <= target) {
    // Jump over ticks where nothing fires and nothing cascades: a long sleep with a few far
    // timers costs a handful of steps, not one per 100 us.
    const uint64_t next_event = bounded_next_event_tick();
    if (next_event > next_tick_) {
      next_tick_ = std::min(next_event, target + 1);
      continue;
    }
    collect_tick(next_tick_);
    ++next_tick_;
  }
  if (due_.empty()) return 0;
  std::sort(due_.begin(), due_.end(), [](const DueTimer& a, const DueTimer& b) {
    return a.deadline != b.deadline ? a.deadline < b.deadline : a.seq < b.seq;
  });
  std::vector<DueTimer> due;
  due.swap(due_);
  int ran = 0;
  for (const DueTimer& d : due) {
    Node& n = node(d.index);
    if (n.generation != d.generation || n.state != State::Due) continue;  // cancelled meanwhile
    Callback callback = std::move(n.callback);
    release(d.index);
    callback();
    ++ran;
  }
  due.clear();
  if (due_.empty()) due_.swap(due);  // keep the capacity for the next round
  return ran;
}

}  // namespace bypass::detail

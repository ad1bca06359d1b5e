// EventQueues under concurrency: many producer threads, one consumer (the analysis thread's role).
// Nothing accepted is lost or duplicated, each producer's events come out in order, a full ring
// refuses (and the caller counts) exactly the events that did not fit, and threads past
// max_queues share the mutex-guarded overflow ring. Also run under TSan (tests/tsan/run_tsan.sh).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "live/event_queue.h"

namespace {

using stepwatch::Event;
using stepwatch::live::EventQueues;

Event numbered(uint32_t producer, uint64_t seq) {
  Event e;
  e.thread = producer;
  e.correlation = seq;
  e.start_ns = static_cast<int64_t>(seq);
  e.end_ns = e.start_ns + 1;
  return e;
}

struct Tally {
  std::vector<uint64_t> next;  // per producer: the next sequence number expected
  uint64_t total = 0;
  bool in_order = true;
  explicit Tally(size_t producers) : next(producers, 0) {}
  // Drops (when allowed) skip numbers, but a producer's events never come out of order or twice.
  void take(const std::vector<Event>& batch, bool gaps_allowed) {
    for (const Event& e : batch) {
      uint64_t& n = next.at(e.thread);
      if (e.correlation < n || (!gaps_allowed && e.correlation != n)) in_order = false;
      n = e.correlation + 1;
      ++total;
    }
  }
};

// Runs `producers` threads pushing `per_producer` events each while this thread drains.
struct ProducerRun {
  uint64_t accepted = 0, refused = 0;
  Tally tally;
  ProducerRun(EventQueues& q, uint32_t producers, uint64_t per_producer, bool gaps_allowed) : tally(producers) {
    std::atomic<uint64_t> acc{0}, ref{0};
    std::atomic<uint32_t> finished{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (uint32_t p = 0; p < producers; ++p) {
      threads.emplace_back([&, p] {
        while (!go.load()) std::this_thread::yield();
        uint64_t a = 0, r = 0;
        for (uint64_t i = 0; i < per_producer; ++i) (q.push(numbered(p, i)) ? a : r) += 1;
        acc += a;
        ref += r;
        finished += 1;
      });
    }
    go = true;
    std::vector<Event> batch;
    for (;;) {
      const bool all_done = finished.load() == producers;
      batch.clear();
      q.drain(batch);
      tally.take(batch, gaps_allowed);
      if (all_done) break;  // drained once more after every producer finished
    }
    for (auto& t : threads) t.join();
    batch.clear();
    q.drain(batch);
    tally.take(batch, gaps_allowed);
    accepted = acc;
    refused = ref;
  }
};

TEST(EventQueues, ManyProducersOneConsumerLoseNothingWhileRingsHaveRoom) {
  constexpr uint32_t kProducers = 8;
  constexpr uint64_t kEach = 20000;
  EventQueues q(/*slots_per_queue=*/kEach, /*max_queues=*/kProducers);  // every ring holds a whole run
  const ProducerRun run(q, kProducers, kEach, /*gaps_allowed=*/false);
  EXPECT_EQ(run.refused, 0u);
  EXPECT_EQ(run.accepted, kProducers * kEach);
  EXPECT_EQ(run.tally.total, kProducers * kEach);
  EXPECT_TRUE(run.tally.in_order);
  for (uint64_t n : run.tally.next) EXPECT_EQ(n, kEach);
  EXPECT_EQ(q.queue_count(), kProducers);
}

TEST(EventQueues, AFullRingRefusesExactlyWhatDoesNotFitAndRecoversAfterADrain) {
  EventQueues q(/*slots_per_queue=*/64, /*max_queues=*/4);
  uint64_t refused = 0;
  for (uint64_t i = 0; i < 164; ++i) refused += q.push(numbered(0, i)) ? 0 : 1;
  EXPECT_EQ(refused, 100u);
  std::vector<Event> out;
  EXPECT_EQ(q.drain(out), 64u);
  ASSERT_EQ(out.size(), 64u);
  for (uint64_t i = 0; i < 64; ++i) EXPECT_EQ(out[i].correlation, i);  // the oldest kept, the new dropped
  EXPECT_TRUE(q.push(numbered(0, 500)));
  out.clear();
  EXPECT_EQ(q.drain(out), 1u);
  EXPECT_EQ(out.at(0).correlation, 500u);
}

TEST(EventQueues, ProducersOutrunningTheConsumerDropOnlyWhatTheyCount) {
  constexpr uint32_t kProducers = 6;
  constexpr uint64_t kEach = 50000;
  EventQueues q(/*slots_per_queue=*/256, /*max_queues=*/kProducers);  // small: drops are certain
  const ProducerRun run(q, kProducers, kEach, /*gaps_allowed=*/true);
  EXPECT_EQ(run.accepted + run.refused, kProducers * kEach);
  EXPECT_EQ(run.tally.total, run.accepted);  // every accepted event came out, once
  EXPECT_TRUE(run.tally.in_order);
}

TEST(EventQueues, ThreadsPastMaxQueuesShareTheOverflowRing) {
  constexpr uint32_t kProducers = 8;
  constexpr uint64_t kEach = 4000;
  EventQueues q(/*slots_per_queue=*/kProducers * kEach, /*max_queues=*/2);
  const ProducerRun run(q, kProducers, kEach, /*gaps_allowed=*/false);
  EXPECT_EQ(q.queue_count(), 2u);
  EXPECT_EQ(run.refused, 0u);
  EXPECT_EQ(run.tally.total, kProducers * kEach);
  EXPECT_TRUE(run.tally.in_order);
}

TEST(EventQueues, SeveralInstancesKeepTheirOwnRingsPerThread) {
  EventQueues a(64, 4), b(64, 4);
  std::thread t([&] {
    for (uint64_t i = 0; i < 10; ++i) {
      ASSERT_TRUE(a.push(numbered(0, i)));
      ASSERT_TRUE(b.push(numbered(0, 100 + i)));
    }
  });
  t.join();
  std::vector<Event> ea, eb;
  EXPECT_EQ(a.drain(ea), 10u);
  EXPECT_EQ(b.drain(eb), 10u);
  EXPECT_EQ(ea.front().correlation, 0u);
  EXPECT_EQ(eb.front().correlation, 100u);
}

}  // namespace

// NCCL's NVTX ranges (operation + message size, as the NVTX injection decodes them; see
// nvtx_injection_test and tests/live/nvtx for real NCCL's ranges) joined to the kernels they
// launched, and the straggler evidence that names the collective and its bytes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "live/live_pipeline.h"
#include "core/nccl_join.h"

namespace stepwatch::live {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr uint64_t k64MiB = 64ull << 20;

Event nccl_range(uint32_t thread, int64_t start, int64_t end, CollectiveType type, uint64_t bytes) {
  Event e;
  e.kind = EventKind::kRange;
  e.thread = thread;
  e.start_ns = start;
  e.end_ns = end;
  e.collective = type;
  e.bytes = bytes;
  return e;
}

Event launch(uint32_t thread, int64_t start, uint64_t correlation) {
  Event e;
  e.kind = EventKind::kApiCall;
  e.detail = static_cast<uint8_t>(ApiClass::kLaunch);
  e.thread = thread;
  e.start_ns = start;
  e.end_ns = start + 5000;
  e.correlation = correlation;
  return e;
}

Event kernel(int64_t start, int64_t end, uint64_t correlation, CollectiveType type, uint32_t stream = 7) {
  Event e;
  e.kind = EventKind::kKernel;
  e.start_ns = start;
  e.end_ns = end;
  e.correlation = correlation;
  e.collective = type;
  e.stream = stream;
  e.device = 0;
  return e;
}

TEST(NcclJoin, KernelTakesTheSizeAndOperationOfTheRangeAroundItsLaunch) {
  std::vector<Event> events = {
      kernel(1000, 2000, 42, CollectiveType::kOther),  // ncclDevKernel_Generic: the name tells nothing
      launch(7, 150, 42),
      nccl_range(7, 100, 300, CollectiveType::kAllReduce, k64MiB),
      nccl_range(7, 120, 200, CollectiveType::kAllGather, 1024),  // innermost wins
  };
  EXPECT_EQ(attach_nccl_ranges(events), 1u);
  EXPECT_EQ(events[0].bytes, 1024u);
  EXPECT_EQ(events[0].collective, CollectiveType::kAllGather);
  events[0].bytes = 0;
  events[3].end_ns = 140;  // ended before the launch: the outer range encloses it
  events[0].collective = CollectiveType::kAllReduce;  // a name that told: kept
  EXPECT_EQ(attach_nccl_ranges(events), 1u);
  EXPECT_EQ(events[0].bytes, k64MiB);
  EXPECT_EQ(events[0].collective, CollectiveType::kAllReduce);
}

TEST(NcclJoin, NoJoinWithoutAnEnclosingRangeOnTheLaunchingThread) {
  const std::vector<Event> base = {kernel(1000, 2000, 42, CollectiveType::kAllReduce), launch(7, 150, 42),
                                   nccl_range(7, 100, 300, CollectiveType::kAllReduce, k64MiB)};
  auto expect_none = [](std::vector<Event> events, const char* why) {
    EXPECT_EQ(attach_nccl_ranges(events), 0u) << why;
    EXPECT_EQ(events[0].bytes, 0u) << why;
  };
  std::vector<Event> e = base;
  e[1].thread = 8;
  expect_none(e, "launched on another thread");
  e = base;
  e[1].start_ns = 400;
  expect_none(e, "launched after the range (ncclGroupEnd of a group)");
  e = base;
  e[2].bytes = 0;
  expect_none(e, "the range's payload had no size");
  e = base;
  e[0].correlation = 43;
  expect_none(e, "the launch call is not in the data");
  e = base;
  e[0].collective = CollectiveType::kNone;
  expect_none(e, "a compute kernel");
  e = base;
  e.pop_back();
  expect_none(e, "no NCCL ranges at all (NCCL_NVTX_DISABLE=1)");
}

class Recorder final : public Reporter {
 public:
  void on_step(const StepView& v, StepStatus, std::span<const Finding> f) override {
    steps.push_back(v);
    findings.insert(findings.end(), f.begin(), f.end());
  }
  void on_run_finding(const Finding&) override {}
  void on_first_fire(const Finding&, std::span<const StepCapture* const>, const NameTable&) override {}
  void on_events(std::span<const Event>) override {}
  std::vector<StepView> steps;
  std::vector<Finding> findings;
};

// One step: compute 0-30 ms, then an all-reduce launched inside its NCCL range that runs
// `nccl_ms` after the compute, exposed.
void add_step(std::vector<Event>& events, NameTable& names, int64_t n, int64_t nccl_ms, uint64_t bytes) {
  const int64_t t0 = n * 100 * kMs;
  Event step;
  step.kind = EventKind::kRange;
  step.name = names.intern("step");
  step.thread = 7;
  step.start_ns = t0;
  step.end_ns = t0 + 60 * kMs;
  events.push_back(step);
  const uint64_t compute_corr = static_cast<uint64_t>(n * 10 + 1), nccl_corr = static_cast<uint64_t>(n * 10 + 2);
  events.push_back(launch(7, t0 + 10'000, compute_corr));
  Event compute = kernel(t0 + 50'000, t0 + 30 * kMs, compute_corr, CollectiveType::kNone);
  compute.name = names.intern("gemm");
  events.push_back(compute);
  events.push_back(nccl_range(7, t0 + 20'000, t0 + 60'000, CollectiveType::kAllReduce, bytes));
  events.push_back(launch(7, t0 + 30'000, nccl_corr));
  Event nccl = kernel(t0 + 30 * kMs, t0 + (30 + nccl_ms) * kMs, nccl_corr, CollectiveType::kOther, 8);
  nccl.name = names.intern("ncclDevKernel_Generic");
  events.push_back(nccl);
}

TEST(NcclJoin, StragglerEvidenceNamesTheCollectiveAndItsBytes) {
  NameTable names;
  std::vector<Event> events;
  for (int64_t n = 0; n < 6; ++n) add_step(events, names, n, n == 4 ? 24 : 6, k64MiB);
  LiveConfig config;
  config.warmup_steps = 0;
  config.flush_period_ms = 100;
  LossCounters losses;
  Recorder rec;
  LivePipeline pipeline(config, names, losses, rec);
  pipeline.ingest(events);
  pipeline.finish();
  ASSERT_EQ(rec.steps.size(), 6u);
  ASSERT_FALSE(rec.steps[0].collectives.empty());
  EXPECT_EQ(rec.steps[0].collectives[0].type, CollectiveType::kAllReduce) << "from the range, not the kernel name";
  EXPECT_EQ(rec.steps[0].collectives[0].bytes, k64MiB);
  const Finding* straggler = nullptr;
  for (const Finding& f : rec.findings) {
    if (f.detector == "straggler") straggler = &f;
  }
  ASSERT_NE(straggler, nullptr);
  EXPECT_EQ(straggler->step, 4);
  EXPECT_NE(straggler->message.find("AllReduce of 64.0 MiB"), std::string::npos) << straggler->message;
  bool has_bytes = false;
  for (const auto& [key, value] : straggler->evidence) {
    if (key == "bytes") has_bytes = std::get<int64_t>(value) == static_cast<int64_t>(k64MiB);
  }
  EXPECT_TRUE(has_bytes);
}

TEST(NcclJoin, ABiggerMessageIsNotAStraggler) {
  NameTable names;
  std::vector<Event> events;
  // Step 4 moves 4x the bytes in 4x the time: the work grew, no peer was late.
  for (int64_t n = 0; n < 6; ++n) add_step(events, names, n, n == 4 ? 24 : 6, n == 4 ? 4 * k64MiB : k64MiB);
  LiveConfig config;
  config.warmup_steps = 0;
  LossCounters losses;
  Recorder rec;
  LivePipeline pipeline(config, names, losses, rec);
  pipeline.ingest(events);
  pipeline.finish();
  ASSERT_EQ(rec.steps.size(), 6u);
  for (const Finding& f : rec.findings) EXPECT_NE(f.detector, "straggler") << f.message;
}

}  // namespace
}  // namespace stepwatch::live

// The catalog's trend and periodic detectors (recompilation, gc_pause, checkpoint_stall,
// epoch_boundary_stall, step_variance) on hand-built StepView sequences: the history each needs,
// the rule that fires, the step a trend finding carries, and the message's fix.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "stepwatch/core/detector.h"
#include "stepwatch/detectors/registry.h"
#include "detector_test_support.h"
#include "evidence_support.h"

namespace stepwatch {
namespace {

constexpr int64_t kMs = 1'000'000;

using testing::make;

// A sequence of steps laid end to end, numbered from 1, fed to one detector.
class Sequence {
 public:
  explicit Sequence(std::string_view id) : detector_(make(id)) {}

  // A step of `dur_ms`, GPU fully busy unless the caller adds idle; `shape` edits it first.
  template <typename Shape>
  Sequence& step(double dur_ms, Shape shape) {
    StepView v;
    v.rank = 1;
    v.step = ++number_;
    v.start_ns = now_;
    v.end_ns = now_ + static_cast<int64_t>(dur_ms * 1e6);
    v.source = StepSource::kRange;
    v.busy_ns = v.duration_ns();
    v.compute_ns = v.duration_ns();
    v.kernels = 160;
    now_ = v.end_ns;
    shape(v);
    detector_->on_step(v, sink_);
    return *this;
  }
  Sequence& step(double dur_ms) {
    return step(dur_ms, [](StepView&) {});
  }
  Sequence& steps(int n, double dur_ms) {
    for (int i = 0; i < n; ++i) step(dur_ms);
    return *this;
  }

  const std::vector<Finding>& findings() const { return sink_.findings; }
  std::vector<int64_t> flagged() const {
    std::vector<int64_t> s;
    for (const Finding& f : sink_.findings) s.push_back(f.step);
    return s;
  }

 private:
  std::unique_ptr<Detector> detector_;
  FindingCollector sink_;
  int64_t number_ = 0;
  int64_t now_ = 1'000 * kMs;
};

// Moves `ns` of the step from busy to idle of `cause`, as one rule-3 (or rule-2) gap.
void add_idle(StepView& v, IdleCause cause, int64_t ns) {
  v.busy_ns -= ns;
  v.compute_ns -= ns;
  v.idle[cause] += ns;
  GapRecord g;
  g.start_ns = v.start_ns + v.duration_ns() / 3;
  g.end_ns = g.start_ns + ns;
  g.counted_ns = ns;
  g.rule = cause == IdleCause::kSync ? GapRule::kHostBlocked : GapRule::kHostActivity;
  g.parts[cause] = ns;
  v.gaps.push_back(g);
}

bool mentions(const Finding& f, const std::string& text) { return f.message.find(text) != std::string::npos; }

TEST(CatalogBRegistry, EveryDetectorIsRegisteredWithADescription) {
  for (const char* id : {"recompilation", "checkpoint_stall", "epoch_boundary_stall", "gc_pause", "step_variance"}) {
    bool found = false;
    for (const DetectorInfo& d : registered_detectors()) {
      if (d.id != id) continue;
      found = true;
      EXPECT_FALSE(d.description.empty()) << id;
    }
    EXPECT_TRUE(found) << id;
  }
}

// ---- step_variance --------------------------------------------------------------------------------

TEST(StepVariance, EstablishedOnceAtTheFifthStepAfterTheFirst) {
  Sequence s("step_variance");
  s.step(30).steps(3, 30).step(60);  // 4 steps after the first: not enough yet
  EXPECT_TRUE(s.findings().empty());
  s.step(30);  // CV of 30, 30, 30, 60, 30: 0.33
  ASSERT_EQ(s.flagged(), std::vector<int64_t>{6});
  const Finding& f = s.findings()[0];
  EXPECT_NEAR(evidence<double>(f, "cv"), 0.333, 0.001);
  EXPECT_EQ(evidence<int64_t>(f, "steps"), 5);
  EXPECT_DOUBLE_EQ(evidence<double>(f, "p50_ms"), 30.0);
  EXPECT_DOUBLE_EQ(evidence<double>(f, "max_ms"), 60.0);
  EXPECT_DOUBLE_EQ(f.cost_ms, 30.0);  // the one slow step's time beyond the median
  EXPECT_NEAR(f.cost_pct, 100.0 * 30.0 / 180.0, 0.001);
  EXPECT_EQ(f.rank, 1);
  EXPECT_TRUE(mentions(f, "Fix: find what makes the slow steps slow")) << f.message;
  // Still varying: no second finding.
  s.step(60).step(30).step(60);
  EXPECT_EQ(s.findings().size(), 1u);
}

TEST(StepVariance, TheFirstStepOfTheDataIsNotPartOfTheStatistic) {
  // hta-ns_resolution: a 35 ms warm-up step, then 72, 96, 96, 96 ms.
  Sequence s("step_variance");
  s.step(35.1).step(72.1).step(95.7).step(95.6).step(95.7);
  EXPECT_TRUE(s.findings().empty());
  // The same steady state with one more step is still steady (CV ~0.1).
  s.step(95.6);
  EXPECT_TRUE(s.findings().empty());
}

TEST(StepVariance, ClearsAndComesBack) {
  Sequence s("step_variance");
  s.step(30).steps(4, 30).step(60);
  ASSERT_EQ(s.findings().size(), 1u);
  s.steps(70, 30);  // the slow step leaves the 64-step window: cleared
  EXPECT_EQ(s.findings().size(), 1u);
  for (int i = 0; i < 8; ++i) s.step(30).step(60);
  ASSERT_EQ(s.findings().size(), 2u);
  EXPECT_GT(s.findings()[1].step, 77);
}

TEST(StepVariance, SaysWhatTheSlowStepsAreSlowWith) {
  {  // idle
    Sequence s("step_variance");
    s.step(30).steps(4, 30).step(60, [](StepView& v) { add_idle(v, IdleCause::kInput, 30 * kMs); });
    ASSERT_EQ(s.findings().size(), 1u);
    EXPECT_TRUE(mentions(s.findings()[0], "slower by GPU idle time")) << s.findings()[0].message;
  }
  {  // more kernels
    Sequence s("step_variance");
    s.step(30).steps(4, 30).step(60, [](StepView& v) { v.kernels = 320; });
    ASSERT_EQ(s.findings().size(), 1u);
    EXPECT_TRUE(mentions(s.findings()[0], "run more GPU work (2.0x")) << s.findings()[0].message;
    EXPECT_DOUBLE_EQ(evidence<double>(s.findings()[0], "slow_kernel_ratio"), 2.0);
  }
  {  // same kernels, longer
    Sequence s("step_variance");
    s.step(30).steps(4, 30).step(60);
    ASSERT_EQ(s.findings().size(), 1u);
    EXPECT_TRUE(mentions(s.findings()[0], "same kernels for longer")) << s.findings()[0].message;
  }
  {  // only faster steps vary: nothing is lost, no finding (the cost rule)
    Sequence s("step_variance");
    s.step(100).steps(3, 100).step(20).step(20);
    EXPECT_TRUE(s.findings().empty()) << s.findings()[0].message;
  }
}

TEST(StepVariance, RespectsTheCostRule) {
  // Three start-up steps of 4.8-13 ms before steady 45 ms ones: CV over 0.2, but the slower-than-
  // median steps are barely slower (0.3 ms in all): no finding.
  Sequence s("step_variance");
  s.step(40).step(4.8).step(9.1).step(13.0);
  for (int i = 0; i < 12; ++i) s.step(i % 2 == 0 ? 45.0 : 45.05);
  EXPECT_TRUE(s.findings().empty()) << s.findings()[0].message;
  // Genuine variation still costs and fires once.
  s.steps(2, 45).step(90).step(45).step(95);
  EXPECT_EQ(s.findings().size(), 1u);
}

TEST(StepVariance, AStartUpRampIsLeftOutButOneOffStepIsNot) {
  {  // slow start-up steps settling toward the level: no finding
    Sequence s("step_variance");
    s.step(40).step(200).step(120).step(70);
    for (int i = 0; i < 8; ++i) s.step(45);
    EXPECT_TRUE(s.findings().empty()) << s.findings()[0].message;
  }
  {  // one slow step first (not a ramp): the jitter after it fires, counting it
    Sequence s("step_variance");
    s.step(40).step(70).step(45).step(45).step(90).step(45);
    ASSERT_EQ(s.findings().size(), 1u);
    EXPECT_EQ(evidence<int64_t>(s.findings()[0], "steps"), 5);
  }
  {  // a ramp, then a loop that alternates: still step_variance, over the steps after the ramp
    Sequence s("step_variance");
    s.step(40).step(5).step(10).step(20);
    for (int i = 0; i < 6; ++i) s.step(i % 2 == 0 ? 45 : 90);
    ASSERT_EQ(s.findings().size(), 1u);
    EXPECT_EQ(evidence<double>(s.findings()[0], "min_ms"), 45.0);
  }
}

TEST(StepVariance, SilentBelowCv02) {
  Sequence s("step_variance");
  s.step(30);
  for (int i = 0; i < 20; ++i) s.step(i % 2 == 0 ? 30 : 39);  // CV ~0.13
  EXPECT_TRUE(s.findings().empty());
}

// ---- recompilation ----------------------------------------------------------------------------

TEST(Recompilation, FiresOnATenfoldStepWithTheGpuIdleWhileTheHostWorks) {
  Sequence s("recompilation");
  s.steps(3, 30).step(630, [](StepView& v) { add_idle(v, IdleCause::kHost, 590 * kMs); });
  ASSERT_EQ(s.flagged(), std::vector<int64_t>{4});
  const Finding& f = s.findings()[0];
  EXPECT_DOUBLE_EQ(f.cost_ms, 600.0);
  EXPECT_EQ(f.severity, Severity::kCritical);
  EXPECT_DOUBLE_EQ(evidence<double>(f, "median_ms"), 30.0);
  EXPECT_DOUBLE_EQ(evidence<double>(f, "ratio"), 21.0);
  EXPECT_TRUE(mentions(f, "21x the median 30.0 ms")) << f.message;
  EXPECT_TRUE(mentions(f, "torch._dynamo.mark_dynamic")) << f.message;
  EXPECT_TRUE(mentions(f, "TORCH_LOGS=recompiles")) << f.message;
}

TEST(Recompilation, NeedsThreeStepsBeforeAndATenfoldStep) {
  auto host_idle = [](int64_t ms) { return [ms](StepView& v) { add_idle(v, IdleCause::kHost, ms * kMs); }; };
  Sequence early("recompilation");
  early.steps(2, 30).step(630, host_idle(590));
  EXPECT_TRUE(early.findings().empty());
  Sequence nine_x("recompilation");
  nine_x.steps(3, 30).step(270, host_idle(230));
  EXPECT_TRUE(nine_x.findings().empty());
}

TEST(Recompilation, SilentWhenTheIdleIsNotHostTime) {
  for (IdleCause cause : {IdleCause::kInput, IdleCause::kSync, IdleCause::kOther}) {
    Sequence s("recompilation");
    s.steps(3, 30).step(630, [cause](StepView& v) { add_idle(v, cause, 590 * kMs); });
    EXPECT_TRUE(s.findings().empty()) << to_string(cause);
  }
  Sequence busy("recompilation");  // a long step the GPU spent working
  busy.steps(3, 30).step(630);
  EXPECT_TRUE(busy.findings().empty());
  Sequence gc("recompilation");  // the shim's GC phases explain the host time
  gc.steps(3, 30).step(630, [](StepView& v) {
    add_idle(v, IdleCause::kHost, 590 * kMs);
    v.gc_ns = 580 * kMs;
  });
  EXPECT_TRUE(gc.findings().empty());
}

// ---- checkpoint_stall ---------------------------------------------------------------------------

void checkpoint(StepView& v) {
  // 200 ms of DtoH copies (4 x 256 MiB) with compute idle, then 100 ms of write: +300 ms.
  v.busy_ns = v.duration_ns() - 100 * kMs - 200 * kMs;
  v.compute_ns = v.busy_ns;
  v.copy_ns = v.copy_only_ns = 200 * kMs;
  v.busy_ns += v.copy_ns;
  v.idle[IdleCause::kSync] = 100 * kMs;
  for (int i = 0; i < 4; ++i) {
    v.copies.push_back(CopyRecord{CopyKind::kDtoH, MemoryKind::kDevice, MemoryKind::kPageable, 256ull << 20,
                                  v.start_ns + 40 * kMs + i * 50 * kMs, 50 * kMs, false});
  }
}

TEST(CheckpointStall, ReportedFromTheSecondOccurrenceOnWithPeriodAndTax) {
  Sequence s("checkpoint_stall");
  s.steps(3, 30).step(330, checkpoint).steps(2, 30).step(330, checkpoint).steps(2, 30).step(330, checkpoint);
  ASSERT_EQ(s.flagged(), (std::vector<int64_t>{7, 10}));
  const Finding& f = s.findings()[0];
  EXPECT_DOUBLE_EQ(f.cost_ms, 300.0);
  EXPECT_EQ(evidence<int64_t>(f, "period_steps"), 3);
  EXPECT_DOUBLE_EQ(evidence<double>(f, "interval_ms"), 390.0);  // 330 + 30 + 30
  EXPECT_NEAR(evidence<double>(f, "tax_pct"), 100.0 * 300.0 / 390.0, 0.001);
  EXPECT_DOUBLE_EQ(evidence<double>(f, "dtoh_ms"), 200.0);
  EXPECT_EQ(evidence<int64_t>(f, "dtoh_bytes"), int64_t{1} << 30);
  EXPECT_TRUE(mentions(f, "every 3 steps a checkpoint stall: 200.0 ms of device-to-host copies (1.0 GiB"))
      << f.message;
  EXPECT_TRUE(mentions(f, "async_save")) << f.message;
}

TEST(CheckpointStall, SilentWhenTheCopiesOverlapComputeOrAreSmall) {
  auto overlapped = [](StepView& v) {
    checkpoint(v);
    v.copy_only_ns = 20 * kMs;  // the copies ran under compute kernels
  };
  Sequence s("checkpoint_stall");
  s.steps(3, 30).step(330, overlapped).steps(2, 30).step(330, overlapped).steps(2, 30).step(330, overlapped);
  EXPECT_TRUE(s.findings().empty());
  auto scalars = [](StepView& v) {
    add_idle(v, IdleCause::kHost, 290 * kMs);
    v.copies.push_back(CopyRecord{CopyKind::kDtoH, MemoryKind::kDevice, MemoryKind::kPinned, 4, v.start_ns, 2'000, true});
  };
  Sequence t("checkpoint_stall");
  t.steps(3, 30).step(330, scalars).steps(2, 30).step(330, scalars).steps(2, 30).step(330, scalars);
  EXPECT_TRUE(t.findings().empty());
}

// ---- epoch_boundary_stall -----------------------------------------------------------------------

TEST(EpochBoundaryStall, APeriodicInputSpikeOnTopOfTheUsualWait) {
  auto usual = [](StepView& v) {
    add_idle(v, IdleCause::kInput, 10 * kMs);
    v.data_wait_ns = 12 * kMs;
  };
  auto boundary = [](StepView& v) {
    add_idle(v, IdleCause::kInput, 410 * kMs);
    v.data_wait_ns = 412 * kMs;
  };
  Sequence s("epoch_boundary_stall");
  for (int epoch = 0; epoch < 3; ++epoch) {
    for (int i = 0; i < 4; ++i) s.step(40, usual);
    s.step(440, boundary);
  }
  ASSERT_EQ(s.flagged(), (std::vector<int64_t>{10, 15}));
  const Finding& f = s.findings()[0];
  EXPECT_DOUBLE_EQ(f.cost_ms, 400.0);
  EXPECT_EQ(evidence<int64_t>(f, "period_steps"), 5);
  EXPECT_DOUBLE_EQ(evidence<double>(f, "typical_input_idle_ms"), 10.0);
  EXPECT_TRUE(mentions(f, "persistent_workers=True")) << f.message;
}

TEST(EpochBoundaryStall, SilentOnSteadyStarvationAndOnIrregularSpikes) {
  Sequence steady("epoch_boundary_stall");
  for (int i = 0; i < 20; ++i) steady.step(60, [](StepView& v) { add_idle(v, IdleCause::kInput, 30 * kMs); });
  EXPECT_TRUE(steady.findings().empty());

  // Spikes at steps 4, 10, 12, 17: 10 establishes a period of 6; 12 and 17 are off it.
  Sequence irregular("epoch_boundary_stall");
  const std::vector<int> spikes = {4, 10, 12, 17};
  for (int n = 1; n <= 20; ++n) {
    if (std::find(spikes.begin(), spikes.end(), n) != spikes.end()) {
      irregular.step(430, [](StepView& v) { add_idle(v, IdleCause::kInput, 400 * kMs); });
    } else {
      irregular.step(30);
    }
  }
  EXPECT_EQ(irregular.flagged(), std::vector<int64_t>{10});
}

// ---- gc_pause -----------------------------------------------------------------------------------

auto host_stall(int64_t ms, int64_t gc_ms = 0) {
  return [ms, gc_ms](StepView& v) {
    add_idle(v, IdleCause::kHost, ms * kMs);
    v.gc_ns = gc_ms * kMs;
  };
}

TEST(GcPause, AnIrregularTenToHundredMillisecondHostStall) {
  Sequence s("gc_pause");
  s.steps(3, 30).step(70, host_stall(40)).steps(3, 30).step(70, host_stall(40));
  ASSERT_EQ(s.flagged(), (std::vector<int64_t>{4, 8}));
  const Finding& f = s.findings()[0];
  EXPECT_DOUBLE_EQ(f.cost_ms, 40.0);
  EXPECT_EQ(evidence<int64_t>(f, "gc_confirmed"), 0);
  EXPECT_TRUE(mentions(f, "host stall of 40.0 ms")) << f.message;
  EXPECT_TRUE(mentions(f, "Fix: gc.disable() and gc.collect() at step boundaries")) << f.message;
}

TEST(GcPause, OutsideTenToHundredMillisecondsOrWithoutHistorySilent) {
  Sequence s("gc_pause");
  s.steps(3, 30).step(38, host_stall(8)).step(180, host_stall(150));
  Sequence early("gc_pause");
  early.steps(2, 30).step(70, host_stall(40));
  EXPECT_TRUE(s.findings().empty());
  EXPECT_TRUE(early.findings().empty());
}

TEST(GcPause, AStallOnMostStepsIsTheLoopsOwnHostWork) {
  Sequence s("gc_pause");
  for (int i = 0; i < 12; ++i) s.step(60, host_stall(30));
  EXPECT_TRUE(s.findings().empty());
}

TEST(GcPause, GcPhasesConfirmAndOnceSeenAreRequired) {
  Sequence s("gc_pause");
  s.step(70, host_stall(40, 41));                    // confirmed: no history needed
  s.steps(3, 30).step(70, host_stall(40));           // the shim reports GC, this stall had none
  s.steps(3, 30).step(70, host_stall(40, 40));
  ASSERT_EQ(s.flagged(), (std::vector<int64_t>{1, 9}));
  EXPECT_EQ(evidence<int64_t>(s.findings()[0], "gc_confirmed"), 1);
  EXPECT_TRUE(mentions(s.findings()[0], "inside a Python GC phase (gc 41.0 ms")) << s.findings()[0].message;
}

}  // namespace
}  // namespace stepwatch

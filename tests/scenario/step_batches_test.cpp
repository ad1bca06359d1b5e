// The offline final pass judged in batches (step_batches.h) gives what one Timeline over the whole
// trace gives: every step record (gaps included), every finding and the summary (HTA's overlap
// too), for every generator scenario, with marks and inferred, at batch sizes from one window per
// batch up, and at two threads as at one. The corpus traces get the same checks in
// tests/corpus/corpus_batches_test.cpp.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "batch_lines.h"
#include "synthetic/workload.h"

namespace stepwatch {
namespace {

using testing::analyze_in_batches;
using Lines = testing::BatchLines;

void expect_same(const Lines& whole, const Lines& batched, const std::string& what) {
  EXPECT_EQ(whole.windows, batched.windows) << what;
  testing::expect_same_lines(whole, batched, what);
}

class StepBatchesParity : public ::testing::TestWithParam<std::string> {};

TEST_P(StepBatchesParity, BatchesJudgeEveryStepAsOneTimelineDoes) {
  synthetic::ScenarioOptions opts;
  opts.steps = 10;
  const synthetic::SyntheticRun run = synthetic::make_scenario(GetParam(), opts);
  const size_t n = run.trace.events.size();
  const Lines whole = analyze_in_batches(run.trace, n);  // one batch: the trace judged at once
  ASSERT_FALSE(whole.steps.empty());
  EXPECT_EQ(whole.timelines, 1);
  // 1: every window a batch of its own; n/7, n/3: several windows a batch, cut mid-loop.
  for (size_t batch : {size_t{1}, n / 7, n / 3}) {
    const Lines batched = analyze_in_batches(run.trace, batch);
    // Judged in batches indeed: one window a batch builds a Timeline per step (the closing empty
    // step dropped at the end has none of its own when it shares the last batch).
    if (batch == 1) {
      EXPECT_GE(batched.timelines + 1, static_cast<int>(whole.windows)) << GetParam();
    }
    if (whole.windows >= 4) {
      EXPECT_GT(batched.timelines, 1) << GetParam() << " batch " << batch;
    }
    expect_same(whole, batched, GetParam() + " batch " + std::to_string(batch));
  }
}

// Two threads (stepwatch analyze's default on two cores: the sort, the Timeline's indexes and the
// step views shared) give what one gives, at once and in batches.
TEST_P(StepBatchesParity, TwoThreadsJudgeEveryStepAsOneDoes) {
  synthetic::ScenarioOptions opts;
  opts.steps = 10;
  const synthetic::SyntheticRun run = synthetic::make_scenario(GetParam(), opts);
  const size_t n = run.trace.events.size();
  for (size_t batch : {n, n / 7}) {
    const Lines one = analyze_in_batches(run.trace, batch, 1);
    const Lines two = analyze_in_batches(run.trace, batch, 2);
    expect_same(one, two, GetParam() + " two threads, batch " + std::to_string(batch));
  }
}

std::vector<std::string> streams() {
  std::vector<std::string> out;
  for (const std::string& s : synthetic::scenario_names()) {
    out.push_back(s);
    if (s != "no_marks") out.push_back(s + "+no_marks");  // inferred steps
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Scenarios, StepBatchesParity, ::testing::ValuesIn(streams()),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           std::string name = p.param;
                           for (char& c : name) {
                             if (c == '+') c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace stepwatch

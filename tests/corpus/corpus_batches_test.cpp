// Real traces judged in batches (step_batches.h) give what one Timeline over the whole trace gives:
// every step record with its gaps, every finding and the summary, at a batch of one window and at
// a few windows a batch, and on two threads as on one. (The corpus traces are below the offline
// batch size: this is the only place their batched verdicts are seen.)
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "corpus_support.h"
#include "batch_lines.h"
#include "stepwatch/import/kineto_importer.h"

namespace stepwatch {
namespace {

using testing::analyze_in_batches;
using Lines = testing::BatchLines;

TEST(CorpusBatches, EveryTraceJudgedInBatchesAsAtOnce) {
  STEPWATCH_REQUIRE_CORPUS();
  for (const auto& file : testing::kineto_files()) {
    SCOPED_TRACE(file.filename().string());
    const Trace trace = import_kineto_file(file.string());
    const size_t n = trace.events.size();
    const Lines whole = analyze_in_batches(trace, n);
    EXPECT_EQ(whole.timelines, 1);
    for (size_t batch : {size_t{1}, n / 5}) {
      const Lines batched = analyze_in_batches(trace, batch);
      if (whole.steps.size() > 1) {
        EXPECT_GT(batched.timelines, 1) << "batch " << batch;
      }
      testing::expect_same_lines(whole, batched, "batch " + std::to_string(batch));
    }
  }
}

// Two threads (the sort, the Timeline's indexes and the step views shared) give what one gives.
TEST(CorpusBatches, EveryTraceJudgedOnTwoThreadsAsOnOne) {
  STEPWATCH_REQUIRE_CORPUS();
  for (const auto& file : testing::kineto_files()) {
    SCOPED_TRACE(file.filename().string());
    const Trace trace = import_kineto_file(file.string());
    const size_t n = trace.events.size();
    for (size_t batch : {n, n / 5}) {
      const Lines one = analyze_in_batches(trace, batch, 1);
      const Lines two = analyze_in_batches(trace, batch, 2);
      testing::expect_same_lines(one, two, "two threads, batch " + std::to_string(batch));
    }
  }
}

}  // namespace
}  // namespace stepwatch

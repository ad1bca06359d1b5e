#!/usr/bin/env bash
# ThreadSanitizer over the concurrent parts: the per-thread event queues, the name table, the NVTX
# hooks (many threads; and the real NVTX injection into a child process), the CUPTI adapter's
# buffer/flush threads, the live session's analysis thread (the soak driver, short), and the real
# libstepwatch.so loaded into the end-to-end driver. Builds build-tsan/ (-DSTEPWATCH_TSAN=ON).
# Fails on any TSan report (halt_on_error) or test failure.   Usage: tests/tsan/run_tsan.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
bdir=${TSAN_BUILD_DIR:-$root/build-tsan}
jobs=$(nproc 2>/dev/null || echo 2)

echo "== tsan: build ($bdir) =="
cmake -S . -B "$bdir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTEPWATCH_TSAN=ON -DSTEPWATCH_BUILD_BENCH=OFF >/dev/null
targets=(stepwatch_unit_tests stepwatch_live_base_tests)
known=$(cmake --build "$bdir" --target help 2>/dev/null || true)
live=0
if grep -qw stepwatch_live_tests <<<"$known"; then
  targets+=(stepwatch_live_tests)
  live=1
fi
soak=0
if grep -qw stepwatch_soak <<<"$known"; then
  targets+=(stepwatch_soak)
  soak=1
fi
cmake --build "$bdir" -j"$jobs" --target "${targets[@]}"

# halt_on_error: the first report fails the run. second_deadlock_stack for lock-order reports.
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 history_size=4 ${TSAN_OPTIONS:-}"
# The name table's lock, and the offline analysis's threads (the import's reader thread indexing
# and walking chunks, the sort, the Timeline's indexes and the step views shared).
echo "== tsan: unit (NameTable, offline threads) =="
"$bdir/bin/stepwatch_unit_tests" --gtest_brief=1 --gtest_filter='NameTable.*:Parallel.*:ParallelAnalysis.*:SortByStart.*'
# The CUDA-free live parts: queues, the samplers' threads (the /proc host sampler, NVML through the
# fake library).
base_filter='EventQueues.*:HostSamplerLive.*:NvmlSampler.SamplesEveryVisibleGpuAsNvmlEvents:NvmlSamplerPipeline.*'
echo "== tsan: live base ($base_filter) =="
"$bdir/bin/stepwatch_live_base_tests" --gtest_brief=1 --gtest_filter="$base_filter"
if [ "$live" = 1 ]; then
  filter='NvtxHooksTest.ManyThreadsPushPopAndStartEndConcurrently:NvtxHooksTest.ConcurrentRegistrationGivesOneHandlePerNameAndText'
  filter+=':NvtxHooksTest.StartEndPairsAcrossThreads:NvtxInjection.*'
  filter+=':CuptiAdapterTest.BuffersCompletedFromManyThreadsConcurrently:CuptiAdapterTest.TheFlushThreadFlushesDeliversAndAdvancesTheWatermark'
  filter+=':CuptiAdapterTest.ShutdownFlushesForcedOnceAndClosesTheSink:CuptiBufferPoolTest.ConcurrentUseNeverExceedsTheCap'
  filter+=':CuptiCallbacksTest.ManyThreadsCountExactly'
  # The completeness watermark: application threads' rings against the flush thread's tick, the
  # faithful model's buffers delivered inside FlushAll, pause's drain, the resume retry.
  filter+=':LaunchTracker.ABusyThreadsCallsAllFitBetweenTwoTicks:CuptiAdapterModelTest.*'
  filter+=':FaithfulProfiler.WithTeardownTracingResumesOnTheConvertedClock:FaithfulSync.*:FaithfulExit.*'
  filter+=':LiveHealthy.*:LiveErrors.PoolExhaustedIsReportedAsDataLoss:LiveErrors.FatalErrorCallbackNeverCrashes'
  filter+=':LiveErrors.UnderscoreExitLeavesValidFiles'
  # The 64-thread launch storm and SIGTERM under the default disposition. Not the host handler that
  # calls exit() from the signal: that is the host's async-signal-unsafe choice, which TSan reports.
  filter+=':LiveStorm.*:LiveSignals.SigtermDuringAFlushEndsTheProcessAtOnceWithValidFiles'
  # The metrics server thread reading the analysis thread's snapshot while sessions run; its
  # poll loop over many connections at once, its counters read by the analysis thread.
  filter+=':MetricsHttpServer.ServesOverASocketAndRefusesGarbage:MultiRankOutputs.*'
  filter+=':MetricsHttpServer.HalfOpenConnectionsDoNotDelayAScrape:MetricsHttpServer.TheCapAndTheDeadlineCloseIdleConnections'
  filter+=':MetricsExporter.SaysOnceWhenTheEndpointsLimitsAreHit'
  echo "== tsan: live ($filter) =="
  "$bdir/bin/stepwatch_live_tests" --gtest_brief=1 --gtest_filter="$filter"
else
  echo "tsan: the live library is not built here (no CUDA toolkit): live tests skipped" >&2
fi
if [ "$soak" = 1 ]; then
  # The live session end to end in-process: two producers, the analysis thread, flushes.
  # (RSS figures are meaningless under TSan: no limits here.)
  echo "== tsan: live session (stepwatch_soak, short) =="
  "$bdir/bin/stepwatch_soak" --events 300000 --steps-per-chunk 8 --tolerance-mib 100000 --cap-mib 100000 | tail -3
fi
echo "tsan: no reports"

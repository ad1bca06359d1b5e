// The nsys SQLite importer on the corpus's six exports, against the counts of
// ../shared/corpus/README.md (syncs and synchronous copies counted by runtime API name, one per call).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "corpus_support.h"
#include "stepwatch/core/analysis.h"
#include "stepwatch/core/classify.h"
#include "stepwatch/detectors/registry.h"
#include "stepwatch/import/nsys_importer.h"

namespace stepwatch {
namespace {

std::filesystem::path nsys_dir() { return testing::corpus_dir() / "nsys"; }

#define STEPWATCH_REQUIRE_NSYS_CORPUS()                                                 \
  do {                                                                                   \
    if (!std::filesystem::is_directory(nsys_dir()))                                      \
      GTEST_SKIP() << "nsys corpus not found at " << nsys_dir() << " (skipping)";        \
  } while (0)

struct Counts {
  int kernels = 0;
  int memcpys = 0;  // GPU copy records
  int stream_syncs = 0;
  int device_syncs = 0;
  int event_syncs = 0;
  int sync_memcpys = 0;  // synchronous cudaMemcpy calls
};

Counts count(const Trace& t) {
  Counts c;
  for (const Event& e : t.events) {
    if (e.kind == EventKind::kKernel) ++c.kernels;
    if (e.kind == EventKind::kMemcpy) ++c.memcpys;
    if (e.kind != EventKind::kApiCall) continue;
    switch (e.api_class()) {
      case ApiClass::kStreamSync: ++c.stream_syncs; break;
      case ApiClass::kDeviceSync: ++c.device_syncs; break;
      case ApiClass::kEventSync: ++c.event_syncs; break;
      case ApiClass::kMemcpySync: ++c.sync_memcpys; break;
      default: break;
    }
  }
  return c;
}

struct Expected {
  const char* file;
  const char* device;  // substring of the device name
  int kernels;
  int memcpys;  // -1: the README gives no number
  int stream_syncs, device_syncs, event_syncs, sync_memcpys;
  int unlaunched;  // GPU records whose correlationId no runtime row has (in the file itself)
};

constexpr Expected kExpected[] = {
    {"fuser-report1.sqlite", "H200", 18, -1, 2, 1, 0, 0, 0},
    {"pipit-cloverleaf.sqlite", "A100", 1312, -1, 0, 1312, 0, 279, 0},
    {"pipit-saxpy-mpi.sqlite", "A100", 5, -1, 0, 0, 0, 15, 0},
    {"extrap-concurrent-profile16.sqlite", "GTX 1060", 12, 30, 10, 1, 5, 0, 0},
    {"extrap-con_kernel.sqlite", "GTX 1060", 9, 11, 0, 1, 5, 0, 3},  // 2 kernels, 1 copy
    {"extrap-ex-gpu.sqlite", "A100", 6, -1, 0, 7, 0, 1, 0},
};

TEST(CorpusNsys, EveryFileImportsWithTheReadmeCounts) {
  STEPWATCH_REQUIRE_NSYS_CORPUS();
  for (const Expected& x : kExpected) {
    SCOPED_TRACE(x.file);
    const Trace t = import_nsys_sqlite((nsys_dir() / x.file).string());
    EXPECT_EQ(t.format, "nsys");
    EXPECT_EQ(t.rank, -1);
    EXPECT_NE(t.device_name.find(x.device), std::string::npos) << t.device_name;
    const Counts c = count(t);
    EXPECT_EQ(c.kernels, x.kernels);
    if (x.memcpys >= 0) {
      EXPECT_EQ(c.memcpys, x.memcpys);
    }
    EXPECT_EQ(c.stream_syncs, x.stream_syncs);
    EXPECT_EQ(c.device_syncs, x.device_syncs);
    EXPECT_EQ(c.event_syncs, x.event_syncs);
    EXPECT_EQ(c.sync_memcpys, x.sync_memcpys);
    // Every kernel and copy whose call the export recorded joins that call.
    int joined = 0, gpu_records = 0;
    for (const Event& e : t.events) {
      if (e.kind != EventKind::kKernel && e.kind != EventKind::kMemcpy) continue;
      ++gpu_records;
      joined += std::any_of(t.events.begin(), t.events.end(), [&](const Event& a) {
        return a.kind == EventKind::kApiCall && a.correlation == e.correlation && e.correlation != 0;
      });
    }
    EXPECT_EQ(gpu_records - joined, x.unlaunched);
  }
}

TEST(CorpusNsys, EveryNsysFileInTheCorpusImports) {
  STEPWATCH_REQUIRE_NSYS_CORPUS();
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(nsys_dir())) {
    if (entry.path().extension() != ".sqlite") continue;
    SCOPED_TRACE(entry.path().string());
    EXPECT_NO_THROW((void)import_nsys_sqlite(entry.path().string()));
    ++n;
  }
  EXPECT_EQ(n, 6);
}

// Old exports write two rows per runtime call (`cudaMemcpy` and `cudaMemcpy_v3020`): one call.
TEST(CorpusNsys, DuplicateRuntimeRowsAreOneCall) {
  STEPWATCH_REQUIRE_NSYS_CORPUS();
  const Trace t = import_nsys_sqlite((nsys_dir() / "pipit-saxpy-mpi.sqlite").string());
  int api_calls = 0;
  for (const Event& e : t.events) api_calls += e.kind == EventKind::kApiCall;
  EXPECT_EQ(api_calls, 57);  // 95 rows, 57 distinct correlation ids
}

// CloverLeaf synchronizes the device after each of its 1,312 kernels: the analysis must say so.
TEST(CorpusNsys, CloverleafHeavySyncsAreReported) {
  STEPWATCH_REQUIRE_NSYS_CORPUS();
  Trace trace = import_nsys_sqlite((nsys_dir() / "pipit-cloverleaf.sqlite").string());
  AnalysisConfig config;
  auto detectors = make_detectors(config);
  const RankResult r = analyze_rank(trace, 0, config, std::move(detectors));
  ASSERT_FALSE(r.steps.empty());
  int device_syncs = 0;
  for (const StepView& v : r.steps) {
    for (const BlockingCallStat& b : v.blocking) {
      if (b.api_class == ApiClass::kDeviceSync) device_syncs += b.count;
    }
  }
  // Steps may cover only part of the capture (segmentation is not the importer's business): the
  // syncs inside them are what the blocking-call stats and hidden_sync must show.
  EXPECT_GT(device_syncs, 0);
  const bool sync_finding = std::any_of(r.findings.begin(), r.findings.end(), [](const Finding& f) {
    return (f.detector == "hidden_sync" || f.detector == "sync_memcpy") &&
           f.message.find("cudaDeviceSynchronize") != std::string::npos;
  });
  EXPECT_TRUE(sync_finding) << "no hidden_sync / sync_memcpy finding naming cudaDeviceSynchronize on pipit-cloverleaf";
}

}  // namespace
}  // namespace stepwatch

// The Kineto importer on the real traces of ../shared/corpus/kineto. The expected counts were
// taken from the files with an independent Python reader (json + Decimal), not from this importer.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "stepwatch/core/event.h"
#include "stepwatch/import/kineto_importer.h"

namespace stepwatch {
namespace {

namespace fs = std::filesystem;

const fs::path kKinetoDir = fs::path(STEPWATCH_CORPUS_DIR) / "kineto";

#define SKIP_WITHOUT_CORPUS()                                                           \
  do {                                                                                  \
    if (!fs::is_directory(kKinetoDir)) GTEST_SKIP() << "corpus not found at " << kKinetoDir; \
  } while (0)

std::vector<fs::path> kineto_files() {
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(kKinetoDir)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && name.size() > 8 && name.ends_with(".json.gz")) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// The one trace file of a corpus folder (the folders hold one trace each, except the ones the
// tests name by file).
Trace import_folder(std::string_view folder) {
  for (const auto& entry : fs::directory_iterator(kKinetoDir / folder)) {
    if (entry.path().string().ends_with(".json.gz")) return import_kineto_file(entry.path().string());
  }
  ADD_FAILURE() << "no trace in " << folder;
  Trace none;
  return none;
}

size_t count_events(const Trace& t, auto pred) {
  return static_cast<size_t>(std::count_if(t.events.begin(), t.events.end(), pred));
}

size_t count_kind(const Trace& t, EventKind kind) {
  return count_events(t, [kind](const Event& e) { return e.kind == kind; });
}

size_t count_named(const Trace& t, EventKind kind, std::string_view prefix) {
  return count_events(t, [&](const Event& e) { return e.kind == kind && t.names.view(e.name).starts_with(prefix); });
}

size_t host_step_ranges(const Trace& t) {
  return count_events(t, [&](const Event& e) {
    return e.kind == EventKind::kRange && !e.has_flag(event_flags::kOnDevice) &&
           t.names.view(e.name).starts_with("ProfilerStep#");
  });
}

TEST(KinetoCorpusImport, EveryTraceImportsWithGpuRecords) {
  SKIP_WITHOUT_CORPUS();
  const std::vector<fs::path> files = kineto_files();
  EXPECT_GE(files.size(), 20u);
  for (const fs::path& file : files) {
    SCOPED_TRACE(file.string());
    Trace t;
    ASSERT_NO_THROW(t = import_kineto_file(file.string()));
    EXPECT_EQ(t.format, "kineto");
    EXPECT_EQ(t.source, file.string());
    EXPECT_GT(count_events(t, [](const Event& e) { return e.is_gpu_record(); }), 0u);
    EXPECT_GT(count_kind(t, EventKind::kApiCall), 0u);
    for (const Event& e : t.events) {
      ASSERT_LE(e.start_ns, e.end_ns);
      ASSERT_GT(e.start_ns, 0);
    }
  }
}

TEST(KinetoCorpusImport, AlexnetCriticalPath) {
  SKIP_WITHOUT_CORPUS();
  const Trace t = import_folder("hta-critical_path-alexnet");
  EXPECT_EQ(t.rank, 0);
  EXPECT_EQ(t.device_name, "NVIDIA A100-PG509-200");
  EXPECT_EQ(count_kind(t, EventKind::kKernel), 79u);
  EXPECT_EQ(count_kind(t, EventKind::kMemcpy), 16u);
  EXPECT_EQ(count_kind(t, EventKind::kMemset), 3u);
  EXPECT_EQ(count_kind(t, EventKind::kApiCall), 361u);
  EXPECT_EQ(count_kind(t, EventKind::kRange), 367u);
  EXPECT_EQ(host_step_ranges(t), 0u);
  EXPECT_EQ(count_events(t, [](const Event& e) { return e.kind == EventKind::kSync && e.sync_kind() == SyncKind::kStream; }),
            16u);
  EXPECT_EQ(count_events(t, [](const Event& e) { return e.kind == EventKind::kSync && e.sync_kind() == SyncKind::kContext; }),
            5u);
  EXPECT_EQ(count_events(t, [](const Event& e) { return e.api_class() == ApiClass::kStreamSync && e.kind == EventKind::kApiCall; }),
            16u);
  EXPECT_EQ(count_events(t, [](const Event& e) {
              return e.kind == EventKind::kMemcpy && e.copy_kind() == CopyKind::kHtoD &&
                     e.src_memory == MemoryKind::kPageable && e.dst_memory == MemoryKind::kDevice;
            }),
            16u);
  // Context syncs wait on no stream: CUPTI's UINT32_MAX.
  EXPECT_EQ(count_events(t, [](const Event& e) { return e.kind == EventKind::kSync && e.stream == 0xffffffffu; }), 5u);

  const Event* first_kernel = nullptr;
  for (const Event& e : t.events) {
    if (e.kind == EventKind::kKernel && (first_kernel == nullptr || e.start_ns < first_kernel->start_ns)) first_kernel = &e;
  }
  ASSERT_NE(first_kernel, nullptr);
  EXPECT_EQ(first_kernel->start_ns, 1695835573023613000);
  EXPECT_EQ(first_kernel->duration_ns(), 71000);
  EXPECT_EQ(first_kernel->stream, 7u);
  EXPECT_EQ(first_kernel->correlation, 218u);
}

TEST(KinetoCorpusImport, DfIndexResolverRank1WithAllReduce) {
  SKIP_WITHOUT_CORPUS();
  const auto start = std::chrono::steady_clock::now();
  const Trace t = import_folder("hta-df_index_resolver");
  const double import_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  RecordProperty("import_ms", std::to_string(import_ms));
  std::cout << "[          ] hta-df_index_resolver imported in " << import_ms << " ms\n";

  EXPECT_EQ(t.rank, 1);
  EXPECT_EQ(t.device_name, "Tesla V100-SXM2-32GB");
  EXPECT_EQ(host_step_ranges(t), 5u);
  EXPECT_EQ(count_kind(t, EventKind::kKernel), 19370u);
  EXPECT_EQ(count_kind(t, EventKind::kMemcpy), 2040u);
  EXPECT_EQ(count_kind(t, EventKind::kMemset), 880u);
  EXPECT_EQ(count_kind(t, EventKind::kApiCall), 42373u);
  EXPECT_EQ(count_kind(t, EventKind::kRange), 58715u);
  EXPECT_EQ(count_events(t, [](const Event& e) { return e.is_comm_kernel(); }), 2020u);
  EXPECT_EQ(count_events(t, [](const Event& e) { return e.collective == CollectiveType::kAllReduce; }), 2020u);
  EXPECT_EQ(count_events(t, [](const Event& e) { return e.device == 1 && e.is_gpu_record(); }), 19370u + 2040u + 880u);
}

TEST(KinetoCorpusImport, RanksFromDistributedInfo) {
  SKIP_WITHOUT_CORPUS();
  EXPECT_EQ(import_folder("hta-trace_diff-control").rank, 3);
  EXPECT_EQ(import_folder("hta-trace_diff-test").rank, 1);
  EXPECT_EQ(import_kineto_file((kKinetoDir / "hta-sampled-2ranks" / "sampled_rank-0.json.gz").string()).rank, 0);
  const Trace rank1 = import_kineto_file((kKinetoDir / "hta-sampled-2ranks" / "sampled_rank-1.json.gz").string());
  EXPECT_EQ(rank1.rank, 1);
  EXPECT_EQ(rank1.device_name, "");  // sampled traces carry no deviceProperties
  EXPECT_EQ(import_folder("param-resnet").rank, -1);
}

TEST(KinetoCorpusImport, NsResolutionStepsAreExactNanoseconds) {
  SKIP_WITHOUT_CORPUS();
  const Trace t = import_folder("hta-ns_resolution");
  EXPECT_EQ(host_step_ranges(t), 5u);
  EXPECT_EQ(count_events(t, [](const Event& e) { return e.is_comm_kernel(); }), 0u);
  // "ts": 1712195495502094.565, "dur": 35115.869 — beyond a double's precision, kept exactly.
  const auto step101 = std::find_if(t.events.begin(), t.events.end(), [&](const Event& e) {
    return e.kind == EventKind::kRange && t.names.view(e.name) == "ProfilerStep#101";
  });
  ASSERT_NE(step101, t.events.end());
  EXPECT_EQ(step101->start_ns, 1712195495502094565);
  EXPECT_EQ(step101->duration_ns(), 35115869);
  EXPECT_EQ(step101->thread, 1102u);
}

TEST(KinetoCorpusImport, TraceDiffControlStreamSyncs) {
  SKIP_WITHOUT_CORPUS();
  const Trace t = import_folder("hta-trace_diff-control");
  EXPECT_EQ(host_step_ranges(t), 6u);
  EXPECT_EQ(count_events(t, [](const Event& e) { return e.kind == EventKind::kApiCall && e.api_class() == ApiClass::kStreamSync; }),
            60u);
  EXPECT_EQ(count_events(t, [](const Event& e) { return e.collective == CollectiveType::kSendRecv; }), 42u);
  EXPECT_EQ(count_events(t, [](const Event& e) { return e.collective == CollectiveType::kAllReduce; }), 18u);
}

TEST(KinetoCorpusImport, B200DriverCallsAndPythonFrames) {
  SKIP_WITHOUT_CORPUS();
  const Trace t = import_folder("tracelens-b200");
  EXPECT_EQ(t.rank, 0);
  EXPECT_EQ(t.device_name, "NVIDIA B200");
  EXPECT_EQ(count_named(t, EventKind::kApiCall, "cuLaunchKernelEx"), 220u);
  EXPECT_EQ(count_events(t, [&](const Event& e) {
              return e.kind == EventKind::kApiCall && t.names.view(e.name) == "cuLaunchKernelEx" &&
                     e.api_class() == ApiClass::kLaunch;
            }),
            220u);
  EXPECT_EQ(count_events(t, [](const Event& e) { return e.is_comm_kernel() && e.collective == CollectiveType::kAllGather; }), 1u);
  // Its record_param_comms op names the same all-gather (and sizes it).
  EXPECT_EQ(count_events(t, [](const Event& e) { return e.kind == EventKind::kRange && e.collective == CollectiveType::kAllGather; }), 1u);
  EXPECT_EQ(count_kind(t, EventKind::kOverhead), 9u);
  EXPECT_EQ(count_events(t, [](const Event& e) { return e.has_flag(event_flags::kOnDevice); }), 3u);
  // Every complete event: 4809 cpu_op + 3 user_annotation + 9 overhead + 161 gpu_memcpy +
  // 1151 cuda_runtime + 768 kernel + 221 cuda_driver + 3 gpu_user_annotation, and the 15,230
  // python_function frames.
  EXPECT_EQ(count_kind(t, EventKind::kPythonFrame), 15'230u);
  EXPECT_EQ(t.events.size(), 7125u + 15'230u);
}

TEST(KinetoCorpusImport, AmdMi250HipNames) {
  SKIP_WITHOUT_CORPUS();
  const Trace t = import_folder("hta-amd_mi250");
  EXPECT_EQ(t.rank, -1);
  EXPECT_EQ(t.device_name, "AMD Radeon Graphics");
  EXPECT_EQ(count_kind(t, EventKind::kKernel), 14u);
  EXPECT_EQ(count_events(t, [&](const Event& e) {
              return e.kind == EventKind::kApiCall && t.names.view(e.name) == "hipMemcpyWithStream" &&
                     e.api_class() == ApiClass::kMemcpySync;
            }),
            2u);
  EXPECT_EQ(count_events(t, [](const Event& e) { return e.kind == EventKind::kMemcpy && e.copy_kind() == CopyKind::kHtoD; }),
            2u);
  EXPECT_EQ(count_events(t, [](const Event& e) { return e.is_gpu_record() && e.device == 2 && e.stream == 0; }), 16u);
}

TEST(KinetoCorpusImport, AmdMi300HipAllocations) {
  SKIP_WITHOUT_CORPUS();
  const Trace t = import_folder("tracelens-mi300");
  EXPECT_EQ(t.device_name, "AMD Instinct MI300X");
  EXPECT_EQ(count_kind(t, EventKind::kKernel), 2360u);
  EXPECT_EQ(count_events(t, [](const Event& e) { return e.kind == EventKind::kApiCall && e.api_class() == ApiClass::kLaunch; }),
            2360u);
  EXPECT_EQ(count_events(t, [](const Event& e) { return e.kind == EventKind::kApiCall && e.api_class() == ApiClass::kFree; }),
            1360u);
}

TEST(KinetoCorpusImport, EventSyncTraces) {
  SKIP_WITHOUT_CORPUS();
  const Trace single_stream = import_folder("hta-cuda_event_sync");
  const auto syncs_of = [](const Trace& t, SyncKind kind) {
    return count_events(t, [kind](const Event& e) { return e.kind == EventKind::kSync && e.sync_kind() == kind; });
  };
  EXPECT_EQ(syncs_of(single_stream, SyncKind::kEvent), 2u);
  EXPECT_EQ(syncs_of(single_stream, SyncKind::kStream), 1u);
  EXPECT_EQ(syncs_of(single_stream, SyncKind::kContext), 1u);
  EXPECT_EQ(host_step_ranges(single_stream), 1u);

  const Trace multi_stream = import_folder("hta-cuda_event_sync_multi_stream");
  EXPECT_EQ(syncs_of(multi_stream, SyncKind::kEvent), 3u);
  EXPECT_EQ(syncs_of(multi_stream, SyncKind::kStreamWaitEvent), 1u);
  EXPECT_EQ(syncs_of(multi_stream, SyncKind::kContext), 1u);
}

TEST(KinetoCorpusImport, GpuUserAnnotations) {
  SKIP_WITHOUT_CORPUS();
  const Trace t = import_folder("hta-with_gpu_user_annotation");
  EXPECT_EQ(t.device_name, "Quadro GP100");
  EXPECT_EQ(count_events(t, [](const Event& e) { return e.kind == EventKind::kRange && e.has_flag(event_flags::kOnDevice); }),
            10u);
  EXPECT_EQ(count_kind(t, EventKind::kKernel), 130u);
  EXPECT_EQ(host_step_ranges(t), 0u);
}

TEST(KinetoCorpusImport, NcclParserConfigCollectivesAndEventSyncs) {
  SKIP_WITHOUT_CORPUS();
  const Trace t = import_folder("hta-nccl_parser_config");
  EXPECT_EQ(host_step_ranges(t), 3u);
  EXPECT_EQ(count_events(t, [](const Event& e) { return e.is_comm_kernel() && e.collective == CollectiveType::kAllReduce; }), 15u);
  EXPECT_EQ(count_events(t, [](const Event& e) { return e.is_comm_kernel() && e.collective == CollectiveType::kBroadcast; }), 6u);
  // PyTorch's record_param_comms ops: one per collective, each with its size (In msg nelems x dtype).
  EXPECT_EQ(count_events(t, [](const Event& e) {
              return e.kind == EventKind::kRange && e.collective == CollectiveType::kAllReduce && e.bytes > 0;
            }),
            15u);
  // The corpus README speaks of 24 synchronous cudaMemcpy calls; the file holds 24
  // cudaEventSynchronize calls and only cudaMemcpyAsync copies.
  EXPECT_EQ(count_named(t, EventKind::kApiCall, "cudaEventSynchronize"), 24u);
  EXPECT_EQ(count_events(t, [](const Event& e) { return e.kind == EventKind::kApiCall && e.api_class() == ApiClass::kMemcpySync; }),
            0u);
}

}  // namespace
}  // namespace stepwatch

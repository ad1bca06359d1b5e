// The Kineto writer: valid JSON with Kineto's categories, exact ns timestamps, and a lossless
// round trip through the Kineto importer for every field the Kineto format carries.
#include "stepwatch/export/kineto_writer.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "stepwatch/core/classify.h"
#include "stepwatch/core/gpu_samples.h"
#include "stepwatch/import/kineto_importer.h"
#include "synthetic/workload.h"

namespace stepwatch {
namespace {

using nlohmann::json;

std::string to_json_text(const Trace& trace) {
  std::ostringstream out;
  write_kineto_json(trace, out);
  return out.str();
}

const json* find_event(const json& doc, std::string_view cat) {
  for (const json& e : doc.at("traceEvents")) {
    if (e.value("cat", "") == cat) return &e;
  }
  return nullptr;
}

// The fields the Kineto format carries, as a comparable tuple. What it cannot carry is
// normalized away here, each with its reason:
//  - a range's step number: Kineto has no field for it; segmentation takes it from the name;
//  - a CUPTI sync record's host thread: Kineto files cuda_sync rows under device/stream;
//  - a memset's memory kind: "Memset (Device)" is written, the importer does not parse it back;
//  - flags other than kOnDevice (kExplicitStep, kAsync): no Kineto equivalent;
//  - the overhead row's thread: Kineto writes tid 0.
using EventKey = std::tuple<int, int64_t, int64_t, std::string, uint64_t, uint64_t, uint32_t, uint32_t, int, int, int,
                            int, int, int>;

EventKey key_of(const Trace& t, const Event& e) {
  const bool memset = e.kind == EventKind::kMemset;
  const uint32_t thread = (e.kind == EventKind::kSync || e.kind == EventKind::kOverhead) ? 0u : e.thread;
  return {static_cast<int>(e.kind),
          e.start_ns,
          e.end_ns,
          std::string(t.names.view(e.name)),
          e.correlation,
          e.bytes,
          thread,
          e.stream,
          e.device,
          e.detail,
          memset ? 0 : static_cast<int>(e.src_memory),
          memset ? 0 : static_cast<int>(e.dst_memory),
          static_cast<int>(e.collective),
          e.flags & event_flags::kOnDevice};
}

std::vector<EventKey> keys_of(const Trace& t) {
  std::vector<EventKey> keys;
  for (const Event& e : t.events) keys.push_back(key_of(t, e));
  std::sort(keys.begin(), keys.end());
  return keys;
}

// One event of every kind, at epoch-scale times (CLOCK_REALTIME ns do not fit a double).
Trace every_kind_trace() {
  Trace t;
  t.rank = 3;
  t.device_name = "NVIDIA H200";
  const int64_t t0 = 1'761'000'000'123'456'789;
  auto api = [&](std::string_view name, int64_t s, int64_t e, uint64_t corr) {
    Event& ev = t.add(EventKind::kApiCall, name, t0 + s, t0 + e);
    ev.thread = 4242;
    ev.correlation = corr;
    ev.detail = static_cast<uint8_t>(classify_api(name));
  };
  auto gpu = [&](EventKind kind, std::string_view name, int64_t s, int64_t e, uint32_t stream, uint64_t corr) -> Event& {
    Event& ev = t.add(kind, name, t0 + s, t0 + e);
    ev.device = 1;
    ev.stream = stream;
    ev.correlation = corr;
    return ev;
  };
  api("cudaLaunchKernel", 0, 5'001, 11);
  gpu(EventKind::kKernel, "void gemm<128>(float const*, float*)", 6'003, 106'007, 7, 11);
  api("cuLaunchKernelEx", 7'000, 9'999, 12);
  Event& nccl = gpu(EventKind::kKernel, "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                    106'500, 300'001, 21, 12);
  nccl.collective = classify_collective(t.names.view(nccl.name));
  api("cudaMemcpyAsync", 10'000, 400'000, 13);
  Event& copy = gpu(EventKind::kMemcpy, "Memcpy HtoD (Pageable -> Device)", 300'001, 399'000, 7, 13);
  copy.detail = static_cast<uint8_t>(CopyKind::kHtoD);
  copy.src_memory = MemoryKind::kPageable;
  copy.dst_memory = MemoryKind::kDevice;
  copy.bytes = 64ull << 20;
  api("cudaMemsetAsync", 400'100, 400'200, 14);
  Event& memset = gpu(EventKind::kMemset, "Memset (Device)", 400'300, 400'400, 7, 14);
  memset.bytes = 4096;
  api("cudaStreamSynchronize", 400'500, 500'000, 15);
  Event& sync = t.add(EventKind::kSync, "Stream Sync", t0 + 400'501, t0 + 499'999);
  sync.detail = static_cast<uint8_t>(SyncKind::kStream);
  sync.device = 1;
  sync.stream = 7;
  sync.correlation = 15;
  Event& range = t.add(EventKind::kRange, "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", t0 - 1'000,
                       t0);
  range.thread = 4242;
  Event& step = t.add(EventKind::kRange, "ProfilerStep#7", t0 - 2'000, t0 + 600'000);
  step.thread = 4242;
  Event& gpu_range = t.add(EventKind::kRange, "Optimizer.step#AdamW.step", t0 + 400'000, t0 + 450'000);
  gpu_range.device = 1;
  gpu_range.stream = 7;
  gpu_range.flags = event_flags::kOnDevice;
  t.add(EventKind::kOverhead, "Activity Buffer Request", t0 + 1, t0 + 2);
  return t;
}

TEST(KinetoWriter, WritesKinetoCategoriesAndArgs) {
  const json doc = json::parse(to_json_text(every_kind_trace()));
  EXPECT_EQ(doc.at("schemaVersion"), 1);
  EXPECT_EQ(doc.at("distributedInfo").at("rank"), 3);
  ASSERT_EQ(doc.at("deviceProperties").size(), 1u);
  EXPECT_EQ(doc.at("deviceProperties")[0].at("id"), 1);
  EXPECT_EQ(doc.at("deviceProperties")[0].at("name"), "NVIDIA H200");

  const json* kernel = find_event(doc, "kernel");
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ(kernel->at("ph"), "X");
  EXPECT_EQ(kernel->at("pid"), 1);
  EXPECT_EQ(kernel->at("tid"), 7);
  EXPECT_EQ(kernel->at("args").at("device"), 1);
  EXPECT_EQ(kernel->at("args").at("stream"), 7);
  EXPECT_EQ(kernel->at("args").at("correlation"), 11);

  const json* copy = find_event(doc, "gpu_memcpy");
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->at("name"), "Memcpy HtoD (Pageable -> Device)");
  EXPECT_EQ(copy->at("args").at("bytes"), 64ull << 20);

  const json* memset = find_event(doc, "gpu_memset");
  ASSERT_NE(memset, nullptr);
  EXPECT_EQ(memset->at("name"), "Memset (Device)");

  const json* runtime = find_event(doc, "cuda_runtime");
  ASSERT_NE(runtime, nullptr);
  EXPECT_EQ(runtime->at("pid"), 4242);  // the busiest API thread stands for the process
  EXPECT_EQ(runtime->at("tid"), 4242);
  const json* driver = find_event(doc, "cuda_driver");
  ASSERT_NE(driver, nullptr);
  EXPECT_EQ(driver->at("name"), "cuLaunchKernelEx");

  const json* sync = find_event(doc, "cuda_sync");
  ASSERT_NE(sync, nullptr);
  EXPECT_EQ(sync->at("name"), "Stream Sync");
  EXPECT_EQ(sync->at("args").at("cuda_sync_kind"), "Stream Sync");

  EXPECT_NE(find_event(doc, "user_annotation"), nullptr);
  const json* gpu_range = find_event(doc, "gpu_user_annotation");
  ASSERT_NE(gpu_range, nullptr);
  EXPECT_EQ(gpu_range->at("pid"), 1);
  EXPECT_EQ(gpu_range->at("tid"), 7);
  EXPECT_NE(find_event(doc, "overhead"), nullptr);
}

TEST(KinetoWriter, TimestampsAreMicrosecondsWithExactNanoseconds) {
  Trace t;
  Event& e = t.add(EventKind::kKernel, "k", 1'761'000'000'123'456'789, 1'761'000'000'123'460'000);
  e.device = 0;
  e.stream = 7;
  const std::string text = to_json_text(t);
  // Written as text from integers: no double rounding at epoch scale.
  EXPECT_NE(text.find("\"ts\":1761000000123456.789"), std::string::npos) << text;
  EXPECT_NE(text.find("\"dur\":3.211"), std::string::npos) << text;

  Trace small;
  small.add(EventKind::kRange, "r", -1'500, 7).thread = 1;
  const std::string small_text = to_json_text(small);
  EXPECT_NE(small_text.find("\"ts\":-1.500"), std::string::npos) << small_text;
  EXPECT_NE(small_text.find("\"dur\":1.507"), std::string::npos) << small_text;
}

TEST(KinetoWriter, EscapesNamesAndRepairsInvalidUtf8) {
  Trace t;
  const std::string nasty = std::string("a\"b\\c\nd\te\x01") + "\xC3\xA9" + "\xFF" + "end";
  t.add(EventKind::kRange, nasty, 0, 10).thread = 1;
  const json doc = json::parse(to_json_text(t));  // throws on invalid JSON or UTF-8
  const json* r = find_event(doc, "user_annotation");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->at("name"), std::string("a\"b\\c\nd\te\x01") + "\xC3\xA9" + "\xEF\xBF\xBD" + "end");
}

TEST(KinetoWriter, RoundTripsEveryKindThroughTheImporter) {
  const Trace original = every_kind_trace();
  const Trace back = import_kineto_json(to_json_text(original), "roundtrip");
  EXPECT_EQ(back.rank, 3);
  EXPECT_EQ(back.device_name, "NVIDIA H200");
  EXPECT_EQ(keys_of(back), keys_of(original));
}

// The flight recorder's dumps keep the NVML samples' readings, so that `throttle` analyzed from a
// dump has the same confirming evidence as live.
TEST(KinetoWriter, NvmlSamplesKeepTheirReadingsAndDevice) {
  Trace t;
  Event& clock = t.add(EventKind::kRange, gpu_sample_name(GpuMetric::kSmClockMhz), 1'000'000, 1'000'000);
  clock.bytes = 1395;
  clock.device = 1;
  Event& reasons = t.add(EventKind::kRange, gpu_sample_name(GpuMetric::kClockEventReasons), 2'000'000, 2'000'000);
  reasons.bytes = clock_reason::kHwThermalSlowdown;
  reasons.device = 0;
  Event& plain = t.add(EventKind::kRange, "forward", 1'500'000, 1'700'000);  // an ordinary range keeps no value
  plain.thread = 7;
  plain.bytes = 99;
  const Trace back = import_kineto_json(to_json_text(t), "nvml");
  std::vector<std::tuple<std::string, uint64_t, int, uint32_t>> got;
  for (const Event& e : back.events) {
    got.emplace_back(std::string(back.names.view(e.name)), e.bytes, e.device, e.thread);
  }
  std::sort(got.begin(), got.end());
  const std::vector<std::tuple<std::string, uint64_t, int, uint32_t>> want = {
      {"forward", 0, -1, 7},
      {"nvml:clock_event_reasons", clock_reason::kHwThermalSlowdown, 0, 0},
      {"nvml:sm_clock_mhz", 1395, 1, 0},
  };
  EXPECT_EQ(got, want);
}

TEST(KinetoWriter, StepMarksBecomeRangesUpToTheNextMark) {
  Trace t;
  for (int k = 0; k < 3; ++k) {
    Event& m = t.add(EventKind::kStepMark, k == 2 ? "" : "step", 1'000'000 * (k + 1), 1'000'000 * (k + 1));
    m.step = 10 + k;
    m.thread = 5;
  }
  Event& last = t.add(EventKind::kKernel, "k", 3'100'000, 3'500'000);
  last.device = 0;
  const Trace back = import_kineto_json(to_json_text(t), "marks");
  std::vector<std::tuple<std::string, int64_t, int64_t>> ranges;
  for (const Event& e : back.events) {
    if (e.kind == EventKind::kRange) ranges.emplace_back(std::string(back.names.view(e.name)), e.start_ns, e.end_ns);
  }
  std::sort(ranges.begin(), ranges.end(),
            [](const auto& a, const auto& b) { return std::get<1>(a) < std::get<1>(b); });
  ASSERT_EQ(ranges.size(), 3u);
  EXPECT_EQ(ranges[0], std::make_tuple(std::string("step#10"), int64_t{1'000'000}, int64_t{2'000'000}));
  EXPECT_EQ(ranges[1], std::make_tuple(std::string("step#11"), int64_t{2'000'000}, int64_t{3'000'000}));
  // The last mark runs to the end of the data; an unnamed mark gets PyTorch's step name.
  EXPECT_EQ(ranges[2], std::make_tuple(std::string("ProfilerStep#12"), int64_t{3'000'000}, int64_t{3'500'000}));
}

TEST(KinetoWriter, CopyNamesFollowTheEventsFields) {
  Trace t;
  Event& e = t.add(EventKind::kMemcpy, "", 0, 1000);  // a name that does not describe the copy
  e.detail = static_cast<uint8_t>(CopyKind::kDtoH);
  e.src_memory = MemoryKind::kDevice;
  e.dst_memory = MemoryKind::kPinned;
  e.device = 0;
  const json doc = json::parse(to_json_text(t));
  const json* copy = find_event(doc, "gpu_memcpy");
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->at("name"), "Memcpy DtoH (Device -> Pinned)");
}

class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("stepwatch_writer_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
             std::to_string(reinterpret_cast<uintptr_t>(this)));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

TEST(KinetoWriter, GzipsWhenThePathEndsInGz) {
  TempDir dir;
  const Trace original = every_kind_trace();
  const std::string gz = dir.file("trace.json.gz");
  const std::string plain = dir.file("trace.json");
  write_kineto_file(original, gz);
  write_kineto_file(original, plain);

  std::ifstream in(gz, std::ios::binary);
  unsigned char magic[2] = {0, 0};
  in.read(reinterpret_cast<char*>(magic), 2);
  EXPECT_EQ(magic[0], 0x1f);
  EXPECT_EQ(magic[1], 0x8b);
  EXPECT_EQ(read_file_maybe_gzip(gz), read_file_maybe_gzip(plain));
  EXPECT_EQ(keys_of(import_kineto_file(gz)), keys_of(original));
}

TEST(KinetoWriter, ThrowsWhenThePathCannotBeWritten) {
  const Trace t = every_kind_trace();
  EXPECT_THROW(write_kineto_file(t, "/nonexistent-dir/trace.json"), std::runtime_error);
  EXPECT_THROW(write_kineto_file(t, "/nonexistent-dir/trace.json.gz"), std::runtime_error);
}

TEST(KinetoWriter, RoundTripsEverySyntheticScenario) {
  for (const std::string& name : synthetic::scenario_names()) {
    SCOPED_TRACE(name);
    const synthetic::SyntheticRun run = synthetic::make_scenario(name, {.steps = 3});
    const Trace back = import_kineto_json(to_json_text(run.trace), name);
    EXPECT_EQ(keys_of(back), keys_of(run.trace));
  }
}

}  // namespace
}  // namespace stepwatch

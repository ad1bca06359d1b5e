// NVTX hooks called directly (no NVTX instance): pairing, domains, registered strings, payloads,
// wide strings, depth cap, concurrency, and what InitializeInjectionNvtx2 installs.
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <gtest/gtest.h>

#include "nvtx/nvtx_hooks.h"
#include "nvtx/nvtx_injection.h"
#include "nvtx/nvtx_registry.h"

namespace stepwatch::live {

// Weak: the live session's production definition wins when the test binary links it; these
// tests route events through nvtx_set_sink_for_testing either way.
__attribute__((weak)) EventSink* nvtx_event_sink() noexcept { return nullptr; }

namespace {

namespace hooks = stepwatch::live::nvtx;

uint32_t os_thread_id() { return static_cast<uint32_t>(::syscall(SYS_gettid)); }

class RecordingSink final : public EventSink {
 public:
  void submit(const Event& event) noexcept override {
    std::lock_guard lock(mutex_);
    events_.push_back(event);
  }
  NameId intern(std::string_view name) noexcept override {
    std::lock_guard lock(mutex_);
    ++intern_calls_;
    auto [it, inserted] = ids_.try_emplace(std::string(name), static_cast<NameId>(names_.size() + 1));
    if (inserted) names_.emplace_back(name);
    return it->second;
  }
  void report_loss(LossKind kind, uint64_t count) noexcept override {
    std::lock_guard lock(mutex_);
    losses_[kind] += count;
  }
  void advance_watermark(int64_t) noexcept override {}
  void mark_incomplete(int64_t, int64_t) noexcept override {}
  void status(std::string_view) noexcept override {}

  std::vector<Event> events() {
    std::lock_guard lock(mutex_);
    return events_;
  }
  std::string name(const Event& event) {
    std::lock_guard lock(mutex_);
    return event.name == kNoName || event.name > names_.size() ? std::string() : names_[event.name - 1];
  }
  std::vector<std::string> names_in_order() {
    std::vector<std::string> out;
    for (const Event& event : events()) out.push_back(name(event));
    return out;
  }
  uint64_t losses(LossKind kind) {
    std::lock_guard lock(mutex_);
    return losses_[kind];
  }
  uint64_t intern_calls() {
    std::lock_guard lock(mutex_);
    return intern_calls_;
  }

 private:
  std::mutex mutex_;
  std::vector<Event> events_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, NameId> ids_;
  std::map<LossKind, uint64_t> losses_;
  uint64_t intern_calls_ = 0;
};

class NvtxHooksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    nvtx_set_sink_for_testing(&sink_);
    before_ = nvtx_stats();
  }
  void TearDown() override { nvtx_set_sink_for_testing(nullptr); }

  RecordingSink sink_;
  NvtxStats before_;
};

nvtxEventAttributes_t ascii_attributes(const char* message) {
  nvtxEventAttributes_t attributes{};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attributes.message.ascii = message;
  return attributes;
}

nvtxEventAttributes_t registered_attributes(nvtxStringHandle_t handle) {
  nvtxEventAttributes_t attributes{};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  attributes.message.registered = handle;
  return attributes;
}

TEST_F(NvtxHooksTest, PushPopNestsAndSubmitsOneCompleteRangeAtPop) {
  EXPECT_EQ(hooks::range_push_a("outer"), 0);
  EXPECT_EQ(hooks::range_push_a("inner"), 1);
  EXPECT_TRUE(sink_.events().empty()) << "nothing is submitted before the pop";
  EXPECT_EQ(hooks::range_pop(), 1);
  EXPECT_EQ(hooks::range_pop(), 0);

  const auto events = sink_.events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(sink_.name(events[0]), "inner");
  EXPECT_EQ(sink_.name(events[1]), "outer");
  for (const Event& event : events) {
    EXPECT_EQ(event.kind, EventKind::kRange);
    EXPECT_EQ(event.thread, os_thread_id());
    EXPECT_LE(event.start_ns, event.end_ns);
    EXPECT_EQ(event.flags, 0);
  }
  EXPECT_LE(events[1].start_ns, events[0].start_ns);
  EXPECT_GE(events[1].end_ns, events[0].end_ns);
  EXPECT_EQ(nvtx_stats().ranges - before_.ranges, 2u);
}

TEST_F(NvtxHooksTest, TimestampsAreRealtimeNanoseconds) {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  const int64_t before_ns = int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
  hooks::range_push_a("clock");
  hooks::range_pop();
  clock_gettime(CLOCK_REALTIME, &now);
  const int64_t after_ns = int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
  const auto events = sink_.events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_GE(events[0].start_ns, before_ns);
  EXPECT_LE(events[0].end_ns, after_ns);
}

TEST_F(NvtxHooksTest, UnpairedPopIsReportedNotSubmitted) {
  EXPECT_LT(hooks::range_pop(), 0);
  EXPECT_LT(hooks::domain_range_pop(nullptr), 0);
  EXPECT_TRUE(sink_.events().empty());
  EXPECT_EQ(sink_.losses(LossKind::kUnpairedRange), 2u);
  EXPECT_EQ(nvtx_stats().unpaired - before_.unpaired, 2u);
}

TEST_F(NvtxHooksTest, StartEndPairsAcrossThreads) {
  const nvtxRangeId_t id = hooks::range_start_a("cross_thread");
  ASSERT_NE(id, 0u);
  std::thread([id] { hooks::range_end(id); }).join();

  const auto events = sink_.events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(sink_.name(events[0]), "cross_thread");
  EXPECT_EQ(events[0].thread, os_thread_id()) << "the thread that started the range";
  EXPECT_LE(events[0].start_ns, events[0].end_ns);

  hooks::range_end(id);  // a second end of the same id
  EXPECT_EQ(sink_.losses(LossKind::kUnpairedRange), 1u);
  hooks::range_end(0);  // NVTX's "no range": not a pairing error
  EXPECT_EQ(sink_.losses(LossKind::kUnpairedRange), 1u);
}

TEST_F(NvtxHooksTest, StartEndDoNotDisturbPushPop) {
  hooks::range_push_a("pushed");
  const nvtxRangeId_t a = hooks::range_start_a("started_a");
  const auto started_b = ascii_attributes("started_b");
  const nvtxRangeId_t b = hooks::range_start_ex(&started_b);
  hooks::range_end(a);
  hooks::range_pop();
  hooks::range_end(b);
  EXPECT_EQ(sink_.names_in_order(), (std::vector<std::string>{"started_a", "pushed", "started_b"}));
}

TEST_F(NvtxHooksTest, DomainRangesCarryTheDomainPrefix) {
  nvtxDomainHandle_t nccl = hooks::domain_create_a("NCCL");
  ASSERT_NE(nccl, nullptr);
  EXPECT_EQ(hooks::domain_create_a("NCCL"), nccl) << "libraries creating the same domain share it";
  nvtxDomainHandle_t other = hooks::domain_create_a("my.lib");
  EXPECT_NE(other, nccl);

  auto all_reduce = ascii_attributes("ncclAllReduce");
  auto mine = ascii_attributes("load");
  auto plain = ascii_attributes("plain");
  hooks::domain_range_push_ex(nccl, &all_reduce);
  hooks::domain_range_pop(nccl);
  hooks::domain_range_push_ex(other, &mine);
  hooks::domain_range_pop(other);
  hooks::domain_range_push_ex(nullptr, &plain);  // the default domain: no prefix
  hooks::domain_range_pop(nullptr);
  hooks::range_push_ex(&plain);
  hooks::range_pop();

  const auto events = sink_.events();
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(sink_.names_in_order(), (std::vector<std::string>{"NCCL:ncclAllReduce", "my.lib:load", "plain", "plain"}));
  EXPECT_EQ(events[0].collective, CollectiveType::kAllReduce);
  EXPECT_EQ(events[1].collective, CollectiveType::kNone);
}

TEST_F(NvtxHooksTest, DomainStartEnd) {
  nvtxDomainHandle_t nccl = hooks::domain_create_a("NCCL");
  auto send = ascii_attributes("ncclSend");
  const nvtxRangeId_t id = hooks::domain_range_start_ex(nccl, &send);
  hooks::domain_range_end(nccl, id);
  const auto events = sink_.events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(sink_.name(events[0]), "NCCL:ncclSend");
  EXPECT_EQ(events[0].collective, CollectiveType::kSendRecv);
}

TEST_F(NvtxHooksTest, PushPopIsPerDomain) {
  nvtxDomainHandle_t nccl = hooks::domain_create_a("NCCL");
  auto gather = ascii_attributes("ncclAllGather");
  hooks::range_push_a("app");
  hooks::domain_range_push_ex(nccl, &gather);
  hooks::range_pop();  // pops "app", not the NCCL range above it
  hooks::domain_range_pop(nccl);
  EXPECT_EQ(sink_.names_in_order(), (std::vector<std::string>{"app", "NCCL:ncclAllGather"}));
  EXPECT_EQ(sink_.losses(LossKind::kUnpairedRange), 0u);
}

TEST_F(NvtxHooksTest, RegisteredStringsNameRanges) {
  nvtxDomainHandle_t nccl = hooks::domain_create_a("NCCL");
  nvtxStringHandle_t reduce_scatter = hooks::domain_register_string_a(nccl, "ncclReduceScatter");
  ASSERT_NE(reduce_scatter, nullptr);
  EXPECT_EQ(hooks::domain_register_string_a(nccl, "ncclReduceScatter"), reduce_scatter);
  nvtxStringHandle_t step = hooks::domain_register_string_a(nullptr, "step 3");
  ASSERT_NE(step, nullptr);
  EXPECT_NE(step, reduce_scatter);

  auto in_nccl = registered_attributes(reduce_scatter);
  auto in_default = registered_attributes(step);
  for (int i = 0; i < 3; ++i) {
    hooks::domain_range_push_ex(nccl, &in_nccl);
    hooks::domain_range_pop(nccl);
  }
  hooks::range_push_ex(&in_default);
  hooks::range_pop();
  auto bogus = registered_attributes(reinterpret_cast<nvtxStringHandle_t>(uintptr_t{0xdead0000}));
  hooks::range_push_ex(&bogus);  // a handle we never gave out: empty name, no crash
  hooks::range_pop();

  EXPECT_EQ(sink_.names_in_order(), (std::vector<std::string>{"NCCL:ncclReduceScatter", "NCCL:ncclReduceScatter",
                                                              "NCCL:ncclReduceScatter", "step 3", ""}));
  EXPECT_EQ(sink_.events()[0].collective, CollectiveType::kReduceScatter);
}

TEST_F(NvtxHooksTest, WideStringsBecomeUtf8) {
  hooks::range_push_w(L"wide_\u00e9_\u20ac_\U0001F600");
  hooks::range_pop();
  nvtxDomainHandle_t domain = hooks::domain_create_w(L"d\u00f6main");
  nvtxStringHandle_t text = hooks::domain_register_string_w(domain, L"r\u00e9g");
  auto registered = registered_attributes(text);
  hooks::domain_range_push_ex(domain, &registered);
  hooks::domain_range_pop(domain);
  nvtxEventAttributes_t wide{};
  wide.version = NVTX_VERSION;
  wide.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  wide.messageType = NVTX_MESSAGE_TYPE_UNICODE;
  wide.message.unicode = L"\u00fc";
  hooks::range_push_ex(&wide);
  hooks::range_pop();
  EXPECT_EQ(sink_.names_in_order(), (std::vector<std::string>{"wide_\xC3\xA9_\xE2\x82\xAC_\xF0\x9F\x98\x80",
                                                              "d\xC3\xB6main:r\xC3\xA9g", "\xC3\xBC"}));
}

TEST(NvtxText, InvalidCodePointsBecomeReplacementCharacters) {
  const wchar_t text[] = {L'a', static_cast<wchar_t>(0xD800), static_cast<wchar_t>(0x110000), L'b', 0};
  std::string out;
  hooks::append_utf8(text, 100, out);
  EXPECT_EQ(out, "a\xEF\xBF\xBD\xEF\xBF\xBD" "b");
  out.clear();
  hooks::append_utf8(L"\u00e9\u00e9", 3, out);  // never cuts a character in half
  EXPECT_EQ(out, "\xC3\xA9");
}

TEST_F(NvtxHooksTest, ReusedBuffersAreNamedByTheirCurrentContent) {
  char buffer[64];
  const char* texts[] = {"alpha", "beta", "alphabet", "alp", "alpha"};
  for (const char* text : texts) {
    std::strcpy(buffer, text);
    hooks::range_push_a(buffer);
    hooks::range_pop();
  }
  EXPECT_EQ(sink_.names_in_order(), (std::vector<std::string>{"alpha", "beta", "alphabet", "alp", "alpha"}));
}

TEST_F(NvtxHooksTest, RepeatedMessagesAreInternedOnce) {
  static const char* const kNames[] = {"forward", "backward", "optimizer", "step 1", "DataLoader"};
  for (int i = 0; i < 1000; ++i) {
    for (const char* name : kNames) {
      hooks::range_push_a(name);
      hooks::range_pop();
    }
  }
  EXPECT_EQ(sink_.intern_calls(), std::size(kNames));
  EXPECT_EQ(sink_.events().size(), 5000u);
}

TEST_F(NvtxHooksTest, LongMessagesAreNamedInFull) {
  const std::string long_name(500, 'x');
  hooks::range_push_a(long_name.c_str());
  hooks::range_pop();
  const std::string too_long(5000, 'y');
  hooks::range_push_a(too_long.c_str());
  hooks::range_pop();
  const auto names = sink_.names_in_order();
  ASSERT_EQ(names.size(), 2u);
  EXPECT_EQ(names[0], long_name);
  EXPECT_EQ(names[1], std::string(1024, 'y')) << "cut at 1024 bytes";
}

TEST_F(NvtxHooksTest, PushesPastTheDepthCapAreCountedAndTheirPopsIgnored) {
  constexpr int kPushes = 100;
  std::vector<std::string> names;
  for (int i = 0; i < kPushes; ++i) names.push_back("level " + std::to_string(i));
  for (int i = 0; i < kPushes; ++i) EXPECT_EQ(hooks::range_push_a(names[i].c_str()), i);
  for (int i = kPushes - 1; i >= 0; --i) EXPECT_EQ(hooks::range_pop(), i);

  const auto recorded = sink_.names_in_order();
  ASSERT_EQ(recorded.size(), 64u);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(recorded[i], names[63 - i]) << "the outer 64 ranges, innermost first";
  EXPECT_EQ(nvtx_stats().too_deep - before_.too_deep, 36u);
  EXPECT_EQ(sink_.losses(LossKind::kUnpairedRange), 0u);
}

TEST_F(NvtxHooksTest, MarksAreCountedNotSubmitted) {
  hooks::mark_a("a");
  hooks::mark_w(L"b");
  auto attributes = ascii_attributes("c");
  hooks::mark_ex(&attributes);
  hooks::domain_mark_ex(nullptr, &attributes);
  EXPECT_TRUE(sink_.events().empty());
  EXPECT_EQ(nvtx_stats().marks - before_.marks, 4u);
}

TEST_F(NvtxHooksTest, NullAndMalformedArgumentsAreHarmless) {
  hooks::range_push_a(nullptr);
  hooks::range_pop();
  hooks::range_push_w(nullptr);
  hooks::range_pop();
  hooks::range_push_ex(nullptr);
  hooks::range_pop();
  nvtxEventAttributes_t tiny{};
  tiny.size = 4;  // claims no message field
  hooks::range_push_ex(&tiny);
  hooks::range_pop();
  EXPECT_EQ(hooks::domain_create_a(nullptr), nullptr);
  EXPECT_EQ(hooks::payload_schema_register(nullptr, nullptr), 0u);
  EXPECT_EQ(sink_.names_in_order(), (std::vector<std::string>{"", "", "", ""}));
  EXPECT_EQ(sink_.losses(LossKind::kUnpairedRange), 0u);
}

// ---- NCCL's extended payload -----------------------------------------------------------------

struct NcclAllReduceParams {
  uint64_t comm;
  size_t bytes;
  int op;
};

nvtxPayloadSchemaAttr_t static_schema(const nvtxPayloadSchemaEntry_t* entries, size_t count, uint64_t id,
                                      size_t size_bytes) {
  nvtxPayloadSchemaAttr_t attributes{};
  attributes.fieldMask = NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_TYPE | NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES |
                         NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES | NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_STATIC_SIZE |
                         NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_SCHEMA_ID;
  attributes.type = NVTX_PAYLOAD_SCHEMA_TYPE_STATIC;
  attributes.entries = entries;
  attributes.numEntries = count;
  attributes.payloadStaticSize = size_bytes;
  attributes.schemaId = id;
  return attributes;
}

TEST_F(NvtxHooksTest, NcclPayloadGivesTheMessageSize) {
  nvtxDomainHandle_t nccl = hooks::domain_create_a("NCCL");
  static const nvtxPayloadSchemaEntry_t entries[] = {
      {0, NVTX_PAYLOAD_ENTRY_TYPE_UINT64, "NCCL communicator ID", nullptr, 0, offsetof(NcclAllReduceParams, comm),
       nullptr, nullptr},
      {0, NVTX_PAYLOAD_ENTRY_TYPE_SIZE, "Message size [bytes]", nullptr, 0, offsetof(NcclAllReduceParams, bytes),
       nullptr, nullptr},
      // NCCL's reduction op is an enum schema: a type we cannot size, after the size entry.
      {0, NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + 99, "Reduction operation", nullptr, 0,
       offsetof(NcclAllReduceParams, op), nullptr, nullptr},
  };
  constexpr uint64_t kSchemaId = NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + 5;
  const auto schema = static_schema(entries, std::size(entries), kSchemaId, sizeof(NcclAllReduceParams));
  EXPECT_EQ(hooks::payload_schema_register(nccl, &schema), kSchemaId);

  nvtxStringHandle_t name = hooks::domain_register_string_a(nccl, "ncclAllReduce");
  NcclAllReduceParams params{0xC0FFEE, 4096, 0};
  nvtxPayloadData_t payload[] = {{kSchemaId, sizeof(params), &params}};
  auto attributes = registered_attributes(name);
  NVTX_PAYLOAD_EVTATTR_SET_MULTIPLE(attributes, payload)
  hooks::domain_range_push_ex(nccl, &attributes);
  hooks::domain_range_pop(nccl);

  // The same schema id in another domain is another schema: no size read there.
  nvtxDomainHandle_t other = hooks::domain_create_a("other");
  hooks::domain_range_push_ex(other, &attributes);
  hooks::domain_range_pop(other);

  // A payload smaller than the schema says is not read past its end.
  nvtxPayloadData_t truncated[] = {{kSchemaId, 8, &params}};
  auto short_attributes = registered_attributes(name);
  NVTX_PAYLOAD_EVTATTR_SET_MULTIPLE(short_attributes, truncated)
  hooks::domain_range_push_ex(nccl, &short_attributes);
  hooks::domain_range_pop(nccl);

  const auto events = sink_.events();
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(sink_.name(events[0]), "NCCL:ncclAllReduce");
  EXPECT_EQ(events[0].bytes, 4096u);
  EXPECT_EQ(events[0].collective, CollectiveType::kAllReduce);
  EXPECT_EQ(events[1].bytes, 0u);
  EXPECT_EQ(events[2].bytes, 0u);
}

TEST_F(NvtxHooksTest, PayloadOffsetsFollowNaturalAlignmentWhenNotGiven) {
  nvtxDomainHandle_t domain = hooks::domain_create_a("aligned");
  struct Params {
    uint32_t rank;
    uint64_t bytes;
  };
  static const nvtxPayloadSchemaEntry_t entries[] = {
      {0, NVTX_PAYLOAD_ENTRY_TYPE_UINT32, "rank", nullptr, 0, 0, nullptr, nullptr},
      {0, NVTX_PAYLOAD_ENTRY_TYPE_UINT64, "Message size [bytes]", nullptr, 0, 0, nullptr, nullptr},
  };
  constexpr uint64_t kSchemaId = NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + 7;
  const auto schema = static_schema(entries, std::size(entries), kSchemaId, sizeof(Params));
  hooks::payload_schema_register(domain, &schema);

  // Unknown layout before the size (a pointer entry without an offset): the size is not guessed.
  static const nvtxPayloadSchemaEntry_t unknown[] = {
      {NVTX_PAYLOAD_ENTRY_FLAG_POINTER, NVTX_PAYLOAD_ENTRY_TYPE_CSTRING, "label", nullptr, 0, 0, nullptr, nullptr},
      {0, NVTX_PAYLOAD_ENTRY_TYPE_UINT64, "Message size [bytes]", nullptr, 0, 0, nullptr, nullptr},
  };
  constexpr uint64_t kUnknownId = NVTX_PAYLOAD_SCHEMA_ID_STATIC_START + 8;
  const auto unknown_schema = static_schema(unknown, std::size(unknown), kUnknownId, 16);
  hooks::payload_schema_register(domain, &unknown_schema);

  Params params{3, 123456};
  nvtxPayloadData_t payload[] = {{kSchemaId, sizeof(params), &params}};
  auto attributes = ascii_attributes("send");
  NVTX_PAYLOAD_EVTATTR_SET_MULTIPLE(attributes, payload)
  hooks::domain_range_push_ex(domain, &attributes);
  hooks::domain_range_pop(domain);

  struct Labelled {
    const char* label;
    uint64_t bytes;
  } labelled{"x", 99};
  nvtxPayloadData_t unknown_payload[] = {{kUnknownId, sizeof(labelled), &labelled}};
  auto unknown_attributes = ascii_attributes("recv");
  NVTX_PAYLOAD_EVTATTR_SET_MULTIPLE(unknown_attributes, unknown_payload)
  hooks::domain_range_push_ex(domain, &unknown_attributes);
  hooks::domain_range_pop(domain);

  const auto events = sink_.events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].bytes, 123456u);
  EXPECT_EQ(events[1].bytes, 0u);
}

TEST(NvtxText, NcclFunctionsMapToCollectives) {
  EXPECT_EQ(hooks::collective_from_nccl_function("ncclAllReduce"), CollectiveType::kAllReduce);
  EXPECT_EQ(hooks::collective_from_nccl_function("ncclAllGather"), CollectiveType::kAllGather);
  EXPECT_EQ(hooks::collective_from_nccl_function("ncclReduceScatter"), CollectiveType::kReduceScatter);
  EXPECT_EQ(hooks::collective_from_nccl_function("ncclAlltoAll"), CollectiveType::kAllToAll);
  EXPECT_EQ(hooks::collective_from_nccl_function("ncclRecv"), CollectiveType::kSendRecv);
  EXPECT_EQ(hooks::collective_from_nccl_function("ncclBroadcast"), CollectiveType::kBroadcast);
  EXPECT_EQ(hooks::collective_from_nccl_function("ncclReduce"), CollectiveType::kReduce);
  EXPECT_EQ(hooks::collective_from_nccl_function("ncclGroupEnd"), CollectiveType::kNone);
  EXPECT_EQ(hooks::collective_from_nccl_function("ncclCommInitRank"), CollectiveType::kNone);
}

// ---- Concurrency -----------------------------------------------------------------------------

TEST_F(NvtxHooksTest, ManyThreadsPushPopAndStartEndConcurrently) {
  constexpr int kThreads = 8;
  constexpr int kIterations = 5000;
  // Few enough starts (2500) that no id can come round to a slot still open in this test.
  constexpr int kStartEvery = 16;
  nvtxDomainHandle_t nccl = hooks::domain_create_a("NCCL");
  std::vector<std::thread> threads;
  std::atomic<int> ready{0};
  std::array<uint32_t, kThreads> thread_ids{};
  // Each thread ends the ranges the previous thread started: start/end cross threads under load.
  std::array<std::atomic<nvtxRangeId_t>, kThreads> handoff{};
  std::atomic<int> ended{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      thread_ids[t] = os_thread_id();
      const std::string own = "thread " + std::to_string(t);
      auto collective = ascii_attributes("ncclAllReduce");
      ready.fetch_add(1);
      while (ready.load() < kThreads) std::this_thread::yield();
      for (int i = 0; i < kIterations; ++i) {
        hooks::range_push_a("step");
        hooks::range_push_a(own.c_str());
        hooks::domain_range_push_ex(nccl, &collective);
        hooks::domain_range_pop(nccl);
        hooks::range_pop();
        hooks::range_pop();
        if (i % kStartEvery != 0) continue;
        const nvtxRangeId_t id = hooks::range_start_a("async");
        nvtxRangeId_t previous = handoff[(t + 1) % kThreads].exchange(0);
        handoff[t].store(id);
        if (previous != 0) {
          hooks::range_end(previous);
          ended.fetch_add(1);
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (auto& slot : handoff) {
    if (nvtxRangeId_t id = slot.exchange(0)) {
      hooks::range_end(id);
      ended.fetch_add(1);
    }
  }

  const auto events = sink_.events();
  std::map<std::string, int> by_name;
  for (const Event& event : events) {
    ++by_name[sink_.name(event)];
    EXPECT_LE(event.start_ns, event.end_ns);
    EXPECT_NE(std::find(thread_ids.begin(), thread_ids.end(), event.thread), thread_ids.end());
  }
  EXPECT_EQ(by_name["step"], kThreads * kIterations);
  EXPECT_EQ(by_name["NCCL:ncclAllReduce"], kThreads * kIterations);
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(by_name["thread " + std::to_string(t)], kIterations);
  // Starts never ended (overwritten in the handoff) stay open; every end we made found its start.
  EXPECT_EQ(by_name["async"], ended.load());
  EXPECT_EQ(sink_.losses(LossKind::kUnpairedRange), 0u);
  EXPECT_EQ(nvtx_stats().ranges - before_.ranges, events.size()) << "exited threads publish their counts";
}

TEST_F(NvtxHooksTest, ConcurrentRegistrationGivesOneHandlePerNameAndText) {
  constexpr int kThreads = 6;
  constexpr int kStrings = 200;
  std::array<nvtxDomainHandle_t, kThreads> domains{};
  std::array<std::vector<nvtxStringHandle_t>, kThreads> handles;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      domains[t] = hooks::domain_create_a("concurrent");
      for (int i = 0; i < kStrings; ++i) {
        const std::string text = "op " + std::to_string(i);
        handles[t].push_back(hooks::domain_register_string_a(domains[t], text.c_str()));
        auto attributes = registered_attributes(handles[t].back());
        hooks::domain_range_push_ex(domains[t], &attributes);
        hooks::domain_range_pop(domains[t]);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 1; t < kThreads; ++t) {
    EXPECT_EQ(domains[t], domains[0]);
    EXPECT_EQ(handles[t], handles[0]);
  }
  std::map<std::string, int> by_name;
  for (const Event& event : sink_.events()) ++by_name[sink_.name(event)];
  ASSERT_EQ(by_name.size(), static_cast<size_t>(kStrings));
  for (int i = 0; i < kStrings; ++i) EXPECT_EQ(by_name["concurrent:op " + std::to_string(i)], kThreads);
}

// ---- Entry points ----------------------------------------------------------------------------

// A fake NVTX instance: the slot variables and the tables GetModuleFunctionTable hands out.
struct FakeNvtxInstance {
  std::array<NvtxFunctionPointer, NVTX_CBID_CORE_SIZE> core_slots{};
  std::array<NvtxFunctionPointer, NVTX_CBID_CORE2_SIZE> core2_slots{};
  std::array<NvtxFunctionPointer*, NVTX_CBID_CORE_SIZE + 1> core_table{};
  std::array<NvtxFunctionPointer*, NVTX_CBID_CORE2_SIZE + 1> core2_table{};
  NvtxExportTableCallbacks callbacks{sizeof(NvtxExportTableCallbacks), &get_module_function_table};
  uint32_t injected_version = 0;
  NvtxExportTableVersionInfo version{sizeof(NvtxExportTableVersionInfo), NVTX_VERSION, 0, &set_version};

  FakeNvtxInstance() {
    for (size_t i = 1; i < core_slots.size(); ++i) core_table[i] = &core_slots[i];
    for (size_t i = 1; i < core2_slots.size(); ++i) core2_table[i] = &core2_slots[i];
  }

  static FakeNvtxInstance* current;
  static int get_module_function_table(NvtxCallbackModule module, NvtxFunctionTable* out_table,
                                       unsigned int* out_size) {
    if (module == NVTX_CB_MODULE_CORE) {
      *out_table = current->core_table.data();
      *out_size = NVTX_CBID_CORE_SIZE;
      return 1;
    }
    if (module == NVTX_CB_MODULE_CORE2) {
      *out_table = current->core2_table.data();
      *out_size = NVTX_CBID_CORE2_SIZE;
      return 1;
    }
    return 0;
  }
  static void set_version(uint32_t v) { current->injected_version = v; }
  static const void* get_export_table(uint32_t id) {
    if (id == NVTX_ETID_CALLBACKS) return &current->callbacks;
    if (id == NVTX_ETID_VERSIONINFO) return &current->version;
    return nullptr;
  }
};
FakeNvtxInstance* FakeNvtxInstance::current = nullptr;

template <typename Function>
NvtxFunctionPointer slot_of(Function* function) {
  return reinterpret_cast<NvtxFunctionPointer>(function);
}

TEST_F(NvtxHooksTest, InitializeInjectionNvtx2InstallsTheHooks) {
  FakeNvtxInstance instance;
  FakeNvtxInstance::current = &instance;
  EXPECT_EQ(InitializeInjectionNvtx2(&FakeNvtxInstance::get_export_table), 1);
  EXPECT_EQ(instance.core_slots[NVTX_CBID_CORE_RangePushA], slot_of(&hooks::range_push_a));
  EXPECT_EQ(instance.core_slots[NVTX_CBID_CORE_RangePushW], slot_of(&hooks::range_push_w));
  EXPECT_EQ(instance.core_slots[NVTX_CBID_CORE_RangePushEx], slot_of(&hooks::range_push_ex));
  EXPECT_EQ(instance.core_slots[NVTX_CBID_CORE_RangePop], slot_of(&hooks::range_pop));
  EXPECT_EQ(instance.core_slots[NVTX_CBID_CORE_RangeStartA], slot_of(&hooks::range_start_a));
  EXPECT_EQ(instance.core_slots[NVTX_CBID_CORE_RangeEnd], slot_of(&hooks::range_end));
  EXPECT_EQ(instance.core_slots[NVTX_CBID_CORE_MarkA], slot_of(&hooks::mark_a));
  EXPECT_EQ(instance.core_slots[NVTX_CBID_CORE_NameOsThreadA], nullptr) << "left a no-op";
  EXPECT_EQ(instance.core2_slots[NVTX_CBID_CORE2_DomainRangePushEx], slot_of(&hooks::domain_range_push_ex));
  EXPECT_EQ(instance.core2_slots[NVTX_CBID_CORE2_DomainRangePop], slot_of(&hooks::domain_range_pop));
  EXPECT_EQ(instance.core2_slots[NVTX_CBID_CORE2_DomainRangeStartEx], slot_of(&hooks::domain_range_start_ex));
  EXPECT_EQ(instance.core2_slots[NVTX_CBID_CORE2_DomainRangeEnd], slot_of(&hooks::domain_range_end));
  EXPECT_EQ(instance.core2_slots[NVTX_CBID_CORE2_DomainCreateA], slot_of(&hooks::domain_create_a));
  EXPECT_EQ(instance.core2_slots[NVTX_CBID_CORE2_DomainRegisterStringA], slot_of(&hooks::domain_register_string_a));
  EXPECT_EQ(instance.injected_version, static_cast<uint32_t>(NVTX_VERSION));
  EXPECT_EQ(nvtx_stats().modules - before_.modules, 1u);

  // Once per shared object: a second instance initializes independently.
  FakeNvtxInstance second;
  FakeNvtxInstance::current = &second;
  EXPECT_EQ(InitializeInjectionNvtx2(&FakeNvtxInstance::get_export_table), 1);
  EXPECT_EQ(second.core_slots[NVTX_CBID_CORE_RangePushA], slot_of(&hooks::range_push_a));
  EXPECT_EQ(nvtx_stats().modules - before_.modules, 2u);
  FakeNvtxInstance::current = nullptr;
}

TEST_F(NvtxHooksTest, InitializeInjectionNvtx2RefusesWithoutSinkOrTables) {
  EXPECT_EQ(InitializeInjectionNvtx2(nullptr), 0);
  EXPECT_EQ(InitializeInjectionNvtx2([](uint32_t) -> const void* { return nullptr; }), 0);
  if (nvtx_event_sink() != nullptr) GTEST_SKIP() << "the production sink is linked in and enabled";
  nvtx_set_sink_for_testing(nullptr);
  FakeNvtxInstance instance;
  FakeNvtxInstance::current = &instance;
  EXPECT_EQ(InitializeInjectionNvtx2(&FakeNvtxInstance::get_export_table), 0) << "stepwatch disabled";
  EXPECT_EQ(instance.core_slots[NVTX_CBID_CORE_RangePushA], nullptr);
  FakeNvtxInstance::current = nullptr;
}

TEST_F(NvtxHooksTest, ForkedChildTracesWithItsOwnThreadId) {
  FakeNvtxInstance instance;  // initializing installs the fork handler
  FakeNvtxInstance::current = &instance;
  ASSERT_EQ(InitializeInjectionNvtx2(&FakeNvtxInstance::get_export_table), 1);
  FakeNvtxInstance::current = nullptr;

  hooks::range_push_a("parent");  // open across the fork: the child pops it as its own
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The child checks its own copy of the recording sink and reports through its exit code.
    hooks::range_push_a("child");
    hooks::range_pop();
    hooks::range_pop();
    const nvtxRangeId_t id = hooks::range_start_a("child start");
    hooks::range_end(id);
    const auto events = sink_.events();
    const uint32_t self = os_thread_id();
    const bool ok = events.size() == 3 && events[0].thread == self && events[1].thread == self &&
                    sink_.name(events[1]) == "parent" && events[2].thread == self;
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  hooks::range_pop();
  EXPECT_EQ(sink_.names_in_order(), (std::vector<std::string>{"parent"}));
  EXPECT_EQ(sink_.events()[0].thread, os_thread_id());
}

TEST_F(NvtxHooksTest, ExtensionInitHooksOnlyPayloadSchemaRegistration) {
  std::array<intptr_t, 63> slots{};
  nvtxExtModuleSegment_t segment{0, slots.size(), slots.data()};
  nvtxExtModuleInfo_t payload_module{NVTX_VERSION, sizeof(nvtxExtModuleInfo_t), NVTX_EXT_PAYLOAD_MODULEID,
                                     NVTX_EXT_PAYLOAD_COMPATID, 1, &segment, nullptr, nullptr};
  EXPECT_EQ(InitializeInjectionNvtxExtension(&payload_module), 1);
  EXPECT_EQ(slots[NVTX3EXT_CBID_nvtxPayloadSchemaRegister], reinterpret_cast<intptr_t>(&hooks::payload_schema_register));
  EXPECT_EQ(std::count(slots.begin(), slots.end(), 0), static_cast<long>(slots.size() - 1));

  std::array<intptr_t, 8> other_slots{};
  nvtxExtModuleSegment_t other_segment{0, other_slots.size(), other_slots.data()};
  nvtxExtModuleInfo_t other_module{NVTX_VERSION, sizeof(nvtxExtModuleInfo_t), 1 /* memory */, 0x0102, 1,
                                   &other_segment, nullptr, nullptr};
  EXPECT_EQ(InitializeInjectionNvtxExtension(&other_module), 1);
  EXPECT_EQ(std::count(other_slots.begin(), other_slots.end(), 0), static_cast<long>(other_slots.size()));
  EXPECT_EQ(InitializeInjectionNvtxExtension(nullptr), 0);
}

}  // namespace
}  // namespace stepwatch::live

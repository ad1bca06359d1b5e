// NVTX range bookkeeping: the hooks behind every push/pop/start/end, turning each pair into one
// complete kRange event.
//
// - push/pop: per thread and per domain (NVTX's rule), on a bounded thread-local stack. Pushes
//   past kMaxDepth are counted and ignored; the pops that follow consume them first, so the
//   ranges below stay correctly paired.
// - start/end: process-wide by id (a range may end on another thread), in a fixed table of
//   kStartSlots under striped spinlocks. A slot still open when its id comes round again is
//   overwritten; its late end then counts as unpaired.
// - names: interned through the sink once per thread and message, then served from a small
//   thread-local cache keyed by the caller's pointer and verified by content (callers reuse
//   buffers), so a push+pop of a repeated literal neither locks nor allocates.
#define NVTX_NO_IMPL
#include "nvtx/nvtx_ranges.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <mutex>
#include <new>
#include <string>

#include "nvtx/nvtx_hooks.h"
#include "nvtx/nvtx_injection.h"
#include "nvtx/nvtx_registry.h"

namespace stepwatch::live {

namespace nvtx {
namespace {

constexpr uint32_t kMaxDepth = 64;            // per thread, all domains together
constexpr uint32_t kNameCacheSets = 64;       // two ways each
constexpr size_t kCachedTextBytes = 119;      // longer messages are interned on every push
constexpr size_t kMaxNameBytes = 1024;        // longer messages are cut before interning
constexpr uint32_t kStartSlots = 4096;        // open start/end ranges at once, process-wide
constexpr uint32_t kStartStripes = 64;
constexpr uint64_t kPublishCountersEvery = 256;
constexpr int kNoTracking = -1;  // push/pop result when we cannot track (NVTX: negative = error)

static_assert((kNameCacheSets & (kNameCacheSets - 1)) == 0);
static_assert(kStartSlots % kStartStripes == 0);

std::atomic<EventSink*> g_sink_override{nullptr};
// Cached NameIds are valid only for the epoch they were interned in (one sink's name table).
// Starts at 1 so that zero-initialized cache entries never match.
std::atomic<uint32_t> g_name_epoch{1};

struct Counters {
  std::atomic<uint64_t> ranges{0};
  std::atomic<uint64_t> unpaired{0};
  std::atomic<uint64_t> modules{0};
  std::atomic<uint64_t> marks{0};
  std::atomic<uint64_t> too_deep{0};
};
constinit Counters g_counters;

// CLOCK_REALTIME, the clock CUPTI timestamps activity records with (see now_ns); read via
// the vDSO, ~20 ns.
inline int64_t realtime_ns() noexcept {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + static_cast<int64_t>(now.tv_nsec);
}

uint32_t os_thread_id() noexcept { return static_cast<uint32_t>(::syscall(SYS_gettid)); }

enum class MessageKind : uint8_t { kNone, kAscii, kWide, kRegistered };

struct Message {
  MessageKind kind = MessageKind::kNone;
  const void* pointer = nullptr;
};

struct OpenRange {
  int64_t start_ns;
  uint64_t bytes;
  NameId name;
  uint32_t domain;
  CollectiveType collective;
  bool traced;  // a sink was attached at push time (the pop stays paired either way)
};

struct CachedName {
  const void* key;  // the caller's message pointer
  uint32_t domain;
  uint32_t epoch;
  NameId name;
  uint16_t length_bytes;
  bool wide;
  CollectiveType collective;
  char text[kCachedTextBytes + 1];  // the message as seen (UTF-8 for wide ones), NUL-terminated
};

struct ThreadRanges {
  uint32_t thread_id = 0;
  uint32_t depth = 0;
  uint32_t too_deep = 0;  // pushes past kMaxDepth still waiting for their pops
  uint64_t pending_ranges = 0;
  uint64_t pending_marks = 0;
  uint64_t pending_too_deep = 0;
  std::array<OpenRange, kMaxDepth> stack{};
  std::array<CachedName, 2 * kNameCacheSets> names{};
  std::string full_name;  // "<domain>:<message>" being built (miss path only)
  std::string wide_utf8;  // a W message converted
};

void publish_counters(ThreadRanges& ranges) noexcept {
  if (ranges.pending_ranges != 0) g_counters.ranges.fetch_add(ranges.pending_ranges, std::memory_order_relaxed);
  if (ranges.pending_marks != 0) g_counters.marks.fetch_add(ranges.pending_marks, std::memory_order_relaxed);
  if (ranges.pending_too_deep != 0) {
    g_counters.too_deep.fetch_add(ranges.pending_too_deep, std::memory_order_relaxed);
  }
  ranges.pending_ranges = ranges.pending_marks = ranges.pending_too_deep = 0;
}

// The fast path reads only this trivially-destructible pointer. The owner below (non-trivial
// destructor, so touching it registers a thread-exit handler) is touched once per thread.
thread_local ThreadRanges* t_ranges = nullptr;
thread_local bool t_exited = false;

struct ThreadRangesOwner {
  bool armed = false;
  ~ThreadRangesOwner() {
    if (t_ranges != nullptr) {
      publish_counters(*t_ranges);
      delete t_ranges;  // open ranges of an exiting thread are dropped: they never ended
      t_ranges = nullptr;
    }
    // NVTX calls from later thread-exit destructors must not recreate (and leak) the state.
    t_exited = true;
  }
};
thread_local ThreadRangesOwner t_owner;

[[gnu::noinline]] ThreadRanges* create_thread_ranges() noexcept {
  if (t_exited) return nullptr;
  auto* ranges = new (std::nothrow) ThreadRanges();
  if (ranges == nullptr) return nullptr;
  try {
    ranges->full_name.reserve(256);
    ranges->wide_utf8.reserve(256);
  } catch (...) {
  }
  ranges->thread_id = os_thread_id();
  t_owner.armed = true;
  t_ranges = ranges;
  return ranges;
}

inline ThreadRanges* thread_ranges() noexcept {
  ThreadRanges* ranges = t_ranges;
  if (ranges != nullptr) [[likely]] return ranges;
  return create_thread_ranges();
}

void report_unpaired(EventSink* sink) noexcept {
  g_counters.unpaired.fetch_add(1, std::memory_order_relaxed);
  if (sink != nullptr) sink->report_loss(LossKind::kUnpairedRange, 1);
}

void submit_range(EventSink& sink, ThreadRanges* ranges, int64_t start_ns, int64_t end_ns, NameId name,
                  uint32_t thread_id, uint64_t bytes, CollectiveType collective) noexcept {
  Event event;
  event.kind = EventKind::kRange;
  event.start_ns = start_ns;
  event.end_ns = end_ns;
  event.name = name;
  event.thread = thread_id;
  event.bytes = bytes;
  event.collective = collective;
  sink.submit(event);
  if (ranges == nullptr) {
    g_counters.ranges.fetch_add(1, std::memory_order_relaxed);
  } else if (++ranges->pending_ranges >= kPublishCountersEvery) {
    publish_counters(*ranges);
  }
}

// ---- Names -----------------------------------------------------------------------------------

inline uint32_t cache_set(const void* key, uint32_t domain) noexcept {
  const uint64_t mixed = (reinterpret_cast<uintptr_t>(key) ^ domain) * 0x9E3779B97F4A7C15ull;
  return static_cast<uint32_t>(mixed >> 58) & (kNameCacheSets - 1);  // top 6 bits
}

inline bool ascii_hit(const CachedName& cached, const char* text, uint32_t domain, uint32_t epoch) noexcept {
  // strncmp over length + 1 also compares the terminator: a longer text in a reused buffer misses.
  return cached.key == text && cached.domain == domain && cached.epoch == epoch && !cached.wide &&
         std::strncmp(cached.text, text, static_cast<size_t>(cached.length_bytes) + 1) == 0;
}

inline bool utf8_hit(const CachedName& cached, const void* key, std::string_view text, uint32_t domain,
                     uint32_t epoch) noexcept {
  return cached.key == key && cached.domain == domain && cached.epoch == epoch && cached.wide &&
         cached.length_bytes == text.size() && std::memcmp(cached.text, text.data(), text.size()) == 0;
}

// Miss path: build the full name, intern it, remember it in one of the set's two ways.
[[gnu::noinline]] NameId intern_and_cache(ThreadRanges& ranges, EventSink& sink, uint32_t domain,
                                          const void* key, bool wide, std::string_view message,
                                          uint32_t epoch, CollectiveType& collective) {
  build_range_name(domain, message, ranges.full_name);
  const NameId name = sink.intern(ranges.full_name);
  collective = domain_is_nccl(domain) ? collective_from_nccl_function(message) : CollectiveType::kNone;
  if (message.size() <= kCachedTextBytes) {
    CachedName* ways = &ranges.names[2 * cache_set(key, domain)];
    // The newest name goes to way 0 and the one it displaces to way 1, so two hot names sharing
    // a set both stay cached. A reused buffer (same key, new text) replaces its own entry.
    CachedName* way = &ways[0];
    if (ways[1].key == key) {
      way = &ways[1];
    } else if (ways[0].key != key && ways[0].key != nullptr && ways[0].epoch == epoch) {
      ways[1] = ways[0];
    }
    way->key = key;
    way->domain = domain;
    way->epoch = epoch;
    way->name = name;
    way->length_bytes = static_cast<uint16_t>(message.size());
    way->wide = wide;
    way->collective = collective;
    std::memcpy(way->text, message.data(), message.size());
    way->text[message.size()] = '\0';
  }
  return name;
}

inline NameId resolve_ascii(ThreadRanges& ranges, EventSink& sink, uint32_t domain, const char* text,
                            CollectiveType& collective) {
  if (text == nullptr) text = "";
  const uint32_t epoch = g_name_epoch.load(std::memory_order_relaxed);
  const CachedName* way = &ranges.names[2 * cache_set(text, domain)];
  if (ascii_hit(way[0], text, domain, epoch)) [[likely]] {
    collective = way[0].collective;
    return way[0].name;
  }
  if (ascii_hit(way[1], text, domain, epoch)) {
    collective = way[1].collective;
    return way[1].name;
  }
  return intern_and_cache(ranges, sink, domain, text, false, std::string_view(text, strnlen(text, kMaxNameBytes)),
                          epoch, collective);
}

NameId resolve_wide(ThreadRanges& ranges, EventSink& sink, uint32_t domain, const wchar_t* text,
                    CollectiveType& collective) {
  ranges.wide_utf8.clear();
  append_utf8(text, kMaxNameBytes, ranges.wide_utf8);
  const std::string_view utf8 = ranges.wide_utf8;
  const uint32_t epoch = g_name_epoch.load(std::memory_order_relaxed);
  const CachedName* way = &ranges.names[2 * cache_set(text, domain)];
  for (int i = 0; i < 2; ++i) {
    if (utf8_hit(way[i], text, utf8, domain, epoch)) {
      collective = way[i].collective;
      return way[i].name;
    }
  }
  return intern_and_cache(ranges, sink, domain, text, true, utf8, epoch, collective);
}

NameId resolve_registered(ThreadRanges& ranges, EventSink& sink, uint32_t domain, nvtxStringHandle_t handle,
                          CollectiveType& collective) {
  const RegisteredString* registered = find_registered_string(handle);
  if (registered == nullptr) return resolve_ascii(ranges, sink, domain, "", collective);
  const uint32_t epoch = g_name_epoch.load(std::memory_order_relaxed);
  if (registered->domain == domain) {
    const uint64_t cached = registered->name_for_epoch.load(std::memory_order_relaxed);
    collective = registered->collective;
    if (static_cast<uint32_t>(cached >> 32) == epoch) return static_cast<NameId>(cached);
  }
  // First use in this epoch (or a string registered in another domain than the push's).
  build_range_name(domain, registered->text, ranges.full_name);
  const NameId name = sink.intern(ranges.full_name);
  if (registered->domain == domain) {
    // Racing first uses intern the same text and store the same id.
    registered->name_for_epoch.store((static_cast<uint64_t>(epoch) << 32) | name,
                                                                   std::memory_order_relaxed);
  } else {
    collective = domain_is_nccl(domain) ? collective_from_nccl_function(registered->text) : CollectiveType::kNone;
  }
  return name;
}

NameId resolve_name(ThreadRanges& ranges, EventSink& sink, uint32_t domain, Message message,
                    CollectiveType& collective) {
  switch (message.kind) {
    case MessageKind::kAscii:
      return resolve_ascii(ranges, sink, domain, static_cast<const char*>(message.pointer), collective);
    case MessageKind::kWide:
      return resolve_wide(ranges, sink, domain, static_cast<const wchar_t*>(message.pointer), collective);
    case MessageKind::kRegistered:
      return resolve_registered(ranges, sink, domain,
                                static_cast<nvtxStringHandle_t>(const_cast<void*>(message.pointer)), collective);
    case MessageKind::kNone:
      break;
  }
  return resolve_ascii(ranges, sink, domain, "", collective);
}

Message message_of(const nvtxEventAttributes_t* attributes) noexcept {
  // The struct has grown over NVTX versions; `size` says which fields the caller filled.
  constexpr size_t kWithMessage = offsetof(nvtxEventAttributes_t, message) + sizeof(nvtxMessageValue_t);
  if (attributes == nullptr || attributes->size < kWithMessage) return {};
  switch (attributes->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
      return {MessageKind::kAscii, attributes->message.ascii};
    case NVTX_MESSAGE_TYPE_UNICODE:
      return {MessageKind::kWide, attributes->message.unicode};
    case NVTX_MESSAGE_TYPE_REGISTERED:
      return {MessageKind::kRegistered, attributes->message.registered};
    default:
      return {};
  }
}

uint64_t message_bytes_of(uint32_t domain, const nvtxEventAttributes_t* attributes) noexcept {
  constexpr size_t kWithPayload = offsetof(nvtxEventAttributes_t, payload) + sizeof(attributes->payload);
  uint64_t bytes = 0;
  if (attributes != nullptr && attributes->size >= kWithPayload) payload_message_bytes(domain, *attributes, bytes);
  return bytes;
}

// ---- Push / pop ------------------------------------------------------------------------------

int push_range(uint32_t domain, Message message, uint64_t bytes) {
  ThreadRanges* ranges = thread_ranges();
  if (ranges == nullptr) return kNoTracking;
  if (ranges->depth >= kMaxDepth) {
    ++ranges->too_deep;
    ++ranges->pending_too_deep;
    return static_cast<int>(ranges->depth + ranges->too_deep - 1);
  }
  OpenRange& open = ranges->stack[ranges->depth];
  EventSink* sink = current_sink();
  open.domain = domain;
  open.bytes = bytes;
  open.traced = sink != nullptr;
  open.collective = CollectiveType::kNone;
  open.name = sink != nullptr ? resolve_name(*ranges, *sink, domain, message, open.collective) : kNoName;
  // Timestamp last (and first in pop): our own bookkeeping stays outside the application's range.
  open.start_ns = realtime_ns();
  return static_cast<int>(ranges->depth++);
}

int pop_range(uint32_t domain) {
  const int64_t end_ns = realtime_ns();
  ThreadRanges* ranges = thread_ranges();
  if (ranges == nullptr) return kNoTracking;
  if (ranges->too_deep > 0) {
    --ranges->too_deep;
    return static_cast<int>(ranges->depth + ranges->too_deep);
  }
  // The innermost open range of this domain: usually the top; lower only when a library's
  // domain ranges interleave with the application's.
  uint32_t index = ranges->depth;
  while (index > 0 && ranges->stack[index - 1].domain != domain) --index;
  if (index == 0) {
    report_unpaired(current_sink());
    return kNoTracking;
  }
  const OpenRange open = ranges->stack[index - 1];
  for (uint32_t i = index; i < ranges->depth; ++i) ranges->stack[i - 1] = ranges->stack[i];
  --ranges->depth;
  if (open.traced) {
    if (EventSink* sink = current_sink()) {
      submit_range(*sink, ranges, open.start_ns, end_ns, open.name, ranges->thread_id, open.bytes, open.collective);
    }
  }
  return static_cast<int>(ranges->depth);
}

// ---- Start / end -----------------------------------------------------------------------------

struct StartedRange {
  uint64_t id;  // 0: free
  int64_t start_ns;
  uint64_t bytes;
  NameId name;
  uint32_t thread_id;
  CollectiveType collective;
  bool traced;
};

struct StartTable {
  std::array<SpinLock, kStartStripes> stripes{};
  std::array<StartedRange, kStartSlots> slots{};
  std::atomic<uint64_t> next_id{1};  // 0 is NVTX's "no range"
};
constinit StartTable g_started;

SpinLock& stripe_of(uint64_t id) noexcept { return g_started.stripes[(id % kStartSlots) % kStartStripes]; }

nvtxRangeId_t start_range(uint32_t domain, Message message, uint64_t bytes) {
  ThreadRanges* ranges = thread_ranges();
  if (ranges == nullptr) return 0;
  EventSink* sink = current_sink();
  StartedRange started{};
  started.bytes = bytes;
  started.thread_id = ranges->thread_id;
  started.traced = sink != nullptr;
  started.collective = CollectiveType::kNone;
  started.name = sink != nullptr ? resolve_name(*ranges, *sink, domain, message, started.collective) : kNoName;
  started.id = g_started.next_id.fetch_add(1, std::memory_order_relaxed);
  started.start_ns = realtime_ns();
  {
    SpinLockGuard guard(stripe_of(started.id));
    g_started.slots[started.id % kStartSlots] = started;
  }
  return started.id;
}

void end_range(nvtxRangeId_t id) {
  const int64_t end_ns = realtime_ns();
  if (id == 0) return;  // what NVTX returns when nothing was started; not a pairing error
  StartedRange started{};
  {
    SpinLockGuard guard(stripe_of(id));
    StartedRange& slot = g_started.slots[id % kStartSlots];
    if (slot.id == id) {
      started = slot;
      slot.id = 0;
    }
  }
  EventSink* sink = current_sink();
  if (started.id == 0) {
    report_unpaired(sink);
    return;
  }
  if (started.traced && sink != nullptr) {
    submit_range(*sink, t_ranges, started.start_ns, end_ns, started.name, started.thread_id, started.bytes,
                 started.collective);
  }
}

void count_mark() noexcept {
  if (ThreadRanges* ranges = thread_ranges()) {
    if (++ranges->pending_marks >= kPublishCountersEvery) publish_counters(*ranges);
  } else {
    g_counters.marks.fetch_add(1, std::memory_order_relaxed);
  }
}

void fork_child_handler() noexcept {
  // Only the forking thread exists in the child: every lock is free, and its id changed.
  for (SpinLock& stripe : g_started.stripes) stripe.reset_after_fork();
  reset_registry_locks_after_fork();
  if (t_ranges != nullptr) t_ranges->thread_id = os_thread_id();
}

}  // namespace

// ---- Internal API (nvtx_ranges.h) ------------------------------------------------------------

EventSink* current_sink() noexcept {
  EventSink* override_sink = g_sink_override.load(std::memory_order_acquire);
  return override_sink != nullptr ? override_sink : nvtx_event_sink();
}

void count_module_initialized() noexcept { g_counters.modules.fetch_add(1, std::memory_order_relaxed); }

void install_fork_handler_once() noexcept {
  static std::once_flag once;
  try {
    std::call_once(once, [] { pthread_atfork(nullptr, nullptr, &fork_child_handler); });
  } catch (...) {
  }
}

// ---- Hooks (nvtx_hooks.h) --------------------------------------------------------------------
// Each hook catches everything: an exception must never unwind into the application's NVTX call.

int range_push_a(const char* message) noexcept {
  try {
    return push_range(kDefaultDomain, {MessageKind::kAscii, message}, 0);
  } catch (...) {
    return kNoTracking;
  }
}

int range_push_w(const wchar_t* message) noexcept {
  try {
    return push_range(kDefaultDomain, {MessageKind::kWide, message}, 0);
  } catch (...) {
    return kNoTracking;
  }
}

int range_push_ex(const nvtxEventAttributes_t* attributes) noexcept {
  return domain_range_push_ex(nullptr, attributes);
}

int range_pop() noexcept {
  try {
    return pop_range(kDefaultDomain);
  } catch (...) {
    return kNoTracking;
  }
}

nvtxRangeId_t range_start_a(const char* message) noexcept {
  try {
    return start_range(kDefaultDomain, {MessageKind::kAscii, message}, 0);
  } catch (...) {
    return 0;
  }
}

nvtxRangeId_t range_start_w(const wchar_t* message) noexcept {
  try {
    return start_range(kDefaultDomain, {MessageKind::kWide, message}, 0);
  } catch (...) {
    return 0;
  }
}

nvtxRangeId_t range_start_ex(const nvtxEventAttributes_t* attributes) noexcept {
  return domain_range_start_ex(nullptr, attributes);
}

void range_end(nvtxRangeId_t id) noexcept {
  try {
    end_range(id);
  } catch (...) {
  }
}

void mark_a(const char*) noexcept { count_mark(); }
void mark_w(const wchar_t*) noexcept { count_mark(); }
void mark_ex(const nvtxEventAttributes_t*) noexcept { count_mark(); }
void domain_mark_ex(nvtxDomainHandle_t, const nvtxEventAttributes_t*) noexcept { count_mark(); }

int domain_range_push_ex(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes) noexcept {
  try {
    const uint32_t index = domain_index(domain);
    return push_range(index, message_of(attributes), message_bytes_of(index, attributes));
  } catch (...) {
    return kNoTracking;
  }
}

int domain_range_pop(nvtxDomainHandle_t domain) noexcept {
  try {
    return pop_range(domain_index(domain));
  } catch (...) {
    return kNoTracking;
  }
}

nvtxRangeId_t domain_range_start_ex(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes) noexcept {
  try {
    const uint32_t index = domain_index(domain);
    return start_range(index, message_of(attributes), message_bytes_of(index, attributes));
  } catch (...) {
    return 0;
  }
}

void domain_range_end(nvtxDomainHandle_t, nvtxRangeId_t id) noexcept {
  // Ids are process-wide, whatever the domain: the name already carries it.
  range_end(id);
}

nvtxDomainHandle_t domain_create_a(const char* name) noexcept {
  if (name == nullptr) return nullptr;
  return create_domain(std::string_view(name, strnlen(name, kMaxDomainNameBytes)));
}

nvtxDomainHandle_t domain_create_w(const wchar_t* name) noexcept {
  if (name == nullptr) return nullptr;
  try {
    std::string utf8;
    append_utf8(name, kMaxDomainNameBytes, utf8);
    return create_domain(utf8);
  } catch (...) {
    return nullptr;
  }
}

void domain_destroy(nvtxDomainHandle_t) noexcept {
  // Domains are kept: ranges still open in them (and other modules sharing the name) need them.
}

nvtxStringHandle_t domain_register_string_a(nvtxDomainHandle_t domain, const char* text) noexcept {
  if (text == nullptr) text = "";
  return register_string(domain_index(domain), std::string_view(text, strnlen(text, kMaxNameBytes)));
}

nvtxStringHandle_t domain_register_string_w(nvtxDomainHandle_t domain, const wchar_t* text) noexcept {
  try {
    std::string utf8;
    append_utf8(text, kMaxNameBytes, utf8);
    return register_string(domain_index(domain), utf8);
  } catch (...) {
    return nullptr;
  }
}

uint64_t payload_schema_register(nvtxDomainHandle_t domain, const nvtxPayloadSchemaAttr_t* attributes) noexcept {
  if (attributes == nullptr) return 0;
  return register_payload_schema(domain_index(domain), *attributes);
}

}  // namespace nvtx

// ---- Public (nvtx_injection.h) ---------------------------------------------------------------

NvtxStats nvtx_stats() noexcept {
  if (nvtx::t_ranges != nullptr) nvtx::publish_counters(*nvtx::t_ranges);
  NvtxStats stats;
  stats.ranges = nvtx::g_counters.ranges.load(std::memory_order_relaxed);
  stats.unpaired = nvtx::g_counters.unpaired.load(std::memory_order_relaxed);
  stats.modules = nvtx::g_counters.modules.load(std::memory_order_relaxed);
  stats.marks = nvtx::g_counters.marks.load(std::memory_order_relaxed);
  stats.too_deep = nvtx::g_counters.too_deep.load(std::memory_order_relaxed);
  return stats;
}

void nvtx_set_sink_for_testing(EventSink* sink) noexcept {
  nvtx::g_sink_override.store(sink, std::memory_order_release);
  nvtx::g_name_epoch.fetch_add(1, std::memory_order_relaxed);
  if (nvtx::t_ranges != nullptr) {
    nvtx::t_ranges->depth = 0;
    nvtx::t_ranges->too_deep = 0;
  }
}

}  // namespace stepwatch::live

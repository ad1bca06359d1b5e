// The test injection library's sink: stands in for the live session's `nvtx_event_sink()` and
// writes every event to the file named by STEPWATCH_NVTX_TEST_OUT, one tab-separated line each:
//   range <name> <start_ns> <end_ns> <thread> <bytes> <collective>
//   loss  <LossKind as int> <count>
//   stats <ranges> <unpaired> <modules> <marks> <too_deep>   (once, at exit)
// STEPWATCH_NVTX_TEST_DISABLE=1 makes nvtx_event_sink() return nullptr (stepwatch disabled).
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "nvtx/nvtx_injection.h"

namespace stepwatch::live {
namespace {

class FileSink final : public EventSink {
 public:
  explicit FileSink(std::FILE* out) : out_(out) {}

  void submit(const Event& event) noexcept override {
    std::lock_guard lock(mutex_);
    const std::string& name = event.name == kNoName || event.name > names_.size() ? empty_ : names_[event.name - 1];
    std::fprintf(out_, "range\t%s\t%lld\t%lld\t%u\t%llu\t%d\n", name.c_str(),
                 static_cast<long long>(event.start_ns), static_cast<long long>(event.end_ns), event.thread,
                 static_cast<unsigned long long>(event.bytes), static_cast<int>(event.collective));
    std::fflush(out_);
  }

  NameId intern(std::string_view name) noexcept override {
    std::lock_guard lock(mutex_);
    auto [it, inserted] = ids_.try_emplace(std::string(name), static_cast<NameId>(names_.size() + 1));
    if (inserted) names_.emplace_back(name);
    return it->second;
  }

  void report_loss(LossKind kind, uint64_t count) noexcept override {
    std::lock_guard lock(mutex_);
    std::fprintf(out_, "loss\t%d\t%llu\n", static_cast<int>(kind), static_cast<unsigned long long>(count));
    std::fflush(out_);
  }

  void advance_watermark(int64_t) noexcept override {}

  void mark_incomplete(int64_t, int64_t) noexcept override {}
  void status(std::string_view) noexcept override {}

  void write_stats() noexcept {
    const NvtxStats stats = nvtx_stats();
    std::lock_guard lock(mutex_);
    std::fprintf(out_, "stats\t%llu\t%llu\t%llu\t%llu\t%llu\n", static_cast<unsigned long long>(stats.ranges),
                 static_cast<unsigned long long>(stats.unpaired), static_cast<unsigned long long>(stats.modules),
                 static_cast<unsigned long long>(stats.marks), static_cast<unsigned long long>(stats.too_deep));
    std::fflush(out_);
  }

 private:
  std::mutex mutex_;
  std::FILE* out_;
  std::vector<std::string> names_;
  std::unordered_map<std::string, NameId> ids_;
  const std::string empty_;
};

// Leaked: hooks may run from other objects' static destructors after ours.
FileSink* make_sink() {
  const char* disable = std::getenv("STEPWATCH_NVTX_TEST_DISABLE");
  const char* path = std::getenv("STEPWATCH_NVTX_TEST_OUT");
  if ((disable != nullptr && disable[0] == '1') || path == nullptr) return nullptr;
  std::FILE* out = std::fopen(path, "w");
  return out == nullptr ? nullptr : new FileSink(out);
}

FileSink* sink() {
  static FileSink* const instance = make_sink();
  return instance;
}

// Every thread the app started has been joined when static destructors run: the counters are final.
struct StatsAtExit {
  ~StatsAtExit() {
    if (FileSink* s = sink()) s->write_stats();
  }
} g_stats_at_exit;

}  // namespace

EventSink* nvtx_event_sink() noexcept { return sink(); }
void nvtx_injection_started() noexcept {}

}  // namespace stepwatch::live

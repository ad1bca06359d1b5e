#include "import/event_collector.h"

#include <algorithm>
#include <cstdint>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace stepwatch::import_detail {
namespace {

// Appends `from` to `out`, then frees it. On Linux the pages of `from` that were copied are handed
// back while copying (a 64 MiB slice at a time), so that joining never holds two copies of the
// events: `from` is freed right after, and nothing reads the dropped pages again.
void move_events(std::vector<Event>& from, std::vector<Event>& out) {
  constexpr size_t kSlice = (size_t{64} << 20) / sizeof(Event);
  for (size_t at = 0; at < from.size(); at += kSlice) {
    const size_t n = std::min(kSlice, from.size() - at);
    out.insert(out.end(), from.begin() + static_cast<std::ptrdiff_t>(at),
               from.begin() + static_cast<std::ptrdiff_t>(at + n));
#if defined(__linux__)
    const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    const auto begin = (reinterpret_cast<uintptr_t>(from.data() + at) + page - 1) & ~(page - 1);
    const auto end = reinterpret_cast<uintptr_t>(from.data() + at + n) & ~(page - 1);
    if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
#endif
  }
  std::vector<Event>().swap(from);
}

}  // namespace

EventCollector::EventCollector() { main_.reserve(kFirstEvents); }

void EventCollector::grow() {
  if (!sized_) {
    sized_ = true;
    if (text_expected_ > text_read_ && text_read_ > 0) {
      // Half again the rate seen so far: a trace's later part can be denser than its first
      // megabytes. Capacity past the events is never touched, so it costs address space only;
      // where even that is refused, the events go into blocks instead.
      const double rate = static_cast<double>(main_.size()) / static_cast<double>(text_read_);
      const auto target = static_cast<size_t>(rate * static_cast<double>(text_expected_) * 1.5) + kBlockEvents;
      try {
        std::vector<Event> sized;
        sized.reserve(target);
        sized.insert(sized.end(), main_.begin(), main_.end());
        main_ = std::move(sized);
        return;
      } catch (const std::bad_alloc&) {
      }
    }
  }
  blocks_.emplace_back().reserve(kBlockEvents);
  current_ = &blocks_.back();
}

std::vector<Event> EventCollector::take() {
  if (blocks_.empty()) return std::move(main_);
  size_t total = main_.size();
  for (const std::vector<Event>& b : blocks_) total += b.size();
  std::vector<Event> out;
  out.reserve(total);
  move_events(main_, out);
  for (std::vector<Event>& b : blocks_) move_events(b, out);
  blocks_.clear();
  current_ = &main_;
  return out;
}

}  // namespace stepwatch::import_detail

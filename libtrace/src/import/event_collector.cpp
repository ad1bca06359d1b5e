#include "import/event_collector.h"

namespace stepwatch::import_detail {

EventCollector::EventCollector() { main_.reserve(kFirstEvents); }

void EventCollector::grow() {
  if (!sized_) {
    sized_ = true;
    if (text_expected_ > text_read_ && text_read_ > 0) {
      // 25% over the rate seen so far: a trace's later part can be denser than its first
      // megabytes (the header and the first host ops come first).
      const double rate = static_cast<double>(main_.size()) / static_cast<double>(text_read_);
      const auto target = static_cast<size_t>(rate * static_cast<double>(text_expected_) * 1.25) + kBlockEvents;
      std::vector<Event> sized;
      sized.reserve(target);
      sized.insert(sized.end(), main_.begin(), main_.end());
      main_ = std::move(sized);
      return;
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
  out.insert(out.end(), main_.begin(), main_.end());
  std::vector<Event>().swap(main_);
  for (std::vector<Event>& b : blocks_) {
    out.insert(out.end(), b.begin(), b.end());
    std::vector<Event>().swap(b);
  }
  blocks_.clear();
  current_ = &main_;
  return out;
}

}  // namespace stepwatch::import_detail

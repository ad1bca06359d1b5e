#include "cupti/sync_pairing.h"

#include <algorithm>

namespace stepwatch::live {
namespace {
constexpr size_t kMaxRemembered = 1u << 16;  // bounded: a flood of queries cannot grow it
}

bool SyncPairing::pairs_with(ApiClass cls) noexcept {
  switch (cls) {
    case ApiClass::kStreamSync:
    case ApiClass::kDeviceSync:
    case ApiClass::kEventSync:
    case ApiClass::kStreamWait:
    case ApiClass::kQuery: return true;
    default: return false;
  }
}

bool SyncPairing::resolve(const Api& api, Event& ev) noexcept {
  if (api.cls == ApiClass::kQuery) {
    ++dropped_queries_;
    return false;
  }
  ev.thread = api.thread;
  return true;
}

void SyncPairing::api_record(uint32_t correlation, uint32_t thread, ApiClass cls, std::vector<Event>& ready) noexcept {
  if (correlation == 0) return;
  try {
    std::lock_guard lock(mu_);
    const Api api{thread, cls, ticks_};
    if (auto it = held_.find(correlation); it != held_.end()) {
      Event ev = it->second.ev;
      held_.erase(it);
      if (resolve(api, ev)) ready.push_back(ev);
      return;
    }
    if (apis_.size() < kMaxRemembered) apis_[correlation] = api;
  } catch (...) {
  }
}

SyncPairing::Outcome SyncPairing::sync_record(Event& ev) noexcept {
  if (ev.correlation == 0) return Outcome::kSubmit;
  try {
    std::lock_guard lock(mu_);
    if (auto it = apis_.find(static_cast<uint32_t>(ev.correlation)); it != apis_.end()) {
      const Api api = it->second;
      apis_.erase(it);
      return resolve(api, ev) ? Outcome::kSubmit : Outcome::kDropped;
    }
    if (held_.size() >= kMaxRemembered) return Outcome::kSubmit;  // bounded: as before pairing
    held_[static_cast<uint32_t>(ev.correlation)] = Held{ev, ticks_};
    return Outcome::kHeld;
  } catch (...) {
    return Outcome::kSubmit;
  }
}

void SyncPairing::tick(std::vector<Event>& released, uint64_t max_age) noexcept {
  try {
    std::lock_guard lock(mu_);
    ++ticks_;
    for (auto it = held_.begin(); it != held_.end();) {
      if (it->second.tick + max_age <= ticks_) {
        released.push_back(it->second.ev);
        it = held_.erase(it);
      } else {
        ++it;
      }
    }
    std::erase_if(apis_, [&](const auto& kv) { return kv.second.tick + 2 * max_age <= ticks_; });
  } catch (...) {
  }
}

int64_t SyncPairing::oldest_held_ns() const noexcept {
  std::lock_guard lock(mu_);
  int64_t oldest = INT64_MAX;
  for (const auto& [corr, h] : held_) oldest = std::min(oldest, h.ev.start_ns);
  return oldest;
}

uint64_t SyncPairing::dropped_queries() const noexcept {
  std::lock_guard lock(mu_);
  return dropped_queries_;
}

}  // namespace stepwatch::live

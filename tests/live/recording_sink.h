// An EventSink that records everything, for the CUPTI adapter tests (spdlog's in-memory test sink
// idea). Thread-safe: the adapter calls it from test threads, its flush thread and helper threads.
#pragma once

#include <algorithm>
#include <array>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/event_sink.h"
#include "stepwatch/core/name_table.h"

namespace stepwatch::test_support {

class RecordingSink : public EventSink {
 public:
  void submit(const Event& event) noexcept override {
    std::lock_guard lock(mu_);
    events_.push_back(event);
    submit_threads_.insert(std::this_thread::get_id());
  }
  NameId intern(std::string_view name) noexcept override { return names_.intern(name); }
  void report_loss(LossKind kind, uint64_t count) noexcept override {
    std::lock_guard lock(mu_);
    losses_[static_cast<size_t>(kind)] += count;
    ++loss_calls_[static_cast<size_t>(kind)];
  }
  void advance_watermark(int64_t timestamp_ns) noexcept override {
    std::lock_guard lock(mu_);
    watermark_ns_ = std::max(watermark_ns_, timestamp_ns);
    ++watermark_calls_;
    events_at_last_watermark_ = events_.size();
  }
  void mark_incomplete(int64_t start_ns, int64_t end_ns) noexcept override {
    std::lock_guard lock(mu_);
    incomplete_.emplace_back(start_ns, end_ns);
  }
  std::vector<std::pair<int64_t, int64_t>> incomplete() const {
    std::lock_guard lock(mu_);
    return incomplete_;
  }
  void status(std::string_view line) noexcept override {
    std::lock_guard lock(mu_);
    status_lines_.emplace_back(line);
  }

  std::vector<Event> events() const {
    std::lock_guard lock(mu_);
    return events_;
  }
  size_t event_count() const {
    std::lock_guard lock(mu_);
    return events_.size();
  }
  uint64_t loss(LossKind kind) const {
    std::lock_guard lock(mu_);
    return losses_[static_cast<size_t>(kind)];
  }
  uint64_t loss_calls(LossKind kind) const {
    std::lock_guard lock(mu_);
    return loss_calls_[static_cast<size_t>(kind)];
  }
  int64_t watermark_ns() const {
    std::lock_guard lock(mu_);
    return watermark_ns_;
  }
  uint64_t watermark_calls() const {
    std::lock_guard lock(mu_);
    return watermark_calls_;
  }
  size_t events_at_last_watermark() const {
    std::lock_guard lock(mu_);
    return events_at_last_watermark_;
  }
  std::vector<std::string> status_lines() const {
    std::lock_guard lock(mu_);
    return status_lines_;
  }
  std::set<std::thread::id> submit_threads() const {
    std::lock_guard lock(mu_);
    return submit_threads_;
  }
  std::string name(NameId id) const { return std::string(names_.view(id)); }

 private:
  mutable std::mutex mu_;
  NameTable names_;
  std::vector<Event> events_;
  std::set<std::thread::id> submit_threads_;
  std::array<uint64_t, static_cast<size_t>(LossKind::kCount_)> losses_{};
  std::array<uint64_t, static_cast<size_t>(LossKind::kCount_)> loss_calls_{};
  int64_t watermark_ns_ = 0;
  uint64_t watermark_calls_ = 0;
  size_t events_at_last_watermark_ = 0;
  std::vector<std::string> status_lines_;
  std::vector<std::pair<int64_t, int64_t>> incomplete_;
};

}  // namespace stepwatch::test_support

#include "live/outputs/run_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

namespace stepwatch::live {
namespace {

constexpr size_t kMaxStepSamples = 100'000;

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}
double ms(int64_t ns) { return double(ns) / 1e6; }

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * double(v.size() - 1);
  const auto lo = static_cast<size_t>(pos);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - double(lo));
}

template <typename Map>
std::vector<std::pair<std::string, const typename Map::mapped_type*>> top_by_total(const Map& m, const NameTable* names,
                                                                                  size_t n) {
  std::vector<std::pair<std::string, const typename Map::mapped_type*>> rows;
  for (const auto& [key, value] : m) {
    if constexpr (std::is_same_v<typename Map::key_type, NameId>) rows.emplace_back(std::string(names->view(key)), &value);
    else rows.emplace_back(key, &value);
  }
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second->total_ns > b.second->total_ns; });
  if (rows.size() > n) rows.resize(n);
  return rows;
}

std::string shorten(const std::string& s, size_t n = 80) { return s.size() <= n ? s : s.substr(0, n - 3) + "..."; }

}  // namespace

void RunStats::add_events(std::span<const Event> events) {
  for (const Event& e : events) {
    switch (e.kind) {
      case EventKind::kKernel: kernels_[e.name].add(e.duration_ns()); break;
      case EventKind::kApiCall: api_[e.name].add(e.duration_ns()); break;
      case EventKind::kMemcpy: copies_[std::string(to_string(e.copy_kind()))].add(e.duration_ns(), e.bytes); break;
      case EventKind::kMemset: copies_["memset"].add(e.duration_ns(), e.bytes); break;
      default: break;
    }
  }
}

void RunStats::add_step(const StepView& v, StepStatus status, std::span<const Finding> findings) {
  ++steps_;
  judged_ += status == StepStatus::kJudged ? 1 : 0;
  if (!has_breakdown(status)) {
    // Timed only: its GPU breakdown is unknown, so it stays out of the breakdown totals.
    ++(status == StepStatus::kIncomplete ? incomplete_ : untraced_);
    return;
  }
  // Keep at most kMaxStepSamples durations: past the cap keep every other one (a fixed stride
  // sample stays representative of the whole run for percentiles).
  if (step_seen_++ % step_stride_ == 0) {
    step_ms_.push_back(ms(v.duration_ns()));
    if (step_ms_.size() >= kMaxStepSamples) {
      std::vector<double> half;
      for (size_t i = 0; i < step_ms_.size(); i += 2) half.push_back(step_ms_[i]);
      step_ms_.swap(half);
      step_stride_ *= 2;
    }
  }
  wall_ns_ += v.duration_ns();
  busy_ns_ += v.busy_ns;
  compute_ns_ += v.compute_ns;
  exposed_ns_ += v.exposed_comm_ns;
  copy_only_ns_ += v.copy_only_ns;
  for (IdleCause c : kIdleCauses) idle_[c] += v.idle[c];
  for (const BlockingCallStat& b : v.blocking) {
    Blocking& agg = blocking_[b.name];
    agg.count += static_cast<uint64_t>(b.count);
    agg.host_ns += b.host_ns;
    agg.gpu_idle_ns += b.gpu_idle_ns;
  }
  for (const Finding& f : findings) {
    auto& [steps, cost] = findings_[f.detector];
    ++steps;
    cost += f.cost_ms;
  }
}

void RunStats::add_run_finding(const Finding& f) {
  auto& [steps, cost] = findings_[f.detector];
  ++steps;
  cost += f.cost_ms;
}

std::string RunStats::text(const NameTable& names, int rank, std::span<const uint64_t> losses,
                           const SelfOverhead& o) const {
  std::string out;
  auto line = [&](const std::string& s) { out += "[stepwatch][rank " + std::to_string(rank) + "] " + s + "\n"; };
  line("exit summary: " + std::to_string(steps_) + " steps analyzed, " + std::to_string(judged_) + " judged (" +
       std::to_string(steps_ - judged_ - untraced_ - incomplete_) + " warm-up, " + std::to_string(untraced_) +
       " without GPU tracing, " + std::to_string(incomplete_) + " incomplete: GPU records missing)");
  if (!step_ms_.empty()) {
    double sum = 0;
    for (double x : step_ms_) sum += x;
    const double mean = sum / double(step_ms_.size());
    double var = 0;
    for (double x : step_ms_) var += (x - mean) * (x - mean);
    const double cv = mean > 0 ? std::sqrt(var / double(step_ms_.size())) / mean : 0;
    const double n = double(std::max<uint64_t>(steps_, 1));
    line("  step time: mean " + fmt("%.2f", mean) + " ms, median " + fmt("%.2f", percentile(step_ms_, 0.5)) +
         " ms, p90 " + fmt("%.2f", percentile(step_ms_, 0.9)) + " ms, CV " + fmt("%.2f", cv) + "; GPU busy " +
         fmt("%.1f", wall_ns_ > 0 ? 100.0 * double(busy_ns_) / double(wall_ns_) : 0.0) + "%");
    line("  per step: compute " + fmt("%.2f", ms(compute_ns_) / n) + " ms, exposed comm " +
         fmt("%.2f", ms(exposed_ns_) / n) + ", copy-only " + fmt("%.2f", ms(copy_only_ns_) / n) + ", idle: input " +
         fmt("%.2f", ms(idle_[IdleCause::kInput]) / n) + ", sync " + fmt("%.2f", ms(idle_[IdleCause::kSync]) / n) +
         ", launch " + fmt("%.2f", ms(idle_[IdleCause::kLaunch]) / n) + ", host " +
         fmt("%.2f", ms(idle_[IdleCause::kHost]) / n) + ", other " + fmt("%.2f", ms(idle_[IdleCause::kOther]) / n));
  }
  if (findings_.empty()) {
    line("  findings: none");
  } else {
    line("  findings (goodput tax):");
    for (const auto& [id, sc] : findings_) {
      const double pct = wall_ns_ > 0 ? 100.0 * sc.second / ms(wall_ns_) : 0.0;
      line("    " + id + ": " + std::to_string(sc.first) + " steps, " + fmt("%.1f", sc.second) + " ms (" +
           fmt("%.1f", pct) + "% of step time)");
    }
  }
  int64_t kernel_total = 0;
  for (const auto& [id, t] : kernels_) kernel_total += t.total_ns;
  line("  kern_sum (top 10 by total time): Time(%)  Total(ms)  Instances  Avg(us)  Min(us)  Max(us)  Name");
  for (const auto& [name, t] : top_by_total(kernels_, &names, 10)) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "    %6.1f %10.2f %10llu %8.1f %8.1f %8.1f  ",
                  kernel_total > 0 ? 100.0 * double(t->total_ns) / double(kernel_total) : 0.0, ms(t->total_ns),
                  static_cast<unsigned long long>(t->count), double(t->total_ns) / double(t->count) / 1e3,
                  double(t->min_ns) / 1e3, double(t->max_ns) / 1e3);
    line(buf + shorten(name));
  }
  line("  api_sum (top 10 by total time): Total(ms)  Calls  Avg(us)  Max(us)  Name");
  for (const auto& [name, t] : top_by_total(api_, &names, 10)) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "    %10.2f %8llu %8.1f %8.1f  ", ms(t->total_ns),
                  static_cast<unsigned long long>(t->count), double(t->total_ns) / double(t->count) / 1e3,
                  double(t->max_ns) / 1e3);
    line(buf + name);
  }
  line("  mem_time_sum: Operation  Count  Total(MB)  Total(ms)  GB/s");
  for (const auto& [kind, t] : copies_) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "    %-8s %8llu %10.2f %10.2f %8.2f", kind.c_str(),
                  static_cast<unsigned long long>(t.count), double(t.bytes) / 1e6, ms(t.total_ns),
                  t.total_ns > 0 ? double(t.bytes) / double(t.total_ns) : 0.0);
    line(buf);
  }
  if (!blocking_.empty()) {
    line("  blocking calls: Count  Host(ms)  GPU idle(ms)  Name");
    for (const auto& [name, b] : blocking_) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "    %8llu %9.2f %12.2f  ", static_cast<unsigned long long>(b.count),
                    ms(b.host_ns), ms(b.gpu_idle_ns));
      line(buf + name);
    }
  }
  const LossSummary lost = summarize_losses(losses);
  if (lost.records == 0 && lost.buffers == 0) {
    line("  data loss: none");
  } else {
    line("  data loss: " + std::to_string(lost.records) + " records" +
         (lost.record_kinds.empty() ? "" : " (" + lost.record_kinds + ")") +
         (lost.buffers == 0 ? "" : "; activity buffers: " + lost.buffer_kinds));
  }
  line("  self overhead: analysis thread CPU " + fmt("%.1f", ms(o.analysis_cpu_ns)) + " ms (" +
       fmt("%.3f", o.wall_ns > 0 ? 100.0 * double(o.analysis_cpu_ns) / double(o.wall_ns) : 0.0) +
       "% of wall), CUPTI callbacks " + fmt("%.1f", ms(o.callback_ns)) + " ms, CUPTI overhead records " +
       fmt("%.1f", ms(o.cupti_overhead_ns)) + " ms");
  return out;
}

std::string RunStats::json(const NameTable& names, int rank, std::span<const uint64_t> losses,
                           const SelfOverhead& o) const {
  using json = nlohmann::ordered_json;
  json j;
  j["type"] = "exit_summary";
  j["rank"] = rank;
  j["steps"] = steps_;
  j["judged_steps"] = judged_;
  j["step_ms"] = {{"median", percentile(step_ms_, 0.5)}, {"p90", percentile(step_ms_, 0.9)}};
  j["gpu_busy_pct"] = wall_ns_ > 0 ? 100.0 * double(busy_ns_) / double(wall_ns_) : 0.0;
  json f = json::object();
  for (const auto& [id, sc] : findings_) f[id] = {{"steps", sc.first}, {"cost_ms", sc.second}};
  j["findings"] = f;
  json k = json::array();
  for (const auto& [name, t] : top_by_total(kernels_, &names, 50)) {
    k.push_back({{"name", name}, {"count", t->count}, {"total_ms", ms(t->total_ns)}, {"min_us", double(t->min_ns) / 1e3},
                 {"max_us", double(t->max_ns) / 1e3}});
  }
  j["kern_sum"] = k;
  json a = json::array();
  for (const auto& [name, t] : top_by_total(api_, &names, 50)) {
    a.push_back({{"name", name}, {"count", t->count}, {"total_ms", ms(t->total_ns)}, {"max_us", double(t->max_ns) / 1e3}});
  }
  j["api_sum"] = a;
  json m = json::object();
  for (const auto& [kind, t] : copies_) {
    m[kind] = {{"count", t.count}, {"bytes", t.bytes}, {"total_ms", ms(t.total_ns)},
               {"gb_per_s", t.total_ns > 0 ? double(t.bytes) / double(t.total_ns) : 0.0}};
  }
  j["mem_time_sum"] = m;
  json b = json::object();
  for (const auto& [name, x] : blocking_) b[name] = {{"count", x.count}, {"host_ms", ms(x.host_ns)}, {"gpu_idle_ms", ms(x.gpu_idle_ns)}};
  j["blocking_calls"] = b;
  json l = json::object();
  for (size_t i = 0; i < losses.size(); ++i) l[std::string(to_string(static_cast<LossKind>(i)))] = losses[i];
  j["data_loss"] = l;
  j["self_overhead"] = {{"analysis_cpu_ms", ms(o.analysis_cpu_ns)}, {"callback_ms", ms(o.callback_ns)},
                        {"cupti_overhead_ms", ms(o.cupti_overhead_ns)}, {"wall_ms", ms(o.wall_ns)}};
  return j.dump(2);
}

}  // namespace stepwatch::live

#include "stepwatch/report/jsonl.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

#include <nlohmann/json.hpp>

#include "stepwatch/core/stats.h"

namespace stepwatch {
namespace {

using json = nlohmann::ordered_json;

json number_or_null(double v) { return std::isfinite(v) ? json(round3(v)) : json(nullptr); }

// Rounds parts (ns) to whole µs so that they add up exactly to the rounded total: the JSONL
// breakdown must sum to dur_ms, and per-part rounding alone can drift by several µs.
template <size_t N>
std::array<int64_t, N> apportion_us(const std::array<int64_t, N>& parts_ns, int64_t total_ns) {
  std::array<int64_t, N> us{};
  std::array<int64_t, N> remainder{};
  int64_t sum_us = 0;
  for (size_t i = 0; i < N; ++i) {
    us[i] = parts_ns[i] / 1000;
    remainder[i] = parts_ns[i] % 1000;
    sum_us += us[i];
  }
  const int64_t target_us = (total_ns + 500) / 1000;
  std::array<size_t, N> order;
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return remainder[a] > remainder[b]; });
  for (size_t k = 0; sum_us < target_us && k < N; ++k, ++sum_us) ++us[order[k]];
  return us;
}

json evidence_value(const EvidenceValue& v) {
  return std::visit([](const auto& x) -> json {
    using T = std::decay_t<decltype(x)>;
    if constexpr (std::is_same_v<T, double>) {
      return number_or_null(x);
    } else if constexpr (std::is_same_v<T, std::vector<SiteEvidence>>) {
      json rows = json::array();
      for (const SiteEvidence& r : x) {
        json row;
        row["site"] = r.site;
        if (!r.call.empty()) row["call"] = r.call;
        row["calls"] = r.calls;
        row["blocked_ms"] = number_or_null(r.blocked_ms);
        rows.push_back(std::move(row));
      }
      return rows;
    } else {
      return json(x);
    }
  }, v);
}

}  // namespace

std::string jsonl_meta() {
  json j;
  j["type"] = "meta";
  j["schema"] = kJsonlSchema;
  j["tool"] = "stepwatch";
  j["version"] = STEPWATCH_VERSION;
  return j.dump();
}

std::string jsonl_step(const StepView& v) {
  // compute + exposed comm + copy-only + idle causes partition the window.
  const std::array<int64_t, 8> parts_ns = {v.compute_ns, v.exposed_comm_ns, v.copy_only_ns,
                                           v.idle[IdleCause::kInput], v.idle[IdleCause::kSync],
                                           v.idle[IdleCause::kLaunch], v.idle[IdleCause::kHost],
                                           v.idle[IdleCause::kOther]};
  const auto us = apportion_us(parts_ns, v.duration_ns());
  auto ms = [](int64_t micro) { return double(micro) / 1000.0; };
  json j;
  j["type"] = "step";
  j["rank"] = v.rank;
  j["step"] = v.step;
  j["start_us"] = round3(double(v.start_ns) / 1000.0);
  j["dur_ms"] = ms((v.duration_ns() + 500) / 1000);
  j["gpu_busy_pct"] = round3(100.0 * v.duty_cycle());
  j["compute_ms"] = ms(us[0]);
  j["comm_ms"] = ms3_of(v.comm_ns);
  j["exposed_comm_ms"] = ms(us[1]);
  j["copy_ms"] = ms3_of(v.copy_ns);
  j["copy_only_ms"] = ms(us[2]);
  j["idle_ms"] = {{"input", ms(us[3])}, {"sync", ms(us[4])}, {"launch", ms(us[5])},
                  {"host", ms(us[6])},  {"other", ms(us[7])}};
  j["blocked_idle_ms"] = ms3_of(v.blocked_idle_ns);
  j["kernels"] = v.kernels;
  j["syncs"] = v.syncs;
  return j.dump();
}

std::string jsonl_finding(const Finding& f) {
  json j;
  j["type"] = "finding";
  j["rank"] = f.rank;
  j["step"] = f.step;
  j["detector"] = f.detector;
  j["severity"] = std::string(to_string(f.severity));
  j["cost_ms"] = round3(f.cost_ms);
  j["cost_pct"] = round3(f.cost_pct);
  j["message"] = f.message;
  json ev = json::object();
  for (const auto& [key, value] : f.evidence) ev[key] = evidence_value(value);
  j["evidence"] = std::move(ev);
  return j.dump();
}

json summary_json(const RunSummary& s) {
  json j;
  j["type"] = "summary";
  j["rank"] = s.rank;
  j["steps"] = s.steps;
  j["step_ms"] = {{"mean", round3(s.step_ms.mean_ms)},
                  {"median", round3(s.step_ms.median_ms)},
                  {"p90", round3(s.step_ms.p90_ms)},
                  {"cv", round3(s.step_ms.cv)}};
  j["gpu_busy_pct"] = round3(s.gpu_busy_pct);
  j["comm_comp_overlap_pct"] = number_or_null(s.comm_comp_overlap_pct);
  json findings = json::object();
  for (const auto& [id, total] : s.findings) {
    json t = {{"steps", total.steps}, {"cost_ms", round3(total.cost_ms)}};
    if (!total.refines.empty()) t["refines"] = total.refines;
    if (total.tax_share == TaxShare::kOverlapping) t["overlaps"] = true;
    findings[id] = std::move(t);
  }
  j["findings"] = std::move(findings);
  j["judged_steps"] = s.judged_steps;
  j["warmup_steps"] = s.warmup_steps;
  j["untraced_steps"] = s.untraced_steps;
  j["incomplete_steps"] = s.incomplete_steps;
  j["skipped_steps"] = s.skipped_steps;
  json idle = json::object();
  for (IdleCause c : kIdleCauses) idle[std::string(to_string(c))] = round3(s.idle_ms[static_cast<size_t>(c)]);
  j["per_step_ms"] = {{"compute", round3(s.compute_ms)},
                      {"exposed_comm", round3(s.exposed_comm_ms)},
                      {"copy_only", round3(s.copy_only_ms)},
                      {"idle", std::move(idle)}};
  json records = json::object(), buffers = json::object();
  for (const auto& [reason, n] : s.data_loss.records) records[reason] = n;
  for (const auto& [reason, n] : s.data_loss.buffers) buffers[reason] = n;
  j["data_loss"] = {{"records", std::move(records)}, {"buffers", std::move(buffers)}};
  j["tax_ms"] = round3(s.tax_ms);
  j["tax_pct"] = round3(s.tax_pct);
  const TimeAccounting& t = s.time;
  j["time_ms"] = {{"trace", round3(t.trace_ms)},
                  {"before_first_step", round3(t.before_first_step_ms)},
                  {"in_steps", round3(t.in_steps_ms)},
                  {"between_steps", round3(t.between_steps_ms)},
                  {"after_last_step", round3(t.after_last_step_ms)}};
  j["trace_gpu_busy_pct"] = round3(t.gpu_busy_pct);
  return j;
}

std::string jsonl_summary(const RunSummary& s) { return summary_json(s).dump(); }

void write_jsonl(const RankResult& r, std::ostream& out) {
  for (const StepView& v : r.steps) out << jsonl_step(v) << '\n';
  for (const Finding& f : r.findings) out << jsonl_finding(f) << '\n';
  out << jsonl_summary(r.summary) << '\n';
}

}  // namespace stepwatch

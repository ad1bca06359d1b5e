#include "live/outputs/run_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "stepwatch/core/stats.h"
#include "stepwatch/report/jsonl.h"

namespace stepwatch::live {
namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}
double ms(int64_t ns) { return ms_of(ns); }

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

void RunStats::add_step(const StepView& v, StepStatus status) {
  if (!has_breakdown(status)) return;
  for (const BlockingCallStat& b : v.blocking) {
    Blocking& agg = blocking_[b.name];
    agg.count += static_cast<uint64_t>(b.count);
    agg.host_ns += b.host_ns;
    agg.gpu_idle_ns += b.gpu_idle_ns;
  }
  for (const CallSiteStat& c : v.blocking_sites) {
    Blocking& agg = sites_[{c.where, c.call}];
    agg.count += static_cast<uint64_t>(c.calls);
    agg.host_ns += c.host_ns;
    agg.gpu_idle_ns += c.gpu_idle_ns;
  }
}

namespace {

// The run's sites by GPU idle, most first.
template <typename Map>
std::vector<typename Map::const_iterator> top_sites(const Map& sites, size_t n) {
  std::vector<typename Map::const_iterator> rows;
  for (auto it = sites.begin(); it != sites.end(); ++it) rows.push_back(it);
  std::sort(rows.begin(), rows.end(), [](auto a, auto b) { return a->second.gpu_idle_ns > b->second.gpu_idle_ns; });
  if (rows.size() > n) rows.resize(n);
  return rows;
}

}  // namespace

std::string RunStats::text(const NameTable& names, const RunSummary& s, const SelfOverhead& o) const {
  std::string out;
  auto line = [&](const std::string& l) { out += "[stepwatch][rank " + std::to_string(s.rank) + "] " + l + "\n"; };
  line("exit summary: " + std::to_string(s.steps) + " steps analyzed, " + std::to_string(s.judged_steps) + " judged (" +
       std::to_string(s.warmup_steps) + " warm-up, " + std::to_string(s.untraced_steps) + " without GPU tracing, " +
       std::to_string(s.incomplete_steps) + " incomplete: GPU records missing)" +
       (s.skipped_steps == 0 ? std::string()
                             : "; " + std::to_string(s.skipped_steps) +
                                   " more steps not judged: the exit time bound was reached first"));
  if (s.judged_steps + s.warmup_steps > 0) {
    line("  step time: mean " + fmt("%.2f", s.step_ms.mean_ms) + " ms, median " + fmt("%.2f", s.step_ms.median_ms) +
         " ms, p90 " + fmt("%.2f", s.step_ms.p90_ms) + " ms, CV " + fmt("%.2f", s.step_ms.cv) + "; GPU busy " +
         fmt("%.1f", s.gpu_busy_pct) + "%");
    auto idle = [&](IdleCause c) { return fmt("%.2f", s.idle_ms[static_cast<size_t>(c)]); };
    line("  per step: compute " + fmt("%.2f", s.compute_ms) + " ms, exposed comm " + fmt("%.2f", s.exposed_comm_ms) +
         ", copy-only " + fmt("%.2f", s.copy_only_ms) + ", idle: input " + idle(IdleCause::kInput) + ", sync " +
         idle(IdleCause::kSync) + ", launch " + idle(IdleCause::kLaunch) + ", host " + idle(IdleCause::kHost) +
         ", other " + idle(IdleCause::kOther));
  }
  if (s.findings.empty()) {
    line("  findings: none");
  } else {
    // The tax is against the time of the steps with a breakdown.
    const double wall_ms = s.step_ms.mean_ms * double(s.judged_steps + s.warmup_steps);
    line("  findings (goodput tax):");
    auto row = [&](const std::string& id, const DetectorTotal& t, const std::string& indent) {
      const double pct = wall_ms > 0 ? 100.0 * t.cost_ms / wall_ms : 0.0;
      const std::string note = t.tax_share == TaxShare::kRefinement    ? ", inside " + t.refines + "'s"
                               : t.tax_share == TaxShare::kOverlapping ? ", overlaps the others"
                                                                       : "";
      line(indent + id + ": " + std::to_string(t.steps) + " steps, " + fmt("%.1f", t.cost_ms) + " ms (" +
           fmt("%.1f", pct) + "% of step time" + note + ")");
    };
    // Refinements under their umbrella: their costs lie inside it and are never added.
    for (const auto& [id, t] : s.findings) {
      if (t.tax_share == TaxShare::kRefinement && s.findings.count(t.refines) != 0) continue;
      row(id, t, "    ");
      for (const auto& [sub_id, sub] : s.findings) {
        if (sub.tax_share == TaxShare::kRefinement && sub.refines == id) row(sub_id, sub, "      ");
      }
    }
    line("    total (each idle interval once): " + fmt("%.1f", s.tax_ms) + " ms (" + fmt("%.1f", s.tax_pct) +
         "% of the judged steps)");
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
  if (kernels_.empty() && copies_.empty() && s.steps > s.untraced_steps) {
    // Traced but idle — told apart from "not traced" (the steps line) and from "never loaded"
    // (stepwatch run's last line).
    line("  no GPU work was seen: GPU tracing was on, but no kernel, copy or memset ran (the job did not use the "
         "GPU, or CUPTI delivered nothing: see data loss)");
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
  if (!sites_.empty()) {
    line("  blocking call sites (top 5 by GPU idle): Calls  Host(ms)  GPU idle(ms)  Site");
    for (auto it : top_sites(sites_, 5)) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "    %8llu %9.2f %12.2f  ", static_cast<unsigned long long>(it->second.count),
                    ms(it->second.host_ns), ms(it->second.gpu_idle_ns));
      line(buf + (it->first.second.empty() ? "" : "`" + it->first.second + "` ") + it->first.first);
    }
  }
  if (s.data_loss.empty()) {
    line("  data loss: none");
  } else {
    line("  data loss: " + std::to_string(s.data_loss.total_records()) + " records" +
         (s.data_loss.records.empty() ? "" : " (" + s.data_loss.records_text() + ")") +
         (s.data_loss.buffers.empty()
              ? ""
              : "; activity buffers: " + s.data_loss.buffers_text() + " (the number of records in them is unknown)"));
  }
  line("  self overhead: analysis thread CPU " + fmt("%.1f", ms(o.analysis_cpu_ns)) + " ms (" +
       fmt("%.3f", o.wall_ns > 0 ? 100.0 * double(o.analysis_cpu_ns) / double(o.wall_ns) : 0.0) +
       "% of wall), CUPTI callbacks " + fmt("%.1f", ms(o.callback_ns)) + " ms, CUPTI overhead records " +
       fmt("%.1f", ms(o.cupti_overhead_ns)) + " ms" +
       (o.call_sites_read > 0 ? ", call sites " + std::to_string(o.call_sites_read) + " read (" +
                                    fmt("%.1f", double(o.call_site_read_ns) / double(o.call_sites_read) / 1e3) + " us each)"
                              : std::string()));
  return out;
}

nlohmann::ordered_json RunStats::json(const NameTable& names, const RunSummary& s, const SelfOverhead& o) const {
  using json = nlohmann::ordered_json;
  json j = summary_json(s);
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
  json sites = json::array();
  for (auto it : top_sites(sites_, 20)) {
    json row = {{"site", it->first.first}};
    if (!it->first.second.empty()) row["call"] = it->first.second;
    row["calls"] = it->second.count;
    row["host_ms"] = ms(it->second.host_ns);
    row["blocked_ms"] = ms(it->second.gpu_idle_ns);
    sites.push_back(std::move(row));
  }
  j["blocking_sites"] = sites;
  j["self_overhead"] = {{"analysis_cpu_ms", ms(o.analysis_cpu_ns)}, {"callback_ms", ms(o.callback_ns)},
                        {"cupti_overhead_ms", ms(o.cupti_overhead_ns)}, {"wall_ms", ms(o.wall_ns)}};
  return j;
}

}  // namespace stepwatch::live

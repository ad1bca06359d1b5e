#include "stepwatch/report/html.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <tuple>

#include "stepwatch/core/stats.h"
#include "stepwatch/report/finding_groups.h"

namespace stepwatch {
namespace {

// ---- text and numbers --------------------------------------------------------------------

std::string esc(std::string_view s) {
  std::string r;
  r.reserve(s.size() + 8);
  for (char c : s) {
    switch (c) {
      case '&': r += "&amp;"; break;
      case '<': r += "&lt;"; break;
      case '>': r += "&gt;"; break;
      case '"': r += "&quot;"; break;
      case '\'': r += "&#39;"; break;
      default: r += c;
    }
  }
  return r;
}

// Every number on the page goes through here: non-finite values become 0 (or the placeholder for
// text), so neither the SVG geometry nor the tables can show NaN or inf.
double finite(double v) { return std::isfinite(v) ? v : 0.0; }

std::string num(double v, int decimals = 1) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, finite(v));
  return buf;
}

// Milliseconds with precision that suits the magnitude.
std::string ms_text(double ms) {
  if (!std::isfinite(ms)) return "–";
  if (ms == 0) return "0";
  const double a = std::fabs(ms);
  return num(ms, a >= 1000 ? 0 : a >= 10 ? 1 : a >= 0.1 ? 2 : 3);
}

std::string pct_text(double pct) { return std::isfinite(pct) ? num(pct, 1) + "%" : "–"; }

std::string bytes_text(uint64_t b) {
  const double v = double(b);
  if (v >= 1e9) return num(v / 1e9, 2) + " GB";
  if (v >= 1e6) return num(v / 1e6, 2) + " MB";
  if (v >= 1e3) return num(v / 1e3, 1) + " kB";
  return std::to_string(b) + " B";
}


std::string shorten(std::string_view s, size_t max_chars) {
  if (s.size() <= max_chars) return std::string(s);
  return std::string(s.substr(0, max_chars)) + "…";
}

// ---- the breakdown -----------------------------------------------------------------------

// compute + exposed comm + copy-only + the idle causes partition a step's window (step_view.h).
struct Part {
  const char* label;
  const char* color;
};
constexpr std::array<Part, 8> kParts = {{{"compute", "#3a923a"},
                                         {"exposed comm", "#2e6fbf"},
                                         {"copy-only", "#9467bd"},
                                         {"idle: input", "#d62728"},
                                         {"idle: sync", "#ff7f0e"},
                                         {"idle: launch", "#e7ba52"},
                                         {"idle: host", "#8c564b"},
                                         {"idle: other", "#a0a0a0"}}};
using Parts = std::array<double, 8>;  // ms

Parts parts_ms(const StepView& v) {
  return {ms_of(v.compute_ns),           ms_of(v.exposed_comm_ns),      ms_of(v.copy_only_ns),
          ms_of(v.idle[IdleCause::kInput]), ms_of(v.idle[IdleCause::kSync]), ms_of(v.idle[IdleCause::kLaunch]),
          ms_of(v.idle[IdleCause::kHost]),  ms_of(v.idle[IdleCause::kOther])};
}

double sum(const Parts& p) {
  double s = 0;
  for (double x : p) s += finite(x);
  return s;
}

// Consecutive steps folded into one bar / one point: the mean breakdown and the step-time range.
struct Bucket {
  int64_t first_step = 0, last_step = 0;
  size_t count = 0;
  Parts mean{};
  double mean_ms = 0, min_ms = 0, max_ms = 0;
};

std::vector<Bucket> bucket_steps(const std::vector<StepView>& steps, size_t max_buckets) {
  std::vector<Bucket> out;
  if (steps.empty()) return out;
  const size_t per = (steps.size() + std::max<size_t>(max_buckets, 1) - 1) / std::max<size_t>(max_buckets, 1);
  for (size_t i = 0; i < steps.size(); i += per) {
    Bucket b;
    const size_t end = std::min(steps.size(), i + per);
    b.first_step = steps[i].step;
    b.last_step = steps[end - 1].step;
    b.count = end - i;
    b.min_ms = ms_of(steps[i].duration_ns());
    b.max_ms = b.min_ms;
    for (size_t j = i; j < end; ++j) {
      const Parts p = parts_ms(steps[j]);
      for (size_t k = 0; k < p.size(); ++k) b.mean[k] += p[k] / double(b.count);
      const double d = ms_of(steps[j].duration_ns());
      b.mean_ms += d / double(b.count);
      b.min_ms = std::min(b.min_ms, d);
      b.max_ms = std::max(b.max_ms, d);
    }
    out.push_back(b);
  }
  return out;
}

std::string step_label(const Bucket& b) {
  if (b.count == 1) return "step " + std::to_string(b.first_step);
  return "steps " + std::to_string(b.first_step) + "–" + std::to_string(b.last_step) + " (mean of " +
         std::to_string(b.count) + ")";
}

// A round axis maximum and tick step for values up to `max_value`.
std::pair<double, double> nice_axis(double max_value) {
  if (!(max_value > 0) || !std::isfinite(max_value)) return {1.0, 0.25};
  const double raw = max_value / 4.0;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (raw <= m * mag) { step = m * mag; break; }
  }
  return {step * std::ceil(max_value / step), step};
}

constexpr double kChartW = 1240, kPlotL = 60, kPlotR = 12, kPlotT = 10, kPlotB = 30;

void y_axis(std::ostream& o, double height, double axis_max, double tick, const char* unit) {
  const double plot_h = height - kPlotT - kPlotB;
  for (double t = 0; t <= axis_max + tick / 2; t += tick) {
    const double y = kPlotT + plot_h * (1.0 - t / axis_max);
    o << "<line class=\"grid\" x1=\"" << num(kPlotL) << "\" x2=\"" << num(kChartW - kPlotR) << "\" y1=\"" << num(y)
      << "\" y2=\"" << num(y) << "\"/><text class=\"tick\" x=\"" << num(kPlotL - 6) << "\" y=\"" << num(y + 4)
      << "\" text-anchor=\"end\">" << num(t, tick >= 1 ? 0 : tick >= 0.1 ? 1 : 3) << "</text>";
  }
  o << "<text class=\"tick\" x=\"12\" y=\"" << num(kPlotT + plot_h / 2) << "\" transform=\"rotate(-90 12 "
    << num(kPlotT + plot_h / 2) << ")\" text-anchor=\"middle\">" << unit << "</text>";
}

void x_labels(std::ostream& o, const std::vector<Bucket>& buckets, double height) {
  const double plot_w = kChartW - kPlotL - kPlotR;
  const size_t n = buckets.size();
  const size_t every = std::max<size_t>(1, (n + 9) / 10);
  for (size_t i = 0; i < n; i += every) {
    const double x = kPlotL + plot_w * (double(i) + 0.5) / double(n);
    o << "<text class=\"tick\" x=\"" << num(x) << "\" y=\"" << num(height - 10) << "\" text-anchor=\"middle\">"
      << buckets[i].first_step << "</text>";
  }
}

void legend(std::ostream& o) {
  o << "<div class=\"legend\">";
  for (const Part& p : kParts) {
    o << "<span><i style=\"background:" << p.color << "\"></i>" << p.label << "</span>";
  }
  o << "</div>\n";
}

// The headline: the whole run's time as one 100% bar, with each part's share.
void run_breakdown(std::ostream& o, const std::vector<StepView>& steps) {
  Parts total{};
  for (const StepView& v : steps) {
    const Parts p = parts_ms(v);
    for (size_t k = 0; k < p.size(); ++k) total[k] += p[k];
  }
  const double all = sum(total);
  o << "<div class=\"hbar\">";
  for (size_t k = 0; k < kParts.size(); ++k) {
    const double share = all > 0 ? 100.0 * total[k] / all : 0.0;
    if (share <= 0) continue;
    o << "<div style=\"width:" << num(share, 3) << "%;background:" << kParts[k].color << "\" title=\""
      << kParts[k].label << ": " << ms_text(total[k]) << " ms (" << pct_text(share) << ")\">";
    // A label only where it fits: about 1 % of the bar per character (12 px bold text, a bar of
    // 950 px or more; narrower pages clip it, the tooltip and the table below still say it).
    const std::string label = std::string(kParts[k].label) + " " + num(share, 0) + "%";
    if (share >= 0.8 * double(label.size()) + 1.0) o << "<span>" << label << "</span>";
    o << "</div>";
  }
  o << "</div>\n";
  const double per_step = steps.empty() ? 0.0 : 1.0 / double(steps.size());
  o << "<table class=\"parts\"><tr><th></th><th>part</th><th>total ms</th><th>ms / step</th><th>share</th></tr>\n";
  for (size_t k = 0; k < kParts.size(); ++k) {
    const double share = all > 0 ? 100.0 * total[k] / all : 0.0;
    o << "<tr" << (share >= 10 && k > 0 ? " class=\"hot\"" : "") << "><td><i class=\"sw\" style=\"background:"
      << kParts[k].color << "\"></i></td><td>" << kParts[k].label << "</td><td>" << ms_text(total[k]) << "</td><td>"
      << ms_text(total[k] * per_step) << "</td><td>" << pct_text(share) << "</td></tr>\n";
  }
  o << "</table>\n";
}

void step_bars(std::ostream& o, const std::vector<Bucket>& buckets) {
  const double height = 280, plot_h = height - kPlotT - kPlotB, plot_w = kChartW - kPlotL - kPlotR;
  double max_ms = 0;
  for (const Bucket& b : buckets) max_ms = std::max(max_ms, sum(b.mean));
  const auto [axis_max, tick] = nice_axis(max_ms);
  const double slot = plot_w / double(buckets.size());
  const double bar_w = std::min(60.0, slot > 4 ? slot - 1 : slot);
  o << "<svg class=\"chart\" viewBox=\"0 0 " << num(kChartW, 0) << " " << num(height, 0) << "\" role=\"img\">";
  y_axis(o, height, axis_max, tick, "ms");
  for (size_t i = 0; i < buckets.size(); ++i) {
    const Bucket& b = buckets[i];
    const double x = kPlotL + slot * double(i) + (slot - bar_w) / 2;
    double y = kPlotT + plot_h;
    const double dur = sum(b.mean);
    o << "<g class=\"bar\"><title>" << step_label(b) << ": " << ms_text(dur) << " ms";
    for (size_t k = 0; k < kParts.size(); ++k) {
      if (b.mean[k] > 0) {
        o << "\n" << kParts[k].label << " " << ms_text(b.mean[k]) << " ms (" << pct_text(100.0 * b.mean[k] / dur)
          << ")";
      }
    }
    o << "</title>";
    for (size_t k = 0; k < kParts.size(); ++k) {
      const double h = plot_h * finite(b.mean[k]) / axis_max;
      if (h <= 0) continue;
      y -= h;
      o << "<rect x=\"" << num(x, 2) << "\" y=\"" << num(y, 2) << "\" width=\"" << num(bar_w, 2) << "\" height=\""
        << num(h, 2) << "\" fill=\"" << kParts[k].color << "\"/>";
    }
    o << "</g>\n";
  }
  x_labels(o, buckets, height);
  o << "</svg>\n";
}

void step_time_chart(std::ostream& o, const std::vector<Bucket>& buckets, double median_ms) {
  const double height = 220, plot_h = height - kPlotT - kPlotB, plot_w = kChartW - kPlotL - kPlotR;
  double max_ms = 0;
  for (const Bucket& b : buckets) max_ms = std::max(max_ms, b.max_ms);
  // Not a structured binding: clang < 16 cannot capture those in the lambdas below.
  const std::pair<double, double> axis = nice_axis(max_ms);
  const double axis_max = axis.first, tick = axis.second;
  auto x_of = [&](size_t i) { return kPlotL + plot_w * (double(i) + 0.5) / double(buckets.size()); };
  auto y_of = [&](double v) { return kPlotT + plot_h * (1.0 - finite(v) / axis_max); };
  o << "<svg class=\"chart\" viewBox=\"0 0 " << num(kChartW, 0) << " " << num(height, 0) << "\" role=\"img\">";
  y_axis(o, height, axis_max, tick, "step ms");
  const bool aggregated = std::any_of(buckets.begin(), buckets.end(), [](const Bucket& b) { return b.count > 1; });
  if (aggregated) {  // the min..max band shows the spikes the mean hides
    o << "<polygon class=\"band\" points=\"";
    for (size_t i = 0; i < buckets.size(); ++i) o << num(x_of(i), 2) << "," << num(y_of(buckets[i].max_ms), 2) << " ";
    for (size_t i = buckets.size(); i-- > 0;) o << num(x_of(i), 2) << "," << num(y_of(buckets[i].min_ms), 2) << " ";
    o << "\"/>";
  }
  if (std::isfinite(median_ms) && median_ms > 0) {
    o << "<line class=\"median\" x1=\"" << num(kPlotL) << "\" x2=\"" << num(kChartW - kPlotR) << "\" y1=\""
      << num(y_of(median_ms), 2) << "\" y2=\"" << num(y_of(median_ms), 2) << "\"><title>median " << ms_text(median_ms)
      << " ms</title></line>";
  }
  o << "<polyline class=\"line\" points=\"";
  for (size_t i = 0; i < buckets.size(); ++i) o << num(x_of(i), 2) << "," << num(y_of(buckets[i].mean_ms), 2) << " ";
  o << "\"/>\n";
  if (buckets.size() <= 120) {
    for (size_t i = 0; i < buckets.size(); ++i) {
      o << "<circle class=\"pt\" cx=\"" << num(x_of(i), 2) << "\" cy=\"" << num(y_of(buckets[i].mean_ms), 2)
        << "\" r=\"3\"><title>" << step_label(buckets[i]) << ": " << ms_text(buckets[i].mean_ms)
        << " ms</title></circle>";
    }
  }
  x_labels(o, buckets, height);
  o << "</svg>\n";
}

// ---- tables ------------------------------------------------------------------------------

std::string_view severity_class(Severity s) {
  switch (s) {
    case Severity::kCritical: return "crit";
    case Severity::kWarning: return "warn";
    case Severity::kInfo: break;
  }
  return "info";
}

// Detector messages read "<signature>. Fix: <direction>".
std::pair<std::string_view, std::string_view> split_fix(std::string_view message) {
  const size_t at = message.find("Fix: ");
  if (at == std::string_view::npos) return {message, {}};
  std::string_view signature = message.substr(0, at);
  while (!signature.empty() && signature.back() == ' ') signature.remove_suffix(1);
  return {signature, message.substr(at + 5)};
}

void findings_section(std::ostream& o, const RankResult& r, const HtmlReportOptions& opt) {
  o << "<h3>Findings</h3>\n";
  if (r.findings.empty()) {
    o << "<p class=\"ok\">No findings: no detector judged a step faulty.</p>\n";
    return;
  }
  // Per detector, costliest first: the goodput tax of each fault over the run.
  std::vector<std::pair<std::string, DetectorTotal>> totals(r.summary.findings.begin(), r.summary.findings.end());
  std::sort(totals.begin(), totals.end(), [](const auto& a, const auto& b) { return a.second.cost_ms > b.second.cost_ms; });
  const double run_ms = r.summary.step_ms.mean_ms * r.summary.steps;
  std::map<std::string, std::string> fix_of;
  for (const Finding& f : r.findings) {
    if (!fix_of.count(f.detector)) fix_of[f.detector] = std::string(split_fix(f.message).second);
  }
  o << "<table class=\"findings-summary\"><tr><th>detector</th><th>faulty steps</th><th>goodput tax ms</th>"
       "<th>of step time</th><th>fix direction</th></tr>\n";
  for (const auto& [id, t] : totals) {
    o << "<tr><td class=\"det\">" << esc(id) << "</td><td>" << t.steps << "</td><td>" << ms_text(t.cost_ms)
      << "</td><td>" << (run_ms > 0 ? pct_text(100.0 * t.cost_ms / run_ms) : "–") << "</td><td class=\"fix\">"
      << esc(fix_of[id]) << "</td></tr>\n";
  }
  o << "</table>\n";

  // A detector firing on a run of steps is one row (finding_groups.h), costliest first.
  std::vector<FindingGroup> rows = group_findings(r);
  std::stable_sort(rows.begin(), rows.end(),
                   [](const FindingGroup& a, const FindingGroup& b) { return finite(a.cost_ms) > finite(b.cost_ms); });
  const size_t shown = std::min(rows.size(), opt.max_finding_rows);
  o << "<p class=\"note\">" << r.findings.size() << " finding" << (r.findings.size() == 1 ? "" : "s");
  if (rows.size() < r.findings.size()) o << " in " << rows.size() << " runs of steps";
  if (shown < rows.size()) o << "; the " << shown << " costliest are listed";
  o << ".</p>\n<table id=\"findings-rank-" << r.rank << "\" class=\"findings\"><tr><th>steps</th><th>detector</th>"
       "<th>severity</th><th>cost ms</th><th>of step</th><th>what happened (costliest step)</th><th>fix direction</th>"
       "</tr>\n";
  for (size_t i = 0; i < shown; ++i) {
    const FindingGroup& g = rows[i];
    const Finding& f = *g.costliest;
    const auto [signature, fix] = split_fix(f.message);
    o << "<tr class=\"" << severity_class(f.severity) << "\"><td>" << g.first_step;
    if (g.fired > 1) o << "–" << g.last_step << " (" << g.fired << " of " << g.span_steps << ")";
    o << "</td><td class=\"det\">" << esc(f.detector) << "</td><td><span class=\"sev\">" << to_string(f.severity)
      << "</span></td><td>" << ms_text(g.cost_ms) << "</td><td>" << pct_text(g.fired > 1 ? g.max_pct : f.cost_pct)
      << "</td><td>" << esc(signature) << "</td><td class=\"fix\">" << esc(fix) << "</td></tr>\n";
  }
  o << "</table>\n";
}

void top_kernels_section(std::ostream& o, const RankResult& r, const HtmlReportOptions& opt) {
  struct Agg { int count = 0; int64_t total_ns = 0; int overlapped = 0; };
  std::map<std::string, Agg> by_name;
  int64_t compute_ns = 0;
  for (const StepView& v : r.steps) {
    compute_ns += v.compute_ns + v.comm_ns;
    for (const KernelStat& k : v.top_kernels) {
      Agg& a = by_name[k.name];
      a.count += k.count;
      a.total_ns += k.total_ns;
      a.overlapped += k.overlapped_count;
    }
  }
  o << "<h3>Top kernels</h3>\n";
  if (by_name.empty()) {
    o << "<p class=\"note\">No kernels in the steps.</p>\n";
    return;
  }
  std::vector<std::pair<std::string, Agg>> rows(by_name.begin(), by_name.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.total_ns > b.second.total_ns; });
  o << "<p class=\"note\">From each step's " << StepView::kTopKernels << " heaviest kernel names; share of the "
       "GPU kernel time (compute + NCCL).</p>\n<table class=\"kernels\"><tr><th>kernel</th><th>instances</th>"
       "<th>total ms</th><th>mean µs</th><th>share</th><th>overlapped NCCL</th></tr>\n";
  for (size_t i = 0; i < std::min(rows.size(), opt.max_table_rows); ++i) {
    const auto& [name, a] = rows[i];
    o << "<tr><td class=\"name\" title=\"" << esc(name) << "\">" << esc(shorten(name, 140)) << "</td><td>" << a.count
      << "</td><td>" << ms_text(ms_of(a.total_ns)) << "</td><td>"
      << num(a.count > 0 ? double(a.total_ns) / 1e3 / a.count : 0.0, 1) << "</td><td>"
      << (compute_ns > 0 ? pct_text(100.0 * double(a.total_ns) / double(compute_ns)) : "–") << "</td><td>"
      << a.overlapped << "</td></tr>\n";
  }
  o << "</table>\n";
}

// nsys `cuda_api_sync` / `cuda_memcpy_sync` style: the calls the host blocked in.
// Where the blocking calls were made (call_sites.h): the run's sites, most GPU idle first.
void call_sites_table(std::ostream& o, const RankResult& r, const HtmlReportOptions& opt) {
  struct Agg {
    int calls = 0;
    int64_t host_ns = 0, gpu_idle_ns = 0;
    std::string blocking_call;
  };
  std::map<std::pair<std::string, std::string>, Agg> by_site;
  for (const StepView& v : r.steps) {
    for (const CallSiteStat& c : v.blocking_sites) {
      Agg& a = by_site[{c.where, c.call}];
      a.calls += c.calls;
      a.host_ns += c.host_ns;
      a.gpu_idle_ns += c.gpu_idle_ns;
      if (a.blocking_call.empty()) a.blocking_call = c.blocking_call;
    }
  }
  if (by_site.empty()) return;
  std::vector<std::pair<std::pair<std::string, std::string>, Agg>> rows(by_site.begin(), by_site.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.gpu_idle_ns > b.second.gpu_idle_ns; });
  o << "<h3>Where the blocking calls were made</h3>\n<p class=\"note\">The innermost frame of the program's own "
       "code around each blocking call, and what it called; GPU idle: inside the calls and the drain after "
       "them.</p>\n<table id=\"sites-rank-" << r.rank << "\" class=\"blocking\"><tr><th>site</th><th>call</th>"
       "<th>blocking call</th><th>calls</th><th>host ms</th><th>GPU idle ms</th></tr>\n";
  for (size_t i = 0; i < std::min(rows.size(), opt.max_table_rows); ++i) {
    const auto& [key, a] = rows[i];
    o << "<tr><td class=\"name\">" << esc(key.first) << "</td><td>" << esc(key.second) << "</td><td>"
      << esc(a.blocking_call) << "</td><td>" << a.calls << "</td><td>" << ms_text(ms_of(a.host_ns)) << "</td><td"
      << (a.gpu_idle_ns > 0 ? " class=\"hot\"" : "") << ">" << ms_text(ms_of(a.gpu_idle_ns)) << "</td></tr>\n";
  }
  o << "</table>\n";
}

void blocking_section(std::ostream& o, const RankResult& r, const HtmlReportOptions& opt) {
  struct Agg {
    ApiClass api_class = ApiClass::kOther;
    CopyKind copy_kind = CopyKind::kUnknown;
    MemoryKind host_memory = MemoryKind::kUnknown;
    int count = 0;
    int64_t host_ns = 0, gpu_idle_ns = 0;
    uint64_t bytes = 0;
  };
  std::map<std::string, Agg> by_name;
  for (const StepView& v : r.steps) {
    for (const BlockingCallStat& b : v.blocking) {
      Agg& a = by_name[b.name];
      a.api_class = b.api_class;
      if (b.copy_kind != CopyKind::kUnknown) a.copy_kind = b.copy_kind;
      if (b.host_memory != MemoryKind::kUnknown) a.host_memory = b.host_memory;
      a.count += b.count;
      a.host_ns += b.host_ns;
      a.gpu_idle_ns += b.gpu_idle_ns;
      a.bytes += b.bytes;
    }
  }
  o << "<h3>Blocking calls</h3>\n";
  if (by_name.empty()) {
    o << "<p class=\"note\">No blocking calls (synchronize, synchronous copies) in the steps.</p>\n";
    return;
  }
  std::vector<std::pair<std::string, Agg>> rows(by_name.begin(), by_name.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return std::tie(a.second.gpu_idle_ns, a.second.host_ns) > std::tie(b.second.gpu_idle_ns, b.second.host_ns);
  });
  o << "<p class=\"note\">Host time inside each call, and the part of it with the GPU idle (the drain the call "
       "caused or waited out).</p>\n<table class=\"blocking\"><tr><th>call</th><th>class</th><th>calls</th>"
       "<th>host ms</th><th>mean µs</th><th>GPU idle ms</th><th>copy</th><th>bytes</th></tr>\n";
  for (size_t i = 0; i < std::min(rows.size(), opt.max_table_rows); ++i) {
    const auto& [name, a] = rows[i];
    std::string copy;
    if (a.copy_kind != CopyKind::kUnknown) {
      copy = std::string(to_string(a.copy_kind));
      if (a.host_memory != MemoryKind::kUnknown) copy += ", " + std::string(to_string(a.host_memory));
    }
    o << "<tr><td class=\"name\">" << esc(name) << "</td><td>" << esc(to_string(a.api_class)) << "</td><td>"
      << a.count << "</td><td>" << ms_text(ms_of(a.host_ns)) << "</td><td>"
      << num(a.count > 0 ? double(a.host_ns) / 1e3 / a.count : 0.0, 1) << "</td><td"
      << (a.gpu_idle_ns > 0 ? " class=\"hot\"" : "") << ">" << ms_text(ms_of(a.gpu_idle_ns)) << "</td><td>" << esc(copy)
      << "</td><td>" << (a.bytes ? bytes_text(a.bytes) : "") << "</td></tr>\n";
  }
  o << "</table>\n";
  call_sites_table(o, r, opt);
}

// nsys `cuda_gpu_mem_size_sum` / `cuda_gpu_mem_time_sum` style, with the achieved bandwidth.
void copies_section(std::ostream& o, const RankResult& r) {
  struct Agg { int count = 0, async = 0; uint64_t bytes = 0; int64_t gpu_ns = 0, exposed_ns = 0; };
  std::map<std::tuple<CopyKind, MemoryKind, MemoryKind>, Agg> by_direction;
  for (const StepView& v : r.steps) {
    for (const CopyRecord& c : v.copies) {
      Agg& a = by_direction[{c.kind, c.src, c.dst}];
      ++a.count;
      a.async += c.async ? 1 : 0;
      a.bytes += c.bytes;
      a.gpu_ns += c.duration_ns;
      a.exposed_ns += c.exposed_ns;
    }
  }
  o << "<h3>Copies by direction</h3>\n";
  if (by_direction.empty()) {
    o << "<p class=\"note\">No GPU copies in the steps.</p>\n";
    return;
  }
  o << "<p class=\"note\">From each step's " << StepView::kMaxCopies << " largest copies. Exposed: copy time with "
       "no compute or NCCL kernel running.</p>\n<table class=\"copies\"><tr><th>direction</th><th>memory</th>"
       "<th>copies</th><th>async</th><th>bytes</th><th>GPU ms</th><th>GB/s</th><th>exposed ms</th></tr>\n";
  for (const auto& [key, a] : by_direction) {
    const auto& [kind, src, dst] = key;
    o << "<tr><td>" << esc(to_string(kind)) << "</td><td>" << esc(to_string(src)) << " → " << esc(to_string(dst))
      << "</td><td>" << a.count << "</td><td>" << a.async << "</td><td>" << bytes_text(a.bytes) << "</td><td>"
      << ms_text(ms_of(a.gpu_ns)) << "</td><td>" << (a.gpu_ns > 0 ? num(double(a.bytes) / double(a.gpu_ns), 2) : "–")
      << "</td><td>" << ms_text(ms_of(a.exposed_ns)) << "</td></tr>\n";
  }
  o << "</table>\n";
}

// ---- page --------------------------------------------------------------------------------

std::string_view segmentation_text(const Segmentation& seg, std::string& buf) {
  switch (seg.source) {
    case StepSource::kRange: buf = "steps from ranges like \"" + seg.matched_name + "\""; break;
    case StepSource::kExplicit: buf = "steps from explicit step marks"; break;
    case StepSource::kWholeTrace: buf = "no step marks: the whole trace is one step"; break;
    case StepSource::kInferred: buf = "no step marks: steps inferred from " + seg.matched_name; break;
  }
  return buf;
}

// The one sentence a reader needs first: how busy the GPU is and where the rest goes.
std::string headline(const RankResult& r) {
  Parts total{};
  for (const StepView& v : r.steps) {
    const Parts p = parts_ms(v);
    for (size_t k = 0; k < p.size(); ++k) total[k] += p[k];
  }
  const double all = sum(total);
  if (all <= 0) return "No step time to break down.";
  size_t worst = 1;
  for (size_t k = 1; k < total.size(); ++k) if (total[k] > total[worst]) worst = k;
  std::string s = "Compute fills " + pct_text(100.0 * total[0] / all) + " of the step time";
  if (total[worst] > 0) {
    s += "; the largest loss is <b>" + std::string(kParts[worst].label) + "</b> (" +
         pct_text(100.0 * total[worst] / all) + ", " + ms_text(total[worst] / double(r.steps.size())) + " ms per step)";
  }
  return s + ".";
}

void stat(std::ostream& o, const char* label, const std::string& value) {
  o << "<div class=\"stat\"><div class=\"v\">" << value << "</div><div class=\"l\">" << label << "</div></div>";
}

void rank_section(std::ostream& o, const RankResult& r, const HtmlReportOptions& opt) {
  const RunSummary& s = r.summary;
  std::string seg_buf;
  o << "<section class=\"rank\" id=\"rank-" << r.rank << "\">\n<h2>Rank " << r.rank << " <span class=\"src\">"
    << esc(r.source) << "</span></h2>\n<p class=\"note\">" << r.steps.size() << " step"
    << (r.steps.size() == 1 ? "" : "s") << "; " << esc(segmentation_text(r.segmentation, seg_buf)) << ".</p>\n";
  o << "<div class=\"stats\">";
  stat(o, "steps", std::to_string(r.steps.size()));
  stat(o, "median step", ms_text(s.step_ms.median_ms) + " ms");
  stat(o, "p90 step", ms_text(s.step_ms.p90_ms) + " ms");
  stat(o, "step time CV", std::isfinite(s.step_ms.cv) ? num(s.step_ms.cv, 2) : "–");
  stat(o, "GPU busy", pct_text(s.gpu_busy_pct));
  stat(o, "comm/compute overlap", pct_text(s.comm_comp_overlap_pct));
  o << "</div>\n";
  if (r.steps.empty()) {
    o << "<p class=\"empty\">No steps: nothing to chart.</p>\n";
  } else {
    o << "<h3>Where the step time goes</h3>\n<p class=\"headline\">" << headline(r) << "</p>\n";
    run_breakdown(o, r.steps);
    const std::vector<Bucket> buckets = bucket_steps(r.steps, opt.max_step_bars);
    o << "<h3>Per step</h3>\n";
    if (buckets.size() < r.steps.size()) {
      o << "<p class=\"note\">" << r.steps.size() << " steps: each bar is the mean of " << buckets.front().count
        << " consecutive steps.</p>\n";
    }
    legend(o);
    step_bars(o, buckets);
    o << "<h3>Step time over steps</h3>\n<p class=\"note\">Dashed: the median";
    if (buckets.size() < r.steps.size()) o << "; the band spans the fastest to the slowest step of each group";
    o << ".</p>\n";
    step_time_chart(o, buckets, s.step_ms.median_ms);
  }
  findings_section(o, r, opt);
  top_kernels_section(o, r, opt);
  blocking_section(o, r, opt);
  copies_section(o, r);
  o << "</section>\n";
}

void overview_section(std::ostream& o, const std::vector<RankResult>& ranks) {
  o << "<section class=\"overview\">\n<h2>All ranks</h2>\n<table class=\"ranks\"><tr><th>rank</th><th>steps</th>"
       "<th>median step ms</th><th>GPU busy</th><th>findings</th><th>breakdown</th></tr>\n";
  for (const RankResult& r : ranks) {
    o << "<tr><td><a href=\"#rank-" << r.rank << "\">rank " << r.rank << "</a></td><td>" << r.steps.size()
      << "</td><td>" << ms_text(r.summary.step_ms.median_ms) << "</td><td>" << pct_text(r.summary.gpu_busy_pct)
      << "</td><td>" << r.findings.size() << "</td><td class=\"mini\">";
    run_breakdown(o, r.steps);
    o << "</td></tr>\n";
  }
  o << "</table>\n";
  legend(o);
  o << "</section>\n";
}

std::string ranks_text(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

// The cross-rank verdict: which rank the others wait for, by how much and why.
void merged_section(std::ostream& o, const MergedAnalysis& m, const HtmlReportOptions& opt) {
  o << "<section class=\"merged\" id=\"merged\">\n<h2>Across ranks " << esc(ranks_text(m.ranks)) << "</h2>\n";
  if (!m.findings.empty()) {
    o << "<table class=\"findings\"><tr><th>from step</th><th>detector</th><th>severity</th><th>delay ms</th>"
         "<th>of step</th><th>what happened</th><th>fix direction</th></tr>\n";
    for (const Finding& f : m.findings) {
      const auto [signature, fix] = split_fix(f.message);
      o << "<tr class=\"" << severity_class(f.severity) << "\"><td>" << f.step << "</td><td class=\"det\">"
        << esc(f.detector) << "</td><td><span class=\"sev\">" << to_string(f.severity) << "</span></td><td>"
        << ms_text(f.cost_ms) << "</td><td>" << pct_text(f.cost_pct) << "</td><td>" << esc(signature)
        << "</td><td class=\"fix\">" << esc(fix) << "</td></tr>\n";
    }
    o << "</table>\n";
  } else {
    o << "<p class=\"" << (m.steps.empty() ? "note" : "ok") << "\">"
      << (m.steps.empty() ? "No cross-rank verdict (see the notes)." : "No late rank: the ranks reach their collectives together.")
      << "</p>\n";
  }
  if (m.clocks.reference >= 0) {
    const RankClock& ref = m.clocks.ranks[static_cast<size_t>(m.clocks.reference)];
    o << "<h3>Clocks</h3>\n<p class=\"note\">Aligned on the ends of matched NCCL collectives; reference rank "
      << ref.rank << ".</p>\n<table class=\"clocks\"><tr><th>rank</th><th>offset ms</th><th>collectives matched</th>"
         "<th>ends within ms</th></tr>\n";
    for (const RankClock& c : m.clocks.ranks) {
      o << "<tr><td>" << c.rank << "</td>";
      if (!c.aligned) {
        o << "<td colspan=\"3\">" << esc(c.why_not) << "</td></tr>\n";
        continue;
      }
      o << "<td>" << num(double(c.offset_ns) / 1e6, 3) << "</td><td>" << c.pairs.size() << " ("
        << esc(to_string(c.method)) << ")</td><td>" << num(double(c.residual_ns) / 1e6, 3) << "</td></tr>\n";
    }
    o << "</table>\n";
  }
  for (const std::string& note : m.notes) o << "<p class=\"note\">note: " << esc(note) << "</p>\n";
  if (!m.steps.empty()) {
    const size_t shown = std::min(m.steps.size(), opt.max_finding_rows);
    o << "<h3>Late ranks per step</h3>\n";
    if (shown < m.steps.size()) o << "<p class=\"note\">The first " << shown << " of " << m.steps.size() << " steps.</p>\n";
    o << "<table class=\"late\"><tr><th>step</th><th>collective</th><th>arrival spread ms</th><th>step ms</th>"
         "<th>late rank(s)</th><th>delay ms</th><th>cause</th></tr>\n";
    for (size_t i = 0; i < shown; ++i) {
      const MergedStep& st = m.steps[i];
      o << "<tr" << (st.late_ranks.empty() ? "" : " class=\"hot\"") << "><td>" << st.step << "</td><td>"
        << esc(to_string(st.collective)) << "</td><td>" << num(double(st.spread_ns) / 1e6, 1) << "</td><td>"
        << num(double(st.step_ns) / 1e6, 1) << "</td><td>" << (st.late_ranks.empty() ? "–" : esc(ranks_text(st.late_ranks)))
        << "</td><td>" << (st.late_ranks.empty() ? "–" : num(double(st.delay_ns) / 1e6, 1)) << "</td><td>"
        << (st.cause.empty() ? "–" : esc(st.cause)) << "</td></tr>\n";
    }
    o << "</table>\n";
  }
  o << "</section>\n";
}

constexpr const char* kStyle = R"css(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#222;margin:0;background:#f6f7f9}
main{max-width:1300px;margin:0 auto;padding:16px 24px 40px}
h1{font-size:22px;margin:8px 0 4px}h2{font-size:19px;margin:28px 0 6px;border-bottom:2px solid #ccd}
h3{font-size:15px;margin:22px 0 6px}.src{font-size:13px;font-weight:normal;color:#667;word-break:break-all}
section{background:#fff;border:1px solid #dde;border-radius:6px;padding:4px 18px 18px;margin:16px 0}
.note{color:#667;margin:4px 0}.headline{font-size:16px;margin:6px 0 10px}.ok{color:#2a7a2a}
.stats{display:flex;flex-wrap:wrap;gap:10px;margin:10px 0}
.stat{background:#f0f2f6;border-radius:5px;padding:6px 14px;min-width:110px}
.stat .v{font-size:18px;font-weight:600}.stat .l{font-size:12px;color:#667}
.hbar{display:flex;height:34px;border-radius:4px;overflow:hidden;background:#eee;margin:6px 0}
.hbar div{display:flex;align-items:center;justify-content:center;overflow:hidden;white-space:nowrap}
.hbar span{color:#fff;font-size:12px;font-weight:600;text-shadow:0 0 2px #000}
td.mini{width:55%}td.mini .hbar{height:18px;margin:0}td.mini .parts,td.mini .hbar span{display:none}
.legend{display:flex;flex-wrap:wrap;gap:14px;margin:6px 0;font-size:13px}
.legend i,.sw{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:5px;vertical-align:-1px}
table{border-collapse:collapse;margin:6px 0;font-size:13px}
th{background:#eef0f4;text-align:left;font-weight:600}th,td{padding:3px 9px;border-bottom:1px solid #e4e6ea;vertical-align:top}
td{font-variant-numeric:tabular-nums}table.parts td:nth-child(n+3),table.kernels td:nth-child(n+2),
table.blocking td:nth-child(n+3),table.copies td:nth-child(n+3){text-align:right}
tr.hot td,td.hot{background:#fff4e0}
td.name{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;word-break:break-all;max-width:720px}
td.det{font-family:ui-monospace,Menlo,Consolas,monospace;white-space:nowrap}td.fix{color:#1f5a1f}
table.findings td:nth-child(6),table.findings td:nth-child(7){min-width:260px}
.sev{border-radius:3px;padding:0 6px;font-size:12px;color:#fff;background:#889}
tr.crit .sev{background:#c62828}tr.warn .sev{background:#e08600}
svg.chart{width:100%;height:auto;display:block;background:#fff}
svg .grid{stroke:#e3e3e3}svg .tick{font-size:11px;fill:#667}
svg .bar:hover rect{opacity:.8}svg .line{fill:none;stroke:#2e6fbf;stroke-width:1.8}
svg .band{fill:#2e6fbf;opacity:.15}svg .median{stroke:#d62728;stroke-dasharray:6 4}svg .pt{fill:#2e6fbf}
footer{color:#889;font-size:12px;margin-top:20px}
)css";

}  // namespace

void write_html_report(const std::vector<RankResult>& ranks, std::ostream& out, const HtmlReportOptions& opt,
                       const MergedAnalysis* merged) {
  std::ostringstream o;  // one write at the end: a partial page never reaches the file on a throw
  o << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
       // No fetch of any kind: the page is one file that opens offline.
       "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
       "img-src data:\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>"
    << esc(opt.title) << "</title>\n<style>" << kStyle << "</style>\n</head>\n<body>\n<main>\n<h1>" << esc(opt.title)
    << "</h1>\n<p class=\"note\">" << ranks.size() << " rank" << (ranks.size() == 1 ? "" : "s")
    << ". Step time = compute + exposed comm (NCCL with no compute running) + copy-only + GPU idle by cause "
       "(input, sync, launch, host, other).</p>\n";
  if (ranks.empty()) o << "<p class=\"empty\">No traces analyzed.</p>\n";
  if (ranks.size() > 1) overview_section(o, ranks);
  if (merged != nullptr) merged_section(o, *merged, opt);
  for (const RankResult& r : ranks) rank_section(o, r, opt);
  o << "<footer>stepwatch " << STEPWATCH_VERSION << "</footer>\n</main>\n</body>\n</html>\n";
  out << o.str();
}

}  // namespace stepwatch

#include "stepwatch/report/text.h"

#include <cmath>
#include <cstdio>
#include <string>

#include "stepwatch/core/stats.h"
#include "stepwatch/report/finding_groups.h"

namespace stepwatch {
namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}


void write_row(const StepView& v, std::ostream& out) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%8lld %9.1f %5.1f %9.1f %9.1f %9.1f | %8.1f %8.1f %8.1f %8.1f %8.1f | %7d %5d\n",
                static_cast<long long>(v.step), ms_of(v.duration_ns()), 100.0 * v.duty_cycle(), ms_of(v.compute_ns),
                ms_of(v.exposed_comm_ns), ms_of(v.copy_only_ns), ms_of(v.idle[IdleCause::kInput]),
                ms_of(v.idle[IdleCause::kSync]), ms_of(v.idle[IdleCause::kLaunch]), ms_of(v.idle[IdleCause::kHost]),
                ms_of(v.idle[IdleCause::kOther]), v.kernels, v.syncs);
  out << buf;
}

}  // namespace

void write_text_report(const RankResult& r, std::ostream& out, const TextReportOptions& options) {
  const Segmentation& seg = r.segmentation;
  out << "== " << r.source << "  (rank " << r.rank << ", " << r.steps.size() << " step"
      << (r.steps.size() == 1 ? "" : "s");
  switch (seg.source) {
    case StepSource::kRange: out << " from ranges like \"" << seg.matched_name << "\""; break;
    case StepSource::kExplicit: out << " from explicit step marks"; break;
    case StepSource::kWholeTrace: out << ", no step marks: whole trace as one step"; break;
    case StepSource::kInferred: out << " inferred from " << seg.matched_name; break;
  }
  out << ")\n\n";
  out << "    step    dur ms busy%   compute  exp.comm copy-only |    input     sync   launch     host    other "
         "| kernels syncs\n"
         "                                  (ms)      (ms)      (ms) |  --------------- GPU idle (ms) ---------------"
         " |\n";
  const size_t n = r.steps.size();
  const size_t limit = options.max_table_rows;
  for (size_t i = 0; i < n; ++i) {
    if (n > limit && i == limit / 2) {
      out << "     ... " << (n - limit) << " more steps ...\n";
      i = n - limit / 2;
    }
    write_row(r.steps[i], out);
  }

  out << "\nfindings:";
  if (r.findings.empty()) out << " none";
  out << '\n';
  // A detector firing on a run of steps is one line (the JSONL keeps one record per step).
  for (const FindingGroup& g : group_findings(r)) out << format_group_line(g) << '\n';

  const RunSummary& s = r.summary;
  out << "\nsummary (rank " << s.rank << "): " << s.steps << (s.steps == 1 ? " step" : " steps") << "; step time mean "
      << fmt("%.1f", s.step_ms.mean_ms) << " ms, median " << fmt("%.1f", s.step_ms.median_ms) << " ms, p90 "
      << fmt("%.1f", s.step_ms.p90_ms) << " ms, CV " << fmt("%.2f", s.step_ms.cv) << "; GPU busy "
      << fmt("%.1f", s.gpu_busy_pct) << "%";
  if (std::isfinite(s.comm_comp_overlap_pct)) {
    out << "; comm/compute overlap " << fmt("%.1f", s.comm_comp_overlap_pct) << "%";
  }
  out << '\n';
  const TimeAccounting& t = s.time;
  if (t.trace_ms > 0) {
    out << "  trace " << fmt("%.1f", t.trace_ms) << " ms: before the first step " << fmt("%.1f", t.before_first_step_ms)
        << " ms, in steps " << fmt("%.1f", t.in_steps_ms) << " ms, between steps " << fmt("%.1f", t.between_steps_ms)
        << " ms, after the last " << fmt("%.1f", t.after_last_step_ms) << " ms; GPU busy over the whole trace "
        << fmt("%.1f", t.gpu_busy_pct) << "%\n";
  }
  const double run_ms = s.step_ms.mean_ms * s.steps;
  auto line = [&](const std::string& id, const DetectorTotal& total, const char* indent) {
    out << indent << id << ": " << total.steps << " step" << (total.steps == 1 ? "" : "s");
    if (total.cost_ms > 0) {
      out << (total.tax_share == TaxShare::kOwn ? ", goodput tax " : ", cost ") << fmt("%.1f", total.cost_ms) << " ms";
      if (run_ms > 0 && total.tax_share != TaxShare::kOverlapping) {
        out << " (" << fmt("%.1f", 100.0 * total.cost_ms / run_ms) << "% of step time)";
      }
      if (total.tax_share == TaxShare::kRefinement) out << ", inside " << total.refines << "'s";
      if (total.tax_share == TaxShare::kOverlapping) out << ", overlaps the others";
    }
    out << '\n';
  };
  // Refinements under their umbrella: their costs lie inside it and are never added.
  for (const auto& [id, total] : s.findings) {
    if (total.tax_share == TaxShare::kRefinement && s.findings.count(total.refines) != 0) continue;
    line(id, total, "  ");
    for (const auto& [sub_id, sub] : s.findings) {
      if (sub.tax_share == TaxShare::kRefinement && sub.refines == id) line(sub_id, sub, "    ");
    }
  }
  if (s.tax_ms > 0) {
    out << "  total goodput tax (each idle interval once): " << fmt("%.1f", s.tax_ms) << " ms ("
        << fmt("%.1f", s.tax_pct) << "% of the judged steps)\n";
  }
}

}  // namespace stepwatch

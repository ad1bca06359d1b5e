#include "stepwatch/report/rank_merge_report.h"

#include <cstdio>
#include <string>

#include "stepwatch/report/jsonl.h"

namespace stepwatch {
namespace {

std::string ms_text(int64_t ns, const char* format = "%.3f") {
  char buf[48];
  std::snprintf(buf, sizeof buf, format, double(ns) / 1e6);
  return buf;
}

std::string joined(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? "," : "") + std::to_string(ranks[i]);
  return s;
}

void write_step_row(const MergedStep& s, std::ostream& out) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%8lld  %-14s %9.1f %9.1f  %-12s %8.1f  %s\n", static_cast<long long>(s.step),
                std::string(to_string(s.collective)).c_str(), double(s.spread_ns) / 1e6, double(s.step_ns) / 1e6,
                s.late_ranks.empty() ? "-" : joined(s.late_ranks).c_str(), double(s.delay_ns) / 1e6,
                s.cause.empty() ? "-" : s.cause.c_str());
  out << buf;
}

}  // namespace

void write_merged_text(const MergedAnalysis& m, std::ostream& out, size_t max_table_rows) {
  out << "== merged ranks " << joined(m.ranks) << ": straggler analysis across ranks\n";
  if (m.clocks.reference >= 0) {
    const RankClock& ref = m.clocks.ranks[static_cast<size_t>(m.clocks.reference)];
    out << "clocks aligned on the ends of matched NCCL collectives, reference rank " << ref.rank << ":\n";
    for (const RankClock& c : m.clocks.ranks) {
      if (!c.aligned || c.method == MatchMethod::kReference) continue;
      out << "  rank " << c.rank << ": offset " << (c.offset_ns >= 0 ? "+" : "") << ms_text(c.offset_ns)
          << " ms (" << c.pairs.size() << " collectives matched by " << to_string(c.method) << ", ends within "
          << ms_text(c.residual_ns) << " ms)\n";
    }
  }
  for (const std::string& note : m.notes) out << "note: " << note << '\n';
  if (!m.steps.empty()) {
    out << "\n    step  collective     spread ms   step ms  late rank(s) delay ms  cause\n";
    const size_t n = m.steps.size();
    for (size_t i = 0; i < n; ++i) {
      if (n > max_table_rows && i == max_table_rows / 2) {
        out << "     ... " << (n - max_table_rows) << " more steps ...\n";
        i = n - max_table_rows / 2;
      }
      write_step_row(m.steps[i], out);
    }
  }
  out << "\nfindings (across ranks):";
  if (m.findings.empty()) out << (m.steps.empty() ? " no verdict" : " none");
  out << '\n';
  for (const Finding& f : m.findings) out << format_log_line(f) << '\n';
}

void write_merged_jsonl(const MergedAnalysis& m, std::ostream& out) {
  for (const Finding& f : m.findings) out << jsonl_finding(f) << '\n';
}

}  // namespace stepwatch

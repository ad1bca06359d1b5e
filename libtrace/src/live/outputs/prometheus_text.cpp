#include "live/outputs/prometheus_text.h"

#include <charconv>
#include <cmath>

namespace stepwatch::live {
namespace {

// Label values escape backslash, double quote and line feed (the format's only escapes).
void append_label_value(std::string& out, std::string_view value) {
  for (char ch : value) {
    if (ch == '\\') out += "\\\\";
    else if (ch == '"') out += "\\\"";
    else if (ch == '\n') out += "\\n";
    else out += ch;
  }
}

// Go's ParseFloat forms: shortest round-trip digits, NaN, +Inf, -Inf.
void append_value(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "NaN";
  } else if (std::isinf(value)) {
    out += value > 0 ? "+Inf" : "-Inf";
  } else {
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
    out.append(buf, ec == std::errc() ? static_cast<size_t>(end - buf) : 0);
    if (ec != std::errc()) out += "NaN";
  }
}

void append_value(std::string& out, uint64_t value) { out += std::to_string(value); }

class Writer {
 public:
  explicit Writer(int rank) : rank_(std::to_string(rank)) {}

  void family(std::string_view name, std::string_view type, std::string_view help) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    out_ += help;  // help texts are ours: no backslashes or line feeds to escape
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }

  // One sample: name{rank="R"[,key="value"]} value
  template <typename T>
  void sample(std::string_view name, T value, std::string_view key = {}, std::string_view label = {}) {
    out_ += name;
    out_ += "{rank=\"";
    out_ += rank_;
    out_ += '"';
    if (!key.empty()) {
      out_ += ',';
      out_ += key;
      out_ += "=\"";
      append_label_value(out_, label);
      out_ += '"';
    }
    out_ += "} ";
    append_value(out_, value);
    out_ += '\n';
  }

  std::string take() { return std::move(out_); }

 private:
  std::string rank_;
  std::string out_;
};

std::string le_text(double bound) {
  std::string s;
  append_value(s, bound);
  return s;
}

}  // namespace

std::string render_prometheus(const MetricsSnapshot& m) {
  Writer w(m.rank);
  w.family("stepwatch_info", "gauge", "stepwatch is active in this process (the version label says which).");
  w.sample("stepwatch_info", uint64_t{1}, "version", m.version);

  w.family("stepwatch_steps_total", "counter", "Training steps analyzed (judged, warm-up or untraced).");
  w.sample("stepwatch_steps_total", m.steps);
  w.family("stepwatch_judged_steps_total", "counter", "Steps the detectors judged (after warm-up, with GPU data).");
  w.sample("stepwatch_judged_steps_total", m.judged_steps);

  w.family("stepwatch_step_seconds", "histogram", "Wall time of each analyzed step.");
  uint64_t cumulative = 0;
  for (size_t b = 0; b < kStepSecondsBuckets.size(); ++b) {
    cumulative += m.step_bucket_counts[b];
    w.sample("stepwatch_step_seconds_bucket", cumulative, "le", le_text(kStepSecondsBuckets[b]));
  }
  w.sample("stepwatch_step_seconds_bucket", m.steps, "le", "+Inf");
  w.sample("stepwatch_step_seconds_sum", m.step_seconds_sum);
  w.sample("stepwatch_step_seconds_count", m.steps);

  if (m.last_step_seconds) {
    w.family("stepwatch_last_step_seconds", "gauge", "Wall time of the latest analyzed step.");
    w.sample("stepwatch_last_step_seconds", *m.last_step_seconds);
  }
  if (m.gpu_duty_cycle) {
    w.family("stepwatch_gpu_duty_cycle", "gauge",
             "Fraction of the latest traced step with any GPU work running (compute, NCCL or copies).");
    w.sample("stepwatch_gpu_duty_cycle", *m.gpu_duty_cycle);
  }

  w.family("stepwatch_step_breakdown_seconds_total", "counter",
           "Where traced steps' wall time went: compute, exposed communication, copy-only, and GPU idle by cause "
           "(input, sync, launch, host, other). The categories add up to the traced steps' wall time.");
  for (size_t c = 0; c < kBreakdownCategories; ++c) {
    w.sample("stepwatch_step_breakdown_seconds_total", m.breakdown_seconds[c], "category",
             to_string(static_cast<BreakdownCategory>(c)));
  }

  w.family("stepwatch_findings_total", "counter", "Findings per detector (one per faulty step, or per established pattern).");
  for (const auto& [detector, d] : m.detectors) w.sample("stepwatch_findings_total", d.findings, "detector", detector);
  w.family("stepwatch_detector_cost_seconds_total", "counter",
           "Step time each detector's findings claim (the goodput tax; a refinement overlaps its umbrella, do not "
           "add them up).");
  for (const auto& [detector, d] : m.detectors) {
    w.sample("stepwatch_detector_cost_seconds_total", d.cost_seconds, "detector", detector);
  }

  w.family("stepwatch_dropped_records_total", "counter", "Trace records lost, by cause (findings may miss activity).");
  for (const auto& [kind, n] : m.dropped_records) w.sample("stepwatch_dropped_records_total", n, "kind", kind);
  w.family("stepwatch_dropped_buffers_total", "counter",
           "CUPTI activity buffers refused or abandoned, by cause (their records are in cupti_dropped).");
  for (const auto& [kind, n] : m.dropped_buffers) w.sample("stepwatch_dropped_buffers_total", n, "kind", kind);

  if (m.individual_step_score || m.individual_collective_score) {
    w.family("stepwatch_individual_score", "gauge",
             "This rank against its own best recent steps: best recent / current (1 = at its best; lower = slower).");
    if (m.individual_step_score) w.sample("stepwatch_individual_score", *m.individual_step_score, "signal", "step_time");
    if (m.individual_collective_score) {
      w.sample("stepwatch_individual_score", *m.individual_collective_score, "signal", "collective_wait");
    }
  }
  return w.take();
}

}  // namespace stepwatch::live

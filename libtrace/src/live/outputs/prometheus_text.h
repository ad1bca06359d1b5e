// The Prometheus text exposition format (version 0.0.4) of a MetricsSnapshot: what the metrics
// endpoint serves and the node_exporter textfile holds. A pure function, so it is tested alone.
//
// Metrics (every sample labelled rank="<R>"):
//   stepwatch_info{version}                               1
//   stepwatch_steps_total, stepwatch_judged_steps_total   counters
//   stepwatch_step_seconds                                histogram of step wall time
//   stepwatch_last_step_seconds, stepwatch_gpu_duty_cycle gauges (the latest step)
//   stepwatch_step_breakdown_seconds_total{category}      where traced steps' time went
//   stepwatch_findings_total{detector}, stepwatch_detector_cost_seconds_total{detector}
//   stepwatch_dropped_records_total{kind}                 trace records lost, by cause
//   stepwatch_dropped_buffers_total{kind}                 CUPTI activity buffers refused or abandoned
//   stepwatch_individual_score{signal}                    best recent / current (1 = at its best)
#pragma once

#include <string>
#include <string_view>

#include "live/outputs/run_metrics.h"

namespace stepwatch::live {

inline constexpr std::string_view kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

std::string render_prometheus(const MetricsSnapshot& snapshot);

}  // namespace stepwatch::live

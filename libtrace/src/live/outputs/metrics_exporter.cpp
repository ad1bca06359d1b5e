#include "live/outputs/metrics_exporter.h"

#include "live/outputs/prometheus_text.h"

namespace stepwatch::live {

std::string metrics_textfile_path(const std::string& configured, int rank) {
  const std::string suffix = ".prom";
  const bool has_suffix = configured.size() > suffix.size() &&
                          configured.compare(configured.size() - suffix.size(), suffix.size(), suffix) == 0;
  const std::string stem = has_suffix ? configured.substr(0, configured.size() - suffix.size()) : configured;
  return stem + ".rank" + std::to_string(rank) + suffix;
}

MetricsExporter::MetricsExporter(const LiveConfig& config, LogReporter& log)
    : log_(log), textfile_interval_ns_(int64_t{config.metrics_interval_s} * 1'000'000'000) {
  snapshot_.rank = config.rank;
  if (config.metrics_port > 0) {
    const int port = config.metrics_port + config.local_rank;
    std::string error;
    serving_ = server_.start(config.metrics_addr, port, [this] { return render(); }, error);
    if (serving_) {
      log_.info("metrics: Prometheus endpoint at http://" + config.metrics_addr + ":" + std::to_string(port) +
                "/metrics");
    } else {
      log_.warn("metrics: cannot serve on " + error +
                "; no metrics endpoint (the job goes on). Fix: another STEPWATCH_METRICS_PORT, or "
                "STEPWATCH_METRICS_TEXTFILE.");
    }
  }
  if (!config.metrics_textfile.empty()) textfile_ = metrics_textfile_path(config.metrics_textfile, config.rank);
}

MetricsExporter::~MetricsExporter() { stop(); }

void MetricsExporter::stop() noexcept { server_.stop(); }

std::string MetricsExporter::render() const {
  MetricsSnapshot copy;
  {
    std::lock_guard<std::mutex> lock(mu_);
    copy = snapshot_;
  }
  return render_prometheus(copy);
}

void MetricsExporter::publish(const MetricsSnapshot& snapshot, int64_t now_ns, bool final_pass) {
  if (serving_) {
    std::lock_guard<std::mutex> lock(mu_);
    snapshot_ = snapshot;
  }
  if (textfile_.empty() || textfile_failed_) return;
  if (!final_pass && textfile_written_ns_ != INT64_MIN && now_ns - textfile_written_ns_ < textfile_interval_ns_) return;
  textfile_written_ns_ = now_ns;
  std::string error;
  if (!write_file_atomically(textfile_, render_prometheus(snapshot), error)) {
    textfile_failed_ = true;  // said once; the job log is not the place for a line every interval
    log_.warn("metrics: cannot write the textfile " + error + "; textfile metrics off. Fix: STEPWATCH_METRICS_TEXTFILE.");
  }
}

}  // namespace stepwatch::live

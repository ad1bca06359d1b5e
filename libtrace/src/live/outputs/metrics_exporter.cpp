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

MetricsExporter::MetricsExporter(const LiveConfig& config, LogReporter& log, MetricsHttpServer::Limits limits)
    : log_(log), textfile_interval_ns_(int64_t{config.metrics_interval_s} * 1'000'000'000) {
  snapshot_.rank = config.rank;
  if (config.metrics_port > 0) {
    const int port = config.metrics_port + config.local_rank;
    std::string error;
    serving_ = server_.start(config.metrics_addr, port, [this] { return render(); }, error, limits);
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

// One line per kind of limit, the first time: a client that trips it once will trip it again,
// and the job log is not the place for a line per connection.
void MetricsExporter::report_limits() {
  const MetricsHttpServer::Stats stats = server_.stats();
  const MetricsHttpServer::Limits& limits = server_.limits();
  if (stats.closed_at_deadline > 0 && !deadline_reported_) {
    deadline_reported_ = true;
    log_.warn("metrics: closed a connection that sent no complete request (or did not read its reply) within " +
              std::to_string(limits.deadline_ms) + " ms; scrapes on other connections are not delayed. Said once.");
  }
  if (stats.closed_at_cap > 0 && !cap_reported_) {
    cap_reported_ = true;
    log_.warn("metrics: " + std::to_string(limits.max_connections) +
              " connections open at once (the cap): closed the one waiting longest for its request to admit a new "
              "one. Something holds connections to the metrics port without sending requests. Said once.");
  }
}

void MetricsExporter::publish(const MetricsSnapshot& snapshot, int64_t now_ns, bool final_pass) {
  if (serving_) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      snapshot_ = snapshot;
    }
    report_limits();
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

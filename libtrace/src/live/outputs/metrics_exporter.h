// Fleet metrics, opt-in: the latest MetricsSnapshot, served at http://<addr>:<port + LOCAL_RANK>/metrics
// (STEPWATCH_METRICS_PORT/ADDR) and/or written for node_exporter's textfile collector
// (STEPWATCH_METRICS_TEXTFILE), both in the Prometheus text format (live/prometheus_text.h).
//
// Locking: the analysis thread publishes a copy of the snapshot under `mu_`; the server thread
// copies it out under the same lock and renders outside it. Neither holds the lock across I/O,
// so a slow scraper never blocks the analysis thread.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "live/live_config.h"
#include "live/outputs/log_reporter.h"
#include "live/outputs/metrics_http.h"
#include "live/outputs/output_file.h"  // write_file_atomically: the collector never reads half a file
#include "live/outputs/run_metrics.h"

namespace stepwatch::live {

// STEPWATCH_METRICS_TEXTFILE with the rank before ".prom" (ranks sharing a node, and so a
// textfile directory, must not overwrite each other): /d/stepwatch.prom -> /d/stepwatch.rank3.prom.
std::string metrics_textfile_path(const std::string& configured, int rank);

class MetricsExporter {
 public:
  // Starts the endpoint when configured; a failed bind gives one log line and no endpoint.
  // `limits`: the endpoint's connection cap and per-connection deadline (tests shorten them).
  MetricsExporter(const LiveConfig& config, LogReporter& log,
                  MetricsHttpServer::Limits limits = MetricsHttpServer::Limits{});
  ~MetricsExporter();

  bool enabled() const { return serving_ || !textfile_.empty(); }
  int port() const { return server_.port(); }  // the bound port (0 when not serving)

  // Analysis thread: the snapshot to serve from now on; rewrites the textfile when its interval
  // has passed (always when `final_pass`); says in the log the first time the endpoint closed a
  // connection at its deadline and the first time at its connection cap.
  void publish(const MetricsSnapshot& snapshot, int64_t now_ns, bool final_pass);
  // Stops the endpoint (bounded). Idempotent.
  void stop() noexcept;
  // pthread_atfork child: release the inherited listening socket (see MetricsHttpServer).
  void close_in_child() noexcept { server_.close_in_child(); }

 private:
  std::string render() const;
  void report_limits();

  LogReporter& log_;
  MetricsHttpServer server_;
  bool serving_ = false;
  std::string textfile_;
  int64_t textfile_interval_ns_;
  int64_t textfile_written_ns_ = INT64_MIN;
  bool textfile_failed_ = false;
  bool deadline_reported_ = false, cap_reported_ = false;

  mutable std::mutex mu_;  // guards snapshot_ only
  MetricsSnapshot snapshot_;
};

}  // namespace stepwatch::live

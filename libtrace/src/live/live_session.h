// The live session: one per process, created on first use (InitializeInjection,
// InitializeInjectionNvtx2 or a C API call, whichever comes first) from STEPWATCH_* variables.
//
// It is the EventSink of every front end: callbacks only enqueue into per-thread queues; one
// analysis thread drains them, runs the LivePipeline and writes the outputs. Leaked on purpose:
// CUPTI and NVTX may call back during exit, after static destructors ran.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "live/call_site_recorder.h"
#include "live/event_queue.h"
#include "core/event_sink.h"
#include "live/judgement_meter.h"
#include "live/samplers/host_sampler.h"
#include "live/live_config.h"
#include "core/gpu_tracer.h"
#include "live/live_pipeline.h"
#include "live/outputs/log_reporter.h"
#include "live/samplers/nvml_sampler.h"
#include "live/outputs/metrics_exporter.h"
#include "live/outputs/run_outputs.h"
#include "stepwatch/stepwatch.h"

namespace stepwatch::live {

class LiveSession final : public EventSink {
 public:
  // The process-wide session; nullptr when stepwatch is disabled (STEPWATCH_ENABLE=0), after
  // fork in the child, or when it could not be created.
  static LiveSession* get() noexcept;

  // For tests: a session from an explicit config, logging to `log_path` (file) instead of stderr.
  static std::unique_ptr<LiveSession> create(const LiveConfig& config, const std::vector<std::string>& problems,
                                             const std::string& log_path);
  ~LiveSession() override;

  // EventSink
  void submit(const Event& event) noexcept override;
  NameId intern(std::string_view name) noexcept override;
  void report_loss(LossKind kind, uint64_t count) noexcept override;
  void advance_watermark(int64_t timestamp_ns) noexcept override;
  void mark_incomplete(int64_t start_ns, int64_t end_ns) noexcept override;
  void status(std::string_view line) noexcept override;

  // From InitializeInjection: load CUPTI, subscribe, start tracing; logs the start-up line.
  void start_gpu_tracing() noexcept;
  // The exit path (atexit): bounded CUPTI flush, final pass, exit summary. Idempotent.
  void shutdown() noexcept;
  // pthread_atfork child: this copy of the process has no analysis or CUPTI threads.
  void disable_in_child() noexcept;

  // C API
  int step_begin(int64_t step) noexcept;
  int step_end() noexcept;
  int phase_push(const char* name) noexcept;
  int phase_pop() noexcept;
  int flush() noexcept;
  int pause() noexcept;
  int resume() noexcept;
  int last_step(stepwatch_step_summary* out) noexcept;
  bool enabled() const noexcept { return !disabled_.load(std::memory_order_acquire); }

  const LiveConfig& config() const { return config_; }
  const std::string& run_dir() const { return run_dir_; }
  // The metrics endpoint's bound port; 0 when not serving. Waits (bounded) for the analysis thread
  // to have created the outputs.
  int metrics_port() const;

 private:
  LiveSession(const LiveConfig& config, const std::vector<std::string>& problems, const std::string& log_path);
  void analysis_loop();
  void analysis_cycle(bool final_pass, bool exact_watermark);
  // The outputs, the pipeline and the metrics listener, created on the analysis thread's first
  // cycle: InitializeInjection runs inside the application's first cuInit and does CUPTI set-up
  // only — no file, no socket.
  void create_outputs();
  void log_flush_delivery();             // per flush, at debug level (analysis thread)
  void follow_tracer_after_resume();     // a retried resume succeeded: tracing again (analysis thread)
  void wake() noexcept;
  Event step_event(EventKind kind, int64_t start_ns, int64_t end_ns) const;  // under step_mu_
  // The C API's step events: never through the per-thread rings, which drop when full (a step
  // lost there is a step missing from steps.jsonl), but through control_ (bounded, counted).
  void submit_control(const Event& event) noexcept;

  LiveConfig config_;
  NameTable names_;
  LossCounters losses_;
  EventQueues queues_;
  std::shared_ptr<spdlog::logger> logger_;
  std::unique_ptr<LogReporter> log_;
  std::string run_dir_;
  // Created by create_outputs() on the analysis thread; outputs_ready_ (release) publishes them.
  std::unique_ptr<RunOutputs> outputs_;
  std::unique_ptr<JudgementMeter> meter_;   // analysis thread only
  std::unique_ptr<LivePipeline> pipeline_;  // analysis thread only
  std::atomic<bool> outputs_ready_{false};
  std::unique_ptr<HostSampler> host_sampler_;  // null unless STEPWATCH_HOST_SAMPLE_HZ > 0
  // Where blocking calls are made: created with the session, before its threads (never reset;
  // outlives the tracer's shutdown). `call_sites_status_`: what the probe found ("Python 3.11").
  std::unique_ptr<CallSiteRecorder> call_sites_;
  std::string call_sites_status_;
  bool call_sites_logged_ = false;  // start_gpu_tracing's thread only
  std::unique_ptr<NvmlSampler> nvml_;          // null unless GPU tracing started and STEPWATCH_NVML
  std::unique_ptr<MetricsExporter> metrics_;  // null unless STEPWATCH_METRICS_PORT/_TEXTFILE

  std::atomic<bool> disabled_{false};
  std::atomic<bool> gpu_traced_{false};
  std::atomic<int64_t> watermark_ns_{INT64_MIN};
  int64_t start_ns_ = 0;

  // Explicit steps (C API): the open step, guarded by step_mu_.
  std::mutex step_mu_;
  bool step_open_ = false;
  int64_t step_number_ = -1;
  int64_t step_start_ns_ = 0;
  int64_t next_auto_step_ = 0;
  NameId step_name_ = kNoName;
  // Step events waiting for the analysis thread (a few per step; cap: kMaxControlEvents).
  std::mutex control_mu_;
  std::vector<Event> control_;

  // Paused intervals: steps overlapping them are not judged (no GPU data).
  std::mutex pause_mu_;
  std::vector<std::pair<int64_t, int64_t>> untraced_;
  std::vector<std::pair<int64_t, int64_t>> incomplete_;  // EventSink::mark_incomplete
  bool paused_ = false;
  // stepwatch_resume could not take CUPTI back: the untraced interval stays open until the
  // tracer's own retry succeeds (its active_since_ns closes it).
  bool resume_pending_ = false;
  TracerStats last_flush_stats_{};  // the per-flush line's previous totals (analysis thread)

  // The analysis thread and its hand-shakes.
  std::mutex loop_mu_;
  std::condition_variable loop_cv_;
  std::condition_variable done_cv_;
  bool wake_ = false;
  bool flush_requested_ = false;  // stepwatch_flush: the watermark is exact, judge up to it
  bool stop_ = false;
  bool finished_ = false;
  // Set by shutdown() before stop_: the final pass judges steps until then, then writes the
  // exit summary with the rest counted as skipped.
  std::chrono::steady_clock::time_point exit_deadline_ = std::chrono::steady_clock::time_point::max();
  uint64_t cycles_ = 0;
  std::thread thread_;
  std::atomic<bool> shut_down_{false};

  std::mutex last_mu_;
  std::optional<stepwatch_step_summary> last_;
};

}  // namespace stepwatch::live

#include "live/live_session.h"

#include "live/activation.h"

#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <thread>

#include <spdlog/logger.h>

#include "core/gpu_tracer.h"
#include "core/quiet_thread.h"

namespace stepwatch::live {
namespace {

constexpr size_t kQueueSlots = 1u << 16;   // per producer thread (4 MiB): absorbs a whole CUPTI buffer

// A quarter of the memory cap goes to producer rings (the rest: retained events, names, dumps).
// Threads past the count share one ring.
size_t queue_count_for(int64_t memory_cap_bytes) {
  const int64_t ring_bytes = static_cast<int64_t>(kQueueSlots * sizeof(Event));
  return static_cast<size_t>(std::clamp<int64_t>(memory_cap_bytes / 4 / ring_bytes, 2, 64));
}
constexpr int kPhaseDepth = 64;

uint32_t current_tid() noexcept { return static_cast<uint32_t>(::syscall(SYS_gettid)); }

int64_t thread_cpu_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

struct PhaseFrame {
  NameId name;
  int64_t start_ns;
};
thread_local PhaseFrame t_phases[kPhaseDepth];
thread_local int t_phase_depth = 0;

std::atomic<LiveSession*> g_session{nullptr};
std::mutex g_create_mu;
std::atomic<bool> g_forked_child{false};
std::atomic<int64_t> g_analysis_cpu_ns{0};

void atfork_child() {
  g_forked_child.store(true);
  if (LiveSession* s = g_session.load()) s->disable_in_child();
}

}  // namespace

LiveSession* LiveSession::get() noexcept {
  if (g_forked_child.load(std::memory_order_relaxed)) return nullptr;
  LiveSession* s = g_session.load(std::memory_order_acquire);
  if (s) return s->enabled() ? s : nullptr;
  // Dormant until asked for (live/activation.h): linking the library alone does nothing.
  if (!activation_requested()) return nullptr;
  try {
    std::lock_guard<std::mutex> lock(g_create_mu);
    s = g_session.load(std::memory_order_acquire);
    if (!s) {
      std::vector<std::string> problems;
      const LiveConfig config = read_live_config([](const char* n) { return std::getenv(n); }, problems);
      // Leaked on purpose: CUPTI/NVTX may call back during exit, after static destructors.
      s = new LiveSession(config, problems, "");
      g_session.store(s, std::memory_order_release);
      pthread_atfork(nullptr, nullptr, &atfork_child);
      std::atexit([] {
        if (LiveSession* live = g_session.load()) live->shutdown();
      });
    }
  } catch (...) {
    return nullptr;
  }
  return s->enabled() ? s : nullptr;
}

std::unique_ptr<LiveSession> LiveSession::create(const LiveConfig& config, const std::vector<std::string>& problems,
                                                 const std::string& log_path) {
  return std::unique_ptr<LiveSession>(new LiveSession(config, problems, log_path));
}

LiveSession::LiveSession(const LiveConfig& config, const std::vector<std::string>& problems,
                         const std::string& log_path)
    : config_(config),
      names_(static_cast<size_t>(config.memory_cap_bytes / 8)),
      queues_(kQueueSlots, queue_count_for(config.memory_cap_bytes)),
      start_ns_(now_ns()) {
  logger_ = make_job_logger(config_.log_level, log_path);
  log_ = std::make_unique<LogReporter>(logger_, config_);
  for (const std::string& p : problems) log_->warn("config: " + p);
  if (!config_.enabled) {
    disabled_.store(true);
    return;
  }
  // Only the name here: the outputs, the pipeline and the metrics listener are created by the
  // analysis thread (create_outputs), outside the application's first cuInit.
  run_dir_ = config_.output_dir + "/rank" + std::to_string(config_.rank) + "-pid" + std::to_string(::getpid());
  step_name_ = names_.intern("step");
  // Before the analysis thread, which names native sites: it reads the pointer without a lock.
  // (In a Python process the interpreter is up by the time the library loads.)
  if (config_.call_sites) {
    call_sites_ = std::make_unique<CallSiteRecorder>(*this, PythonFrameReader::probe(call_sites_status_));
  }
  // With every signal blocked: the host's process-directed signals (SIGTERM from torchrun/slurm,
  // SIGINT, SIGCHLD) must reach the host's own threads.
  thread_ = spawn_quiet_thread([this] { analysis_loop(); });
  if (config_.host_sample_hz > 0) {
    // The thread that starts stepwatch is the first launcher we know (InitializeInjection runs on
    // the thread of the first CUDA call); step_begin moves the sampler to the thread marking steps.
    // (The sampler opens /proc files on its own thread.)
    host_sampler_ = std::make_unique<HostSampler>(*this, config_.host_sample_hz);
    host_sampler_->set_target(HostThread::current());
    host_sampler_->start();
  }
}

LiveSession::~LiveSession() {
  // Only test sessions are destroyed; the process-wide one is leaked.
  shutdown();
  if (thread_.joinable()) thread_.join();
}

// ---- EventSink -------------------------------------------------------------------------------

void LiveSession::submit(const Event& event) noexcept {
  if (!queues_.push(event)) losses_.add(LossKind::kQueueFull, 1);
}

namespace {
// Step events held for the analysis thread: two per step, drained every cycle (<= 5 s apart), so
// this bound is reached only by a job marking > 6,000 steps/s or an analysis thread starved for
// many seconds — then counted as a full queue, like any record.
constexpr size_t kMaxControlEvents = 1u << 16;
}  // namespace

void LiveSession::submit_control(const Event& event) noexcept {
  try {
    std::lock_guard<std::mutex> lock(control_mu_);
    if (control_.size() < kMaxControlEvents) {
      control_.push_back(event);
      return;
    }
  } catch (...) {
  }
  losses_.add(LossKind::kQueueFull, 1);
}

NameId LiveSession::intern(std::string_view name) noexcept {
  try {
    const NameId id = names_.intern(name);
    if (id == names_.overflow_id() && !name.empty()) losses_.add(LossKind::kNameTableFull, 1);
    return id;
  } catch (...) {
    return kNoName;
  }
}

void LiveSession::report_loss(LossKind kind, uint64_t count) noexcept { losses_.add(kind, count); }

void LiveSession::advance_watermark(int64_t timestamp_ns) noexcept {
  int64_t cur = watermark_ns_.load(std::memory_order_relaxed);
  while (timestamp_ns > cur && !watermark_ns_.compare_exchange_weak(cur, timestamp_ns)) {
  }
  wake();
}

void LiveSession::mark_incomplete(int64_t start_ns, int64_t end_ns) noexcept {
  try {
    std::lock_guard<std::mutex> lock(pause_mu_);
    // Adjacent or overlapping intervals merge: a tracer that keeps giving up on a stuck launch
    // reports the same interval growing.
    if (!incomplete_.empty() && start_ns <= incomplete_.back().second) {
      incomplete_.back().second = std::max(incomplete_.back().second, end_ns);
    } else {
      incomplete_.emplace_back(start_ns, end_ns);
    }
  } catch (...) {
  }
}

void LiveSession::status(std::string_view line) noexcept {
  try {
    log_->warn(std::string(line));
  } catch (...) {
  }
}

// ---- lifecycle -------------------------------------------------------------------------------

void LiveSession::start_gpu_tracing() noexcept {
  if (!enabled()) return;
  try {
    GpuTracerOptions options;
    options.flush_period_ms = config_.flush_period_ms;
    options.buffer_bytes = config_.cupti_buffer_bytes;
    options.max_buffers = config_.cupti_max_buffers;
    if (call_sites_ && !call_sites_logged_) {
      log_->info("call sites: " + call_sites_status_);
      call_sites_logged_ = true;
    }
    options.blocking_call_hook = call_sites_ ? call_sites_.get() : nullptr;
    std::string detail;
    // CUPTI call failures go to the job log like every other line of ours.
    cupti_tracer().set_log([](std::string_view line) noexcept {
      if (LiveSession* s = g_session.load()) s->status(line);
    });
    const TracerState state = cupti_tracer().start(config_.cupti_path, options, *this, detail);
    if (state == TracerState::kActive) {
      gpu_traced_.store(true);
      if (config_.nvml && !nvml_) {
        // NVML loads on the sampler's own thread: nothing here blocks the application's first CUDA call.
        nvml_ = std::make_unique<NvmlSampler>(
            *this, NvmlSamplerOptions{config_.nvml_path, 10, config_.visible_devices},
            [this](std::string_view line) { log_->info(std::string(line)); });
        nvml_->start();
      }
      log_->info(std::string("active: stepwatch ") + STEPWATCH_VERSION + "; " + detail + "; outputs in " + run_dir_ +
                 "/");
    } else {
      // Stand down from GPU tracing: step marks are still timed, nothing GPU-based is judged.
      gpu_traced_.store(false);
      log_->warn("not active: " + detail);
    }
  } catch (...) {
    gpu_traced_.store(false);
  }
  // No wake(): the analysis thread's first cycle (which creates the outputs) comes on its period,
  // not inside the application's cuInit.
}

void LiveSession::disable_in_child() noexcept {
  disabled_.store(true);
  shut_down_.store(true);  // the child's atexit must not touch the parent's threads
  cupti_tracer().disable_in_child();
  if (outputs_ready_.load(std::memory_order_acquire) && metrics_) metrics_->close_in_child();
}

void LiveSession::shutdown() noexcept {
  if (shut_down_.exchange(true)) return;
  try {
    // The exit bound (STEPWATCH_EXIT_TIMEOUT_MS) covers everything below: the final flush gets a
    // fifth of it (at most 2 s), the final pass judges steps until 90% of it, then writes the exit
    // summary with the steps it had no time for counted; whatever happens, the host's exit is
    // delayed by at most the bound.
    const auto begin = std::chrono::steady_clock::now();
    const std::chrono::milliseconds bound(config_.exit_timeout_ms);
    if (gpu_traced_.load()) {
      cupti_tracer().shutdown(static_cast<int>(std::min<int64_t>(config_.exit_timeout_ms / 5, 2000)));
    }
    // The samplers' last ranges and samples reach the final pass.
    if (host_sampler_) host_sampler_->stop();
    if (nvml_) nvml_->stop();
    if (!thread_.joinable()) return;
    std::unique_lock<std::mutex> lock(loop_mu_);
    exit_deadline_ = begin + bound * 9 / 10;
    stop_ = true;
    loop_cv_.notify_all();
    // Bounded: a stuck analysis pass cannot hang the host's exit.
    if (done_cv_.wait_until(lock, begin + bound, [&] { return finished_; })) {
      lock.unlock();
      thread_.join();
      // After the final pass published the last snapshot and wrote the textfile.
      if (outputs_ready_.load(std::memory_order_acquire) && metrics_) metrics_->stop();
    } else {
      const uint64_t cycles = cycles_;
      lock.unlock();
      thread_.detach();
      // The analysis thread got no CPU in time (a loaded node): the one line that says so, from
      // here, since the thread that writes the summary is the one that did not run.
      int64_t marked = 0;
      {
        std::lock_guard<std::mutex> step_lock(step_mu_);
        marked = next_auto_step_;
      }
      log_->warn("exit summary not written: the analysis thread did not finish within STEPWATCH_EXIT_TIMEOUT_MS=" +
                 std::to_string(config_.exit_timeout_ms) + " (" + std::to_string(cycles) +
                 " analysis cycles ran; the last step marked was " + std::to_string(marked - 1) +
                 "): steps.jsonl holds the steps judged before exit");
    }
  } catch (...) {
  }
}

void LiveSession::wake() noexcept {
  try {
    std::lock_guard<std::mutex> lock(loop_mu_);
    wake_ = true;
  } catch (...) {
  }
  loop_cv_.notify_one();
}

void LiveSession::create_outputs() {
  outputs_ = std::make_unique<RunOutputs>(config_, run_dir_, *log_, names_);
  meter_ = std::make_unique<JudgementMeter>(*outputs_, &stepwatch::now_ns);
  pipeline_ = std::make_unique<LivePipeline>(config_, names_, losses_, *meter_);
  if (config_.metrics_port > 0 || !config_.metrics_textfile.empty()) {
    metrics_ = std::make_unique<MetricsExporter>(config_, *log_);
  }
  outputs_ready_.store(true, std::memory_order_release);
}

int LiveSession::metrics_port() const {
  for (int i = 0; i < 2000 && !outputs_ready_.load(std::memory_order_acquire) && !disabled_.load(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return outputs_ready_.load(std::memory_order_acquire) && metrics_ ? metrics_->port() : 0;
}

void LiveSession::analysis_loop() {
  const auto period = std::chrono::milliseconds(std::max<int64_t>(config_.flush_period_ms / 2, 20));
  for (;;) {
    bool stop = false;
    bool exact = false;
    {
      std::unique_lock<std::mutex> lock(loop_mu_);
      loop_cv_.wait_for(lock, period, [&] { return wake_ || stop_; });
      wake_ = false;
      stop = stop_;
      exact = flush_requested_;
      flush_requested_ = false;
    }
    try {
      if (!outputs_ready_.load(std::memory_order_relaxed)) create_outputs();
      analysis_cycle(stop, exact);
    } catch (...) {
      // Never let an analysis failure escape into the host; the next cycle tries again.
    }
    g_analysis_cpu_ns.store(thread_cpu_ns());
    {
      std::lock_guard<std::mutex> lock(loop_mu_);
      ++cycles_;
      if (stop) finished_ = true;
    }
    done_cv_.notify_all();
    if (stop) return;
  }
}

void LiveSession::analysis_cycle(bool final_pass, bool exact_watermark) {
  // The watermark is read before the queues are drained: the adapter publishes it only after the
  // records below it were submitted, so this drain holds them all. Read after the drain, a flush
  // landing in between let steps be judged without the records it had just delivered (late_record).
  // Without GPU tracing only host events arrive, submitted when they end: everything up to now
  // is complete. With CUPTI, the adapter's flushes move the watermark.
  const int64_t watermark = gpu_traced_.load() ? watermark_ns_.load() : now_ns();
  std::vector<Event> batch;
  queues_.drain(batch);
  if (call_sites_) call_sites_->name_native_sites(batch);
  {
    std::lock_guard<std::mutex> lock(control_mu_);
    batch.insert(batch.end(), control_.begin(), control_.end());
    control_.clear();
  }
  {
    std::lock_guard<std::mutex> lock(pause_mu_);
    auto intervals = untraced_;
    if (paused_ && !intervals.empty()) intervals.back().second = INT64_MAX;
    pipeline_->set_untraced(std::move(intervals));
    pipeline_->set_incomplete(incomplete_);
  }
  follow_tracer_after_resume();
  pipeline_->set_gpu_traced(gpu_traced_.load());
  pipeline_->ingest(batch);
  if (final_pass) {
    std::chrono::steady_clock::time_point deadline;
    {
      std::lock_guard<std::mutex> lock(loop_mu_);
      deadline = exit_deadline_;
    }
    pipeline_->finish(deadline);
  } else {
    // Without GPU tracing every event is submitted when it ends, so after an explicit flush the
    // data up to now is complete and needs no margin. With CUPTI the margin stays: GPU work of a
    // step that just ended may still be running, and judging it now would see false idle.
    const bool exact = exact_watermark && !gpu_traced_.load();
    const bool can_add = watermark <= std::numeric_limits<int64_t>::max() - pipeline_->margin_ns();
    pipeline_->advance(exact && can_add ? watermark + pipeline_->margin_ns() : watermark);
  }
  if (const auto& v = pipeline_->last_step()) {
    stepwatch_step_summary s{};
    s.struct_size = sizeof s;
    s.step = v->step;
    s.rank = v->rank;
    s.findings = pipeline_->last_step_findings();
    s.duration_ms = double(v->duration_ns()) / 1e6;
    s.gpu_busy_pct = 100.0 * v->duty_cycle();
    s.compute_ms = double(v->compute_ns) / 1e6;
    s.exposed_comm_ms = double(v->exposed_comm_ns) / 1e6;
    s.copy_only_ms = double(v->copy_only_ns) / 1e6;
    s.idle_input_ms = double(v->idle[IdleCause::kInput]) / 1e6;
    s.idle_sync_ms = double(v->idle[IdleCause::kSync]) / 1e6;
    s.idle_launch_ms = double(v->idle[IdleCause::kLaunch]) / 1e6;
    s.idle_host_ms = double(v->idle[IdleCause::kHost]) / 1e6;
    s.idle_other_ms = double(v->idle[IdleCause::kOther]) / 1e6;
    std::lock_guard<std::mutex> lock(last_mu_);
    last_ = s;
  }
  const auto losses = losses_.snapshot();
  if (final_pass) {
    SelfOverhead o;
    o.analysis_cpu_ns = thread_cpu_ns();
    o.wall_ns = now_ns() - start_ns_;
    const TracerStats st = cupti_tracer().stats();
    o.callback_ns = st.callback_ns;
    o.cupti_overhead_ns = st.cupti_overhead_ns;
    if (call_sites_) {
      const CallSiteStats cs = call_sites_->stats();
      o.call_sites_read = cs.python_sites + cs.native_sites;
      o.call_site_read_ns = cs.read_ns;
    }
    outputs_->write_exit_summary(o);
    if (gpu_traced_.load() && meter_->counts().total() > 0) log_->info(meter_->summary_line());
  } else if (gpu_traced_.load()) {
    log_flush_delivery();
  }
  if (metrics_ && metrics_->enabled()) {
    outputs_->metrics().set_losses(losses);
    metrics_->publish(outputs_->metrics().snapshot(), now_ns(), final_pass);
  }
  outputs_->flush();
}

// ---- C API -----------------------------------------------------------------------------------

// The step events of the C API: a mark at each begin (steps delimited by marks when the caller
// never ends them) and an explicit range at each end. Both are named "step" and carry the number.
Event LiveSession::step_event(EventKind kind, int64_t start_ns, int64_t end_ns) const {
  Event e;
  e.kind = kind;
  e.flags = kind == EventKind::kRange ? event_flags::kExplicitStep : uint8_t{0};
  e.name = step_name_;
  e.start_ns = start_ns;
  e.end_ns = end_ns;
  e.step = step_number_;
  e.thread = current_tid();
  return e;
}

int LiveSession::step_begin(int64_t step) noexcept {
  if (!enabled()) return STEPWATCH_ERROR_DISABLED;
  const int64_t t = now_ns();
  Event mark;
  {
    std::lock_guard<std::mutex> lock(step_mu_);
    // A begin without an end ends the previous step.
    if (step_open_) submit_control(step_event(EventKind::kRange, step_start_ns_, t));
    step_number_ = step >= 0 ? step : next_auto_step_;
    if (host_sampler_) host_sampler_->set_target(HostThread::current());  // the step-marking thread
    next_auto_step_ = step_number_ + 1;
    step_open_ = true;
    step_start_ns_ = t;
    mark = step_event(EventKind::kStepMark, t, t);
  }
  submit_control(mark);
  return STEPWATCH_OK;
}

int LiveSession::step_end() noexcept {
  if (!enabled()) return STEPWATCH_ERROR_DISABLED;
  const int64_t t = now_ns();
  Event range;
  {
    std::lock_guard<std::mutex> lock(step_mu_);
    if (!step_open_) return STEPWATCH_ERROR_NO_STEP;
    step_open_ = false;
    range = step_event(EventKind::kRange, step_start_ns_, t);
  }
  submit_control(range);
  return STEPWATCH_OK;
}

int LiveSession::phase_push(const char* name) noexcept {
  if (!enabled()) return STEPWATCH_ERROR_DISABLED;
  if (name == nullptr) return STEPWATCH_ERROR_INVALID_ARG;
  if (t_phase_depth >= kPhaseDepth) {
    ++t_phase_depth;  // counted so that pops stay paired; the frame itself is not recorded
    return STEPWATCH_OK;
  }
  t_phases[t_phase_depth++] = PhaseFrame{intern(name), now_ns()};
  return STEPWATCH_OK;
}

int LiveSession::phase_pop() noexcept {
  if (!enabled()) return STEPWATCH_ERROR_DISABLED;
  if (t_phase_depth == 0) {
    losses_.add(LossKind::kUnpairedRange, 1);
    return STEPWATCH_ERROR_NO_STEP;
  }
  const int depth = --t_phase_depth;
  if (depth >= kPhaseDepth) return STEPWATCH_OK;
  Event e;
  e.kind = EventKind::kRange;
  e.name = t_phases[depth].name;
  e.start_ns = t_phases[depth].start_ns;
  e.end_ns = now_ns();
  e.thread = current_tid();
  submit(e);
  return STEPWATCH_OK;
}

int LiveSession::flush() noexcept {
  if (!enabled()) return STEPWATCH_ERROR_DISABLED;
  try {
    if (gpu_traced_.load()) cupti_tracer().flush();
    std::unique_lock<std::mutex> lock(loop_mu_);
    const uint64_t target = cycles_ + 2;  // a full cycle that started after this call
    wake_ = true;
    flush_requested_ = true;
    loop_cv_.notify_one();
    done_cv_.wait_for(lock, std::chrono::milliseconds(std::max<int64_t>(4 * config_.flush_period_ms, 1000)),
                      [&] { return cycles_ >= target || finished_; });
  } catch (...) {
    return STEPWATCH_ERROR_INTERNAL;
  }
  return STEPWATCH_OK;
}

int LiveSession::pause() noexcept {
  if (!enabled() || !gpu_traced_.load()) return STEPWATCH_ERROR_DISABLED;
  try {
    {
      std::lock_guard<std::mutex> lock(pause_mu_);
      if (paused_) return STEPWATCH_OK;
      paused_ = true;
      resume_pending_ = false;  // a new pause/resume round takes over from a refused resume
      untraced_.emplace_back(now_ns(), INT64_MAX);
    }
    cupti_tracer().pause();
    log_->info("paused: CUPTI released for another client (stepwatch_resume takes it back)");
  } catch (...) {
    return STEPWATCH_ERROR_INTERNAL;
  }
  return STEPWATCH_OK;
}

int LiveSession::resume() noexcept {
  if (!enabled()) return STEPWATCH_ERROR_DISABLED;
  try {
    {
      std::lock_guard<std::mutex> lock(pause_mu_);
      if (!paused_) return STEPWATCH_OK;
      paused_ = false;
      untraced_.back().second = now_ns();
    }
    cupti_tracer().resume();
    if (cupti_tracer().state() == TracerState::kActive) {
      log_->info("resumed: GPU tracing again");
      return STEPWATCH_OK;
    }
    // Never a silent loss: the adapter said why (one line naming the holder); the steps from here
    // are timed, not judged, until CUPTI is free again — the adapter keeps retrying.
    {
      std::lock_guard<std::mutex> lock(pause_mu_);
      untraced_.back().second = INT64_MAX;
      resume_pending_ = true;
    }
    log_->info("could not take CUPTI back: steps are timed, not judged, until the other client lets go");
  } catch (...) {
    return STEPWATCH_ERROR_INTERNAL;
  }
  return STEPWATCH_OK;
}

void LiveSession::follow_tracer_after_resume() {
  std::lock_guard<std::mutex> lock(pause_mu_);
  if (!resume_pending_ || paused_) return;
  const TracerStats st = cupti_tracer().stats();
  if (cupti_tracer().state() != TracerState::kActive) return;
  // The tracer took CUPTI back by itself (after Kineto's teardown released it): traced again from then.
  untraced_.back().second = std::max(untraced_.back().first, st.active_since_ns);
  resume_pending_ = false;
}

void LiveSession::log_flush_delivery() {
  // Per flush, for a first GPU run: what CUPTI delivered and how far the watermark is held, next to
  // what was judged — a watermark problem reads differently from a detector problem.
  if (!logger_->should_log(spdlog::level::debug)) return;
  const TracerStats st = cupti_tracer().stats();
  if (st.flushes == last_flush_stats_.flushes) return;
  const JudgementMeter::Counts d = meter_->take_delta();
  logger_->debug(
      "[stepwatch][rank {}] flush: {} buffers, {} records delivered (buffer size {} KiB), {} calls waited for, "
      "watermark held {:.1f} ms; steps judged {}, incomplete {}, warm-up {}, untraced {}",
      config_.rank, st.buffers_completed - last_flush_stats_.buffers_completed,
      st.records - last_flush_stats_.records, st.last_buffer_bytes / 1024, st.pending_calls,
      double(st.watermark_hold_ns) / 1e6, d.judged, d.incomplete, d.warmup, d.untraced);
  last_flush_stats_ = st;
}

int LiveSession::last_step(stepwatch_step_summary* out) noexcept {
  if (!enabled()) return STEPWATCH_ERROR_DISABLED;
  if (out == nullptr || out->struct_size < sizeof(size_t)) return STEPWATCH_ERROR_INVALID_ARG;
  std::lock_guard<std::mutex> lock(last_mu_);
  if (!last_) return STEPWATCH_ERROR_NO_STEP;
  // Copy only what the caller's struct has room for (older, smaller structs keep working).
  const size_t n = std::min(out->struct_size, sizeof(stepwatch_step_summary));
  const size_t caller_size = out->struct_size;
  std::memcpy(out, &*last_, n);
  out->struct_size = caller_size;
  return STEPWATCH_OK;
}

// Production NVTX events go to the process-wide session (nvtx/nvtx_injection.h).
EventSink* nvtx_event_sink() noexcept { return LiveSession::get(); }
void nvtx_injection_started() noexcept { note_injected(); }

}  // namespace stepwatch::live

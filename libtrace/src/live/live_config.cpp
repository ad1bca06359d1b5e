#include "live/live_config.h"

#include <charconv>
#include <cstring>
#include <cstdlib>
#include <regex>
#include <set>
#include <sstream>

#include "stepwatch/detectors/registry.h"
#include "stepwatch/detectors/thresholds.h"

namespace stepwatch::live {
namespace {

const std::vector<EnvVarDoc> kDocs = {
    {"STEPWATCH_ENABLE", "", "unset: active when injected; 1 turns stepwatch on where it is only linked or loaded by the shim; "
                         "0 turns it off in every case (the library stays loaded and does nothing)"},
    {"STEPWATCH_OUTPUT_DIR", "./stepwatch-out", "where steps.jsonl, findings.jsonl, dumps and the exit summary go "
                                                "(one subfolder per rank and process: rank<R>-pid<P>)"},
    {"STEPWATCH_LOG_LEVEL", "info", "trace, debug, info, warn, error or off (the job-log lines)"},
    {"STEPWATCH_FLUSH_MS", "200", "how often CUPTI activity buffers are flushed and complete steps judged (100-5000)"},
    {"STEPWATCH_EXIT_TIMEOUT_MS", "10000", "the most time stepwatch takes at process exit (final flush, last steps, "
                                           "exit summary; 100-600000): steps not judged by then are counted"},
    {"STEPWATCH_WARMUP_STEPS", "2", "first steps measured but not judged (warm-up, compile, autotune)"},
    {"STEPWATCH_STEP_PATTERN", kDefaultStepPattern, "regex for NVTX/profiler range names that are steps"},
    {"STEPWATCH_DATA_PATTERN", kDefaultDataPattern, "regex for range/phase names that are data loading"},
    {"STEPWATCH_MIN_PCT", "5", "a step is faulty when a cost is at least this % of it ..."},
    {"STEPWATCH_MIN_MS", "1", "... and at least this many ms"},
    {"STEPWATCH_DISABLE", "", "comma-separated detector ids to turn off"},
    {"STEPWATCH_THRESHOLDS", "", "one detector's own rule, comma-separated ID:PCT:MS[:CRITICAL_PCT] (e.g. "
                                 "hidden_sync:10:2); the others keep STEPWATCH_MIN_PCT / STEPWATCH_MIN_MS"},
    {"STEPWATCH_SUSTAIN", "3/5", "the log reports a pattern once it fired on N of the last M judged steps"},
    {"STEPWATCH_PERSIST_EVERY", "50", "while a pattern persists, one 'persists' line every N judged steps"},
    {"STEPWATCH_RING_STEPS", "8", "steps kept for flight-recorder dumps"},
    {"STEPWATCH_MAX_DUMPS", "5", "flight-recorder dumps per process (0 = none)"},
    {"STEPWATCH_MAX_DUMP_MB", "64", "cap on the bytes of all dumps together"},
    {"STEPWATCH_MEMORY_MB", "64", "cap on stepwatch's own memory (queues, retained events, names): 8 to 1048576; "
                                 "a value outside uses the nearest bound (and says so)"},
    {"STEPWATCH_CUPTI_BUFFER_KB", "4096", "size of one CUPTI activity buffer"},
    {"STEPWATCH_CUPTI_MAX_BUFFERS", "64", "cap on CUPTI activity buffers held at once"},
    {"STEPWATCH_CUPTI_PATH", "", "explicit path of libcupti.so.13 (default: the loader's search, then the CUDA toolkit)"},
    {"STEPWATCH_HOST_SAMPLE_HZ", "0", "rate of the /proc sampler of the launching thread's state (blocked in "
                                      "read/poll/futex… while the GPU idles = input wait); 0 = off, at most 200"},
    {"STEPWATCH_CALL_SITES", "1", "0 turns off reading where each blocking call was made (the innermost user Python "
     "frame, read without the GIL, or the native caller; ~0.5 us / ~4 us per blocking call, nothing per launch)"},
    {"STEPWATCH_NVML", "1", "0 turns off NVML sampling (SM clock, temperature, power, clock event reasons at "
                            "10 Hz: the throttle detector's confirming evidence)"},
    {"STEPWATCH_NVML_PATH", "libnvidia-ml.so.1", "the NVML library to load"},
    {"STEPWATCH_METRICS_PORT", "", "serve Prometheus metrics on this port + LOCAL_RANK at /metrics (unset: no endpoint)"},
    {"STEPWATCH_METRICS_ADDR", "127.0.0.1", "address the metrics endpoint binds (0.0.0.0 exposes it to the network)"},
    {"STEPWATCH_METRICS_TEXTFILE", "", "write metrics for node_exporter's textfile collector: X.prom becomes X.rank<R>.prom"},
    {"STEPWATCH_METRICS_INTERVAL_S", "15", "how often the metrics textfile is rewritten (1-3600 s; also at exit)"},
};

class Reader {
 public:
  Reader(const std::function<const char*(const char*)>& getenv, std::vector<std::string>& problems)
      : getenv_(getenv), problems_(problems) {}

  const char* raw(const char* name) const {
    const char* v = getenv_(name);
    return (v != nullptr && *v != '\0') ? v : nullptr;
  }

  // What a value outside lo..hi becomes: the default, or (for a cap the user meant to lower)
  // the nearest bound, which is closer to what was asked for than the default.
  enum class OutOfRange { kDefault, kNearestBound };

  template <typename T>
  void integer(const char* name, T& out, T lo, T hi, T scale = 1, OutOfRange out_of_range = OutOfRange::kDefault) {
    const char* v = raw(name);
    if (!v) return;
    long long parsed = 0;
    const char* end = v + std::strlen(v);
    auto [ptr, ec] = std::from_chars(v, end, parsed);
    if (ec != std::errc() || ptr != end) {
      problem(name, v, "not an integer", out / scale);
      return;
    }
    const bool low = parsed < static_cast<long long>(lo), high = parsed > static_cast<long long>(hi);
    if ((low || high) && out_of_range == OutOfRange::kNearestBound) {
      const T bound = low ? lo : hi;
      problem(name, v, std::string(low ? "below the minimum " : "above the maximum ") + std::to_string(bound), bound);
      out = bound * scale;
      return;
    }
    if (low || high) {
      problem(name, v, "out of range " + std::to_string(lo) + ".." + std::to_string(hi), out / scale);
      return;
    }
    out = static_cast<T>(parsed) * scale;
  }

  void real(const char* name, double& out, double lo, double hi) {
    const char* v = raw(name);
    if (!v) return;
    char* end = nullptr;
    const double parsed = std::strtod(v, &end);
    if (end == v || *end != '\0' || !(parsed >= lo && parsed <= hi)) {
      std::ostringstream d;
      d << out;
      problems_.push_back(std::string(name) + "=" + v + ": not a number in " + std::to_string(lo) + ".." +
                          std::to_string(hi) + "; using " + d.str());
      return;
    }
    out = parsed;
  }

  void pattern(const char* name, std::string& out) {
    const char* v = raw(name);
    if (!v) return;
    const std::string why = check_pattern(v);
    if (why.empty()) {
      out = v;
    } else {
      problems_.push_back(std::string(name) + "=" + v + ": " + why + "; using the default");
    }
  }

  template <typename T>
  void problem(const char* name, const char* value, const std::string& why, T fallback) {
    report(name, std::string(name) + "=" + value + ": " + why + "; using " + std::to_string(fallback));
  }

  // One line per variable, even when two settings read it (LOCAL_RANK is a rank fallback and the
  // node-local rank): the first reader says what is wrong with it.
  void report(const std::string& name, std::string line) {
    if (!reported_.insert(name).second) return;
    problems_.push_back(std::move(line));
  }

 private:
  const std::function<const char*(const char*)>& getenv_;
  std::vector<std::string>& problems_;
  std::set<std::string> reported_;
};

}  // namespace

const std::vector<EnvVarDoc>& documented_env_vars() { return kDocs; }

LiveConfig read_live_config(const std::function<const char*(const char*)>& getenv,
                            std::vector<std::string>& problems) {
  LiveConfig c;
  Reader r(getenv, problems);

  if (const char* v = r.raw("STEPWATCH_ENABLE")) {
    const std::string s(v);
    if (s == "0" || s == "false" || s == "off" || s == "no") c.enabled = false;
    else if (!(s == "1" || s == "true" || s == "on" || s == "yes"))
      problems.push_back("STEPWATCH_ENABLE=" + s + ": expected 0 or 1; using 1");
  }
  if (const char* v = r.raw("STEPWATCH_OUTPUT_DIR")) c.output_dir = v;
  if (const char* v = r.raw("STEPWATCH_LOG_LEVEL")) {
    const std::string s(v);
    static const char* levels[] = {"trace", "debug", "info", "warn", "warning", "error", "off"};
    bool ok = false;
    for (const char* l : levels) ok |= s == l;
    if (ok) c.log_level = s == "warning" ? "warn" : s;
    else problems.push_back("STEPWATCH_LOG_LEVEL=" + s + ": expected trace|debug|info|warn|error|off; using info");
  }
  r.integer<int64_t>("STEPWATCH_FLUSH_MS", c.flush_period_ms, 100, 5000);
  r.integer<int64_t>("STEPWATCH_EXIT_TIMEOUT_MS", c.exit_timeout_ms, 100, 600000);
  r.integer<int>("STEPWATCH_WARMUP_STEPS", c.warmup_steps, 0, 1000000);
  r.integer<int>("STEPWATCH_RING_STEPS", c.ring_steps, 1, 1000);
  r.integer<int>("STEPWATCH_MAX_DUMPS", c.max_dumps, 0, 10000);
  r.integer<int64_t>("STEPWATCH_MAX_DUMP_MB", c.max_dump_bytes, 1, 1 << 20, 1 << 20);
  // Below the floor: the floor (the smallest cap stepwatch works in), not the default 64 — someone
  // who asked for 4 MB wants as little as possible.
  r.integer<int64_t>("STEPWATCH_MEMORY_MB", c.memory_cap_bytes, 8, 1 << 20, 1 << 20, Reader::OutOfRange::kNearestBound);
  r.integer<int64_t>("STEPWATCH_CUPTI_BUFFER_KB", c.cupti_buffer_bytes, 64, 1 << 20, 1024);
  r.integer<int>("STEPWATCH_CUPTI_MAX_BUFFERS", c.cupti_max_buffers, 2, 100000);
  r.integer<int>("STEPWATCH_PERSIST_EVERY", c.persist_every, 1, 1000000);
  if (const char* v = r.raw("STEPWATCH_SUSTAIN")) {
    int n = 0, m = 0;
    char slash = 0;
    std::istringstream in(v);
    if ((in >> n >> slash >> m) && slash == '/' && in.peek() == EOF && n >= 1 && m >= n && m <= 1000) {
      c.sustain_min = n;
      c.sustain_window = m;
    } else {
      problems.push_back(std::string("STEPWATCH_SUSTAIN=") + v + ": expected N/M with 1 <= N <= M <= 1000; using 3/5");
    }
  }
  if (const char* v = r.raw("STEPWATCH_CUPTI_PATH")) c.cupti_path = v;
  if (const char* v = r.raw("STEPWATCH_HOST_SAMPLE_HZ")) {
    int hz = 0;
    const char* end = v + std::strlen(v);
    auto [ptr, ec] = std::from_chars(v, end, hz);
    if (ec == std::errc::result_out_of_range || (ec == std::errc() && ptr == end && hz > 200)) {
      problems.push_back(std::string("STEPWATCH_HOST_SAMPLE_HZ=") + v + ": above 200; using 200");
      c.host_sample_hz = 200;
    } else if (ec != std::errc() || ptr != end || hz < 0) {
      problems.push_back(std::string("STEPWATCH_HOST_SAMPLE_HZ=") + v + ": not a rate in 0..200; using 0 (off)");
    } else {
      c.host_sample_hz = hz;
    }
  }
  if (const char* v = r.raw("STEPWATCH_CALL_SITES")) {
    const std::string s(v);
    if (s == "0" || s == "false" || s == "off" || s == "no") c.call_sites = false;
    else if (!(s == "1" || s == "true" || s == "on" || s == "yes"))
      problems.push_back("STEPWATCH_CALL_SITES=" + s + ": expected 0 or 1; using 1");
  }
  if (const char* v = r.raw("STEPWATCH_NVML")) {
    const std::string s(v);
    if (s == "0" || s == "false" || s == "off" || s == "no") c.nvml = false;
    else if (!(s == "1" || s == "true" || s == "on" || s == "yes"))
      problems.push_back("STEPWATCH_NVML=" + s + ": expected 0 or 1; using 1");
  }
  if (const char* v = r.raw("STEPWATCH_NVML_PATH")) c.nvml_path = v;
  if (const char* v = r.raw("CUDA_VISIBLE_DEVICES")) c.visible_devices = v;

  r.pattern("STEPWATCH_STEP_PATTERN", c.analysis.step_pattern);
  r.pattern("STEPWATCH_DATA_PATTERN", c.analysis.data_pattern);
  r.real("STEPWATCH_MIN_PCT", c.analysis.default_thresholds.min_pct, 0.0, 100.0);
  r.real("STEPWATCH_MIN_MS", c.analysis.default_thresholds.min_ms, 0.0, 1e9);
  if (const char* v = r.raw("STEPWATCH_DISABLE")) {
    std::string list(v);
    size_t pos = 0;
    while (pos <= list.size()) {
      size_t comma = list.find(',', pos);
      if (comma == std::string::npos) comma = list.size();
      std::string id = list.substr(pos, comma - pos);
      while (!id.empty() && id.front() == ' ') id.erase(id.begin());
      while (!id.empty() && id.back() == ' ') id.pop_back();
      if (!id.empty()) {
        bool known = false;
        for (const DetectorInfo& d : registered_detectors()) known |= d.id == id;
        if (known) c.analysis.enabled[id] = false;
        else problems.push_back("STEPWATCH_DISABLE=" + list + ": unknown detector '" + id + "' ignored (see `stepwatch detectors`)");
      }
      pos = comma + 1;
    }
  }
  // Per-detector thresholds, after the common ones (an entry starts from them).
  if (const char* v = r.raw("STEPWATCH_THRESHOLDS")) {
    std::string_view list(v);
    for (size_t pos = 0; pos <= list.size();) {
      size_t comma = list.find(',', pos);
      if (comma == std::string_view::npos) comma = list.size();
      std::string_view spec = list.substr(pos, comma - pos);
      while (!spec.empty() && spec.front() == ' ') spec.remove_prefix(1);
      while (!spec.empty() && spec.back() == ' ') spec.remove_suffix(1);
      if (!spec.empty()) {
        if (const std::string why = apply_threshold(spec, c.analysis); !why.empty()) {
          problems.push_back("STEPWATCH_THRESHOLDS=" + std::string(list) + ": " + why +
                             "; that detector keeps the common thresholds");
        }
      }
      pos = comma + 1;
    }
  }
  c.analysis.warmup_steps = c.warmup_steps;

  // Rank: the launchers' conventions, most specific first.
  for (const char* name : {"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "PMI_RANK", "LOCAL_RANK"}) {
    const char* v = r.raw(name);
    if (!v) continue;
    int rank = 0;
    const char* end = v + std::strlen(v);
    auto [ptr, ec] = std::from_chars(v, end, rank);
    if (ec == std::errc() && ptr == end && rank >= 0) {
      c.rank = rank;
      break;
    }
    r.report(name, std::string(name) + "=" + v + ": not a rank number; ignored");
  }
  // The rank on this node: offsets the metrics port so that ranks sharing a node do not collide.
  for (const char* name : {"LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK"}) {
    if (r.raw(name) == nullptr) continue;
    r.integer<int>(name, c.local_rank, 0, 65535);
    break;
  }
  r.integer<int>("STEPWATCH_METRICS_PORT", c.metrics_port, 0, 65535);
  if (c.metrics_port > 0 && c.metrics_port + c.local_rank > 65535) {
    problems.push_back("STEPWATCH_METRICS_PORT=" + std::to_string(c.metrics_port) + " + LOCAL_RANK " +
                       std::to_string(c.local_rank) + " is past 65535; no metrics endpoint");
    c.metrics_port = 0;
  }
  if (const char* v = r.raw("STEPWATCH_METRICS_ADDR")) c.metrics_addr = v;
  if (const char* v = r.raw("STEPWATCH_METRICS_TEXTFILE")) c.metrics_textfile = v;
  r.integer<int>("STEPWATCH_METRICS_INTERVAL_S", c.metrics_interval_s, 1, 3600);
  return c;
}

}  // namespace stepwatch::live

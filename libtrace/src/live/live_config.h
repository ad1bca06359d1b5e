// The live library's configuration: read once from STEPWATCH_* environment variables at
// start-up (no other code calls getenv). A bad value gives one clear line and the default.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "stepwatch/core/config.h"

namespace stepwatch::live {

struct LiveConfig {
  bool enabled = true;                     // STEPWATCH_ENABLE (0 = stand down entirely)
  std::string output_dir = "./stepwatch-out";  // STEPWATCH_OUTPUT_DIR
  std::string log_level = "info";          // STEPWATCH_LOG_LEVEL: trace|debug|info|warn|error|off
  int64_t flush_period_ms = 200;           // STEPWATCH_FLUSH_MS (100..5000)
  int64_t exit_timeout_ms = 10000;         // STEPWATCH_EXIT_TIMEOUT_MS: the bound on stepwatch's work at exit
  int warmup_steps = 2;                    // STEPWATCH_WARMUP_STEPS
  int ring_steps = 8;                      // STEPWATCH_RING_STEPS: steps kept for flight-recorder dumps
  int max_dumps = 5;                       // STEPWATCH_MAX_DUMPS (0 = no dumps)
  int64_t max_dump_bytes = 64ll << 20;     // STEPWATCH_MAX_DUMP_MB
  int64_t memory_cap_bytes = 64ll << 20;   // STEPWATCH_MEMORY_MB: our queues, ring and names
  int64_t cupti_buffer_bytes = 4ll << 20;  // STEPWATCH_CUPTI_BUFFER_KB: one activity buffer
  int cupti_max_buffers = 64;              // STEPWATCH_CUPTI_MAX_BUFFERS: the pool's cap
  int sustain_window = 5;                  // STEPWATCH_SUSTAIN: a pattern is sustained at
  int sustain_min = 3;                     //   >= sustain_min of the last sustain_window judged steps
  int persist_every = 50;                  // STEPWATCH_PERSIST_EVERY: "persists" line every N steps
  std::string cupti_path;                  // STEPWATCH_CUPTI_PATH: an explicit libcupti.so to load
  int host_sample_hz = 0;                  // STEPWATCH_HOST_SAMPLE_HZ: /proc host-state sampler (0 = off, <= 200)
  bool call_sites = true;                  // STEPWATCH_CALL_SITES: 0 = blocking calls are not sited
  bool nvml = true;                        // STEPWATCH_NVML: 0 = no NVML clock/power sampling
  std::string nvml_path = "libnvidia-ml.so.1";  // STEPWATCH_NVML_PATH
  std::string visible_devices;             // CUDA_VISIBLE_DEVICES: the GPUs NVML samples (CUDA order)
  int rank = 0;                            // RANK, LOCAL_RANK, SLURM_PROCID, OMPI_COMM_WORLD_RANK
  int local_rank = 0;                      // LOCAL_RANK, SLURM_LOCALID, OMPI_COMM_WORLD_LOCAL_RANK
  // Prometheus metrics, opt-in (live/metrics_exporter.h).
  int metrics_port = 0;                    // STEPWATCH_METRICS_PORT: 0 = no endpoint; + local_rank
  std::string metrics_addr = "127.0.0.1";  // STEPWATCH_METRICS_ADDR: the address the endpoint binds
  std::string metrics_textfile;            // STEPWATCH_METRICS_TEXTFILE: node_exporter textfile (.rank<R>.prom)
  int metrics_interval_s = 15;             // STEPWATCH_METRICS_INTERVAL_S: textfile rewrite period
  AnalysisConfig analysis;                 // STEPWATCH_STEP_PATTERN, STEPWATCH_DATA_PATTERN,
                                           // STEPWATCH_MIN_PCT, STEPWATCH_MIN_MS, STEPWATCH_DISABLE
};

// Reads the environment through `getenv` (injectable for tests). Every problem is appended to
// `problems` as one human line ("STEPWATCH_FLUSH_MS=abc: not a number; using 200").
LiveConfig read_live_config(const std::function<const char*(const char*)>& getenv,
                            std::vector<std::string>& problems);

// The documented variables, for the README and `stepwatch run --help`.
struct EnvVarDoc {
  const char* name;
  const char* default_value;
  const char* meaning;
};
const std::vector<EnvVarDoc>& documented_env_vars();

}  // namespace stepwatch::live

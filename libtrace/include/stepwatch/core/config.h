// Analysis configuration shared by the live library and `stepwatch analyze`.
// The live library fills it once from STEPWATCH_* variables; the CLI from its flags.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace stepwatch {

// Default step pattern, as ARCHITECTURE.md states it, and the serving engines' per-iteration ranges:
// SGLang's per-forward span, `step[DECODE bs=32]` / `step[EXTEND bs=15 toks=15360]`
// (sgl-project/sglang, python/sglang/srt/utils/profile_utils.py, build_step_span_name, wrapped around
// ModelRunner.forward); vLLM V1's per-iteration annotation around execute_model,
// `execute_context_1(888)_generation_31(31)` (context/generation requests and their tokens), earlier
// `execute_new_2_cached_30` (vllm/v1/worker/gpu_worker.py, Worker.annotate_profile). Other engines'
// forms are added only with such evidence (docs/detectors.md "Where steps come from").
inline constexpr const char* kDefaultStepPattern =
    R"(^(ProfilerStep#\d+|(step|train_step|iteration)([ _#:]?\d+)?|step\[[^\]]*\]|)"
    R"(execute_context_\d+\([^)]*\)_generation_\d+\([^)]*\)|execute_new_\d+_cached_\d+)$)";
inline constexpr const char* kDefaultDataPattern = R"(DataLoader|dataloader|^data$)";

// Checks a user-supplied name pattern (step or data pattern) before it is compiled: empty when
// usable, else one line saying why not. Besides std::regex's own syntax errors it refuses what
// the standard library's regex compiler mishandles on hostile input (back-references, repetition
// counts or patterns too large): found by fuzzing the configuration reader.
std::string check_pattern(const std::string& pattern);

struct DetectorThresholds {
  double min_pct = 5.0;  // judged faulty when cost >= min_pct of the step ...
  double min_ms = 1.0;   // ... and cost >= min_ms
  double critical_pct = 25.0;
};

struct AnalysisConfig {
  std::string step_pattern = kDefaultStepPattern;
  std::string data_pattern = kDefaultDataPattern;
  // Rule 2: a blocking call that returned at or after (gap start - slack) caused the gap.
  int64_t sync_slack_ns = 50'000;
  DetectorThresholds default_thresholds;
  std::map<std::string, DetectorThresholds> per_detector;  // detector id -> override
  std::map<std::string, bool> enabled;                     // detector id -> on/off (absent = on)
  int warmup_steps = 0;  // offline: every step is judged

  const DetectorThresholds& thresholds_for(const std::string& detector_id) const {
    auto it = per_detector.find(detector_id);
    return it == per_detector.end() ? default_thresholds : it->second;
  }
  bool is_enabled(const std::string& detector_id) const {
    auto it = enabled.find(detector_id);
    return it == enabled.end() || it->second;
  }
};

}  // namespace stepwatch

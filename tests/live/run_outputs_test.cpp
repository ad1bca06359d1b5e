// The run folder's JSONL files: every line is on disk, whole, as soon as it is written — a job
// killed by SIGTERM runs no atexit and no flush, and must not leave a torn or missing line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <spdlog/logger.h>

#include "live/outputs/log_reporter.h"
#include "live/outputs/run_outputs.h"

namespace stepwatch::live {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> lines_on_disk(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> out;
  size_t at = 0;
  while (at < text.size()) {
    const size_t nl = text.find('\n', at);
    EXPECT_NE(nl, std::string::npos) << "a torn last line: " << text.substr(at, 80);
    if (nl == std::string::npos) break;
    out.push_back(text.substr(at, nl - at));
    at = nl + 1;
  }
  return out;
}

TEST(RunOutputs, EachLineIsOnDiskWholeWithoutAFlush) {
  const fs::path dir = fs::temp_directory_path() / ("sw_outputs_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  LiveConfig config;
  const fs::path log_path = dir.string() + ".log";
  auto logger = make_job_logger("info", log_path.string());
  LogReporter log(logger, config);
  NameTable names;
  {
    RunOutputs outputs(config, (dir / "rank0-pid1").string(), log, names);
    for (int64_t n = 0; n < 3; ++n) {
      StepView v;
      v.step = n;
      v.start_ns = n * 50'000'000;
      v.end_ns = v.start_ns + 40'000'000;
      Finding f;
      f.detector = "hidden_sync";
      f.step = n;
      f.message = std::string(3000, 'x');  // a long line: several of them overflow a default stdio buffer
      const std::vector<Finding> findings = {f};
      outputs.on_step(v, StepStatus::kJudged, findings);
      // No flush(): what a reader (or a SIGTERM) sees now.
      const auto steps = lines_on_disk(dir / "rank0-pid1" / "steps.jsonl");
      const auto found = lines_on_disk(dir / "rank0-pid1" / "findings.jsonl");
      ASSERT_EQ(steps.size(), static_cast<size_t>(n + 2)) << "meta + every step so far";
      ASSERT_EQ(found.size(), static_cast<size_t>(n + 2)) << "meta + every finding so far";
      for (const auto& l : steps) EXPECT_TRUE(nlohmann::json::accept(l)) << l.substr(0, 80);
      for (const auto& l : found) EXPECT_TRUE(nlohmann::json::accept(l)) << l.substr(0, 80);
      EXPECT_EQ(nlohmann::json::parse(steps.back()).value("step", -1), n);
    }
  }
  fs::remove_all(dir);
  fs::remove(log_path);
}

}  // namespace
}  // namespace stepwatch::live

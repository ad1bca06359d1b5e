// Running the end-to-end driver (tests/live/e2e/e2e_driver.cpp): the real libstepwatch.so in a
// simulated training process with the fake libcupti, and reading back what it wrote. Shared by
// e2e_test.cpp (replayed synthetic traces) and e2e_faithful_test.cpp (the faithful model).
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace stepwatch::test_support {

namespace fs = std::filesystem;

struct RunResult {
  int exit_code = -1;
  std::string log;  // stderr: the job log
  std::string out;  // stdout
  fs::path run_dir; // <output>/rank0-pid<P>
  std::vector<nlohmann::json> findings;
  std::vector<nlohmann::json> steps;
};

inline std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::vector<nlohmann::json> read_jsonl(const fs::path& p) {
  std::vector<nlohmann::json> out;
  std::ifstream in(p);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  }
  return out;
}

// Every run's folder, removed when the test program ends.
class RemoveRunDirs : public ::testing::Environment {
 public:
  static std::vector<fs::path>& dirs() {
    static std::vector<fs::path> d;
    return d;
  }
  void TearDown() override {
    std::error_code ec;
    for (const fs::path& d : dirs()) fs::remove_all(d, ec);
  }
};
inline std::vector<fs::path>& run_dirs() {
  static const bool registered = [] {
    ::testing::AddGlobalTestEnvironment(new RemoveRunDirs);
    return true;
  }();
  (void)registered;
  return RemoveRunDirs::dirs();
}

struct DriverOptions {
  std::string mode = "normal";
  std::string extra_env;
  int watchdog_s = 60;        // coreutils timeout (exit 124 when it fires): a hang fails the test
  bool fast_flush = true;     // STEPWATCH_FLUSH_MS=100; false: the production default (200)
};

inline RunResult run_driver(const std::string& scenario, int steps, const DriverOptions& o) {
  static int counter = 0;
  const fs::path dir =
      fs::temp_directory_path() / ("sw_e2e_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  fs::remove_all(dir);
  fs::create_directories(dir);
  run_dirs().push_back(dir);
  const std::string cmd = "env STEPWATCH_OUTPUT_DIR=" + (dir / "out").string() +
                          (o.fast_flush ? " STEPWATCH_FLUSH_MS=100 " : " ") + o.extra_env + " timeout " +
                          std::to_string(o.watchdog_s) + " " STEPWATCH_E2E_DRIVER " " STEPWATCH_INJECT_SO
                          " " STEPWATCH_FAKE_CUPTI_SO " " +
                          scenario + " " + std::to_string(steps) + " " + o.mode + " >" + (dir / "stdout").string() +
                          " 2>" + (dir / "stderr").string();
  RunResult r;
  const int status = std::system(cmd.c_str());
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.log = slurp(dir / "stderr");
  r.out = slurp(dir / "stdout");
  if (fs::exists(dir / "out")) {
    for (const auto& e : fs::directory_iterator(dir / "out")) r.run_dir = e.path();
  }
  if (!r.run_dir.empty()) {
    r.findings = read_jsonl(r.run_dir / "findings.jsonl");
    r.steps = read_jsonl(r.run_dir / "steps.jsonl");
  }
  return r;
}

inline RunResult run_driver(const std::string& scenario, int steps, const std::string& mode = "normal",
                            const std::string& extra_env = "", int watchdog_s = 60) {
  DriverOptions o;
  o.mode = mode;
  o.extra_env = extra_env;
  o.watchdog_s = watchdog_s;
  return run_driver(scenario, steps, o);
}

// Lines of a JSONL output that are not one complete JSON object (a torn last line included).
inline std::vector<std::string> torn_lines(const fs::path& p) {
  std::vector<std::string> bad;
  const std::string text = slurp(p);
  if (!text.empty() && text.back() != '\n') bad.push_back("(no newline at the end)");
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!nlohmann::json::accept(line) || line.empty() || line.front() != '{') bad.push_back(line);
  }
  return bad;
}

// What a crash or a sanitizer leaves in the job log.
inline bool has_crash_report(const std::string& log) {
  for (const char* marker : {"AddressSanitizer", "ThreadSanitizer", "LeakSanitizer", "runtime error:",
                             "terminate called", "Segmentation fault", "Aborted"}) {
    if (log.find(marker) != std::string::npos) return true;
  }
  return false;
}

inline size_t count_detector(const RunResult& r, const std::string& id) {
  size_t n = 0;
  for (const auto& f : r.findings) n += f.value("type", "") == "finding" && f.value("detector", "") == id ? 1 : 0;
  return n;
}

}  // namespace stepwatch::test_support

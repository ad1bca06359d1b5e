// The real NVTX injection path: an nvtx3 program (tests/live/nvtx/nvtx_app.cpp) runs as a child
// with NVTX_INJECTION64_PATH set to a test library built from libtrace/src/nvtx/ whose sink writes
// every event to a file (tests/live/nvtx/nvtx_file_sink.cpp). No GPU, no CUDA: NVTX needs neither.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/event_sink.h"
#include "stepwatch/core/event.h"

extern char** environ;

namespace stepwatch::live {
namespace {

#if defined(STEPWATCH_NVTX_TEST_APP) && defined(STEPWATCH_NVTX_TEST_INJECTION)

struct RangeLine {
  std::string name;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  uint32_t thread = 0;
  uint64_t bytes = 0;
  int collective = 0;
};

struct AppRun {
  int exit_code = -1;
  std::vector<RangeLine> ranges;
  std::map<int, uint64_t> losses;       // LossKind -> count
  std::vector<uint64_t> stats;          // ranges, unpaired, modules, marks, too_deep
  std::map<std::string, uint32_t> tids;  // what the program printed: "<key> <number>" (thread ids, results)
  bool output_file_exists = false;
};

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream stream(line);
  std::string field;
  while (std::getline(stream, field, '\t')) fields.push_back(field);
  return fields;
}

// Runs the app with the injection variables (plus `extra_env`), stdout to a file, and parses
// both files. posix_spawn: no fork of a multi-threaded gtest process.
AppRun run_program(const std::string& program_path, const std::vector<std::string>& args,
                   const std::vector<std::string>& extra_env) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("stepwatch_nvtx_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::filesystem::path events_path = dir / "events.tsv";
  const std::filesystem::path stdout_path = dir / "stdout.txt";
  std::filesystem::remove(events_path);

  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    if (entry.rfind("NVTX_INJECTION64_PATH=", 0) == 0 || entry.rfind("STEPWATCH_NVTX_TEST_", 0) == 0 ||
        entry.rfind("NCCL_NVTX_DISABLE=", 0) == 0) {
      continue;
    }
    env.push_back(entry);
  }
  env.push_back(std::string("NVTX_INJECTION64_PATH=") + STEPWATCH_NVTX_TEST_INJECTION);
  env.push_back("STEPWATCH_NVTX_TEST_OUT=" + events_path.string());
  for (const auto& e : extra_env) env.push_back(e);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  std::string program = program_path;
  std::vector<std::string> arg_storage = args;
  std::vector<char*> argv{program.data()};
  for (auto& arg : arg_storage) argv.push_back(arg.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);

  AppRun run;
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    ADD_FAILURE() << "posix_spawn " << program << " failed: " << spawned;
    return run;
  }
  int status = 0;
  waitpid(pid, &status, 0);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);

  std::ifstream out(stdout_path);
  std::string role;
  uint64_t value = 0;
  while (out >> role >> value) run.tids[role] = static_cast<uint32_t>(value);

  run.output_file_exists = std::filesystem::exists(events_path);
  std::ifstream events(events_path);
  std::string line;
  while (std::getline(events, line)) {
    const auto fields = split_tabs(line);
    if (fields.empty()) continue;
    if (fields[0] == "range" && fields.size() == 7) {
      run.ranges.push_back({fields[1], std::stoll(fields[2]), std::stoll(fields[3]),
                            static_cast<uint32_t>(std::stoul(fields[4])), std::stoull(fields[5]),
                            std::stoi(fields[6])});
    } else if (fields[0] == "loss" && fields.size() == 3) {
      run.losses[std::stoi(fields[1])] += std::stoull(fields[2]);
    } else if (fields[0] == "stats" && fields.size() == 6) {
      for (size_t i = 1; i < fields.size(); ++i) run.stats.push_back(std::stoull(fields[i]));
    } else {
      ADD_FAILURE() << "unexpected line: " << line;
    }
  }
  std::filesystem::remove_all(dir);
  return run;
}

AppRun run_app(const std::vector<std::string>& extra_env) { return run_program(STEPWATCH_NVTX_TEST_APP, {}, extra_env); }

const RangeLine* find_range(const AppRun& run, const std::string& name) {
  for (const auto& range : run.ranges) {
    if (range.name == name) return &range;
  }
  return nullptr;
}

TEST(NvtxInjection, AppRangesReachTheSinkThroughNvtxInjection) {
  const AppRun run = run_app({});
  ASSERT_EQ(run.exit_code, 0);
  ASSERT_TRUE(run.tids.count("main") && run.tids.count("ender") && run.tids.count("worker"));
  const uint32_t main_tid = run.tids.at("main");

  // Push/pop nesting on the main thread.
  const RangeLine* outer = find_range(run, "outer");
  const RangeLine* inner = find_range(run, "inner");
  ASSERT_NE(outer, nullptr);
  ASSERT_NE(inner, nullptr);
  EXPECT_EQ(outer->thread, main_tid);
  EXPECT_EQ(inner->thread, main_tid);
  EXPECT_LE(outer->start_ns, inner->start_ns);
  EXPECT_LE(inner->start_ns, inner->end_ns);
  EXPECT_LE(inner->end_ns, outer->end_ns);

  // NCCL-style: domain "NCCL", a registered string, the payload's message size.
  const RangeLine* all_reduce = find_range(run, "NCCL:ncclAllReduce");
  ASSERT_NE(all_reduce, nullptr);
  EXPECT_EQ(all_reduce->bytes, uint64_t{1} << 20);
  EXPECT_EQ(all_reduce->collective, static_cast<int>(CollectiveType::kAllReduce));
  const RangeLine* all_gather = find_range(run, "NCCL:ncclAllGather");
  ASSERT_NE(all_gather, nullptr) << "nvtx3.hpp scoped_range_in with a registered string";
  EXPECT_EQ(all_gather->collective, static_cast<int>(CollectiveType::kAllGather));

  // Start on main, end on another thread: one range, attributed to the thread that started it.
  const RangeLine* cross = find_range(run, "cross_thread");
  ASSERT_NE(cross, nullptr);
  EXPECT_EQ(cross->thread, main_tid);
  EXPECT_NE(run.tids.at("ender"), main_tid);

  const RangeLine* wide = find_range(run, "wide_\xC3\xA9");
  ASSERT_NE(wide, nullptr) << "wide message converted to UTF-8";

  const RangeLine* lib = find_range(run, "lib_range");
  ASSERT_NE(lib, nullptr) << "the second shared object's NVTX instance is hooked too";
  EXPECT_EQ(lib->thread, main_tid);

  const RangeLine* step = find_range(run, "step 7");
  ASSERT_NE(step, nullptr);
  EXPECT_EQ(step->thread, run.tids.at("worker"));

  EXPECT_EQ(run.ranges.size(), 8u);
  EXPECT_EQ(run.losses.size(), 1u);
  EXPECT_EQ(run.losses.count(static_cast<int>(LossKind::kUnpairedRange)) ? run.losses.at(static_cast<int>(LossKind::kUnpairedRange)) : 0u, 1u)
      << "the app's extra pop";

  ASSERT_EQ(run.stats.size(), 5u) << "stats line written at exit";
  EXPECT_EQ(run.stats[0], run.ranges.size()) << "ranges";
  EXPECT_EQ(run.stats[1], 1u) << "unpaired";
  EXPECT_EQ(run.stats[2], 2u) << "modules: the app and its shared library";
  EXPECT_EQ(run.stats[3], 1u) << "marks";
  EXPECT_EQ(run.stats[4], 0u) << "too_deep";
}

TEST(NvtxInjection, DisabledStepwatchLeavesNvtxAsNoOps) {
  const AppRun run = run_app({"STEPWATCH_NVTX_TEST_DISABLE=1"});
  EXPECT_EQ(run.exit_code, 0) << "the app runs normally when init returns 0";
  EXPECT_FALSE(run.output_file_exists);
  EXPECT_TRUE(run.ranges.empty());
  EXPECT_TRUE(run.tids.count("worker"));
}

// NCCL 2.28 in the CUDA 13.0 toolkit: ncclAllReduce of 1024 floats with a null communicator.
TEST(NvtxInjection, RealNcclRangeCarriesTheMessageSize) {
#if defined(STEPWATCH_NVTX_TEST_NCCL) && defined(STEPWATCH_NVTX_TEST_NCCL_PROBE)
  if (!std::filesystem::exists(STEPWATCH_NVTX_TEST_NCCL)) GTEST_SKIP() << "no libnccl";
  const AppRun run = run_program(STEPWATCH_NVTX_TEST_NCCL_PROBE, {STEPWATCH_NVTX_TEST_NCCL}, {});
  ASSERT_EQ(run.exit_code, 0);
  ASSERT_TRUE(run.tids.count("result")) << "the probe called ncclAllReduce";
  EXPECT_NE(run.tids.at("result"), 0u) << "NCCL rejected the null communicator";
  const RangeLine* all_reduce = find_range(run, "NCCL:ncclAllReduce");
  ASSERT_NE(all_reduce, nullptr) << "NCCL's own NVTX range (NCCL_NVTX_DISABLE set?)";
  EXPECT_EQ(all_reduce->bytes, 1024u * sizeof(float)) << "read from NCCL's payload schema";
  EXPECT_EQ(all_reduce->collective, static_cast<int>(CollectiveType::kAllReduce));
#else
  GTEST_SKIP() << "libnccl not found at configure time";
#endif
}

#else

TEST(NvtxInjection, AppRangesReachTheSinkThroughNvtxInjection) {
  GTEST_SKIP() << "the NVTX test app and injection library are not built (tests/live/nvtx.cmake)";
}

#endif

}  // namespace
}  // namespace stepwatch::live

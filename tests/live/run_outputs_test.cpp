// The run folder's JSONL files: every line is on disk, whole, as soon as it is written — a job
// killed by SIGTERM runs no atexit and no flush, and must not leave a torn or missing line.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <spdlog/logger.h>

#include "live/outputs/log_reporter.h"
#include "live/outputs/run_outputs.h"
#include "live/outputs/run_stats.h"

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

// A traced job that ran nothing on the GPU says so in its exit summary (not a table of nothing);
// a job whose steps were never traced says that instead, in its steps line.
TEST(RunStats, TracedButIdleSaysNoGpuWorkWasSeen) {
  NameTable names;
  RunStats stats;
  RunSummary traced;
  traced.steps = 3;
  traced.judged_steps = 3;
  EXPECT_NE(stats.text(names, traced, SelfOverhead{}).find("no GPU work was seen"), std::string::npos);
  RunSummary untraced;
  untraced.steps = 3;
  untraced.untraced_steps = 3;
  EXPECT_EQ(stats.text(names, untraced, SelfOverhead{}).find("no GPU work was seen"), std::string::npos);
  Event k;
  k.kind = EventKind::kKernel;
  k.name = names.intern("gemm");
  k.start_ns = 0;
  k.end_ns = 1000;
  stats.add_events(std::span<const Event>(&k, 1));
  EXPECT_EQ(stats.text(names, traced, SelfOverhead{}).find("no GPU work was seen"), std::string::npos);
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

// ---- full disks and failing writes (issue 17 item 5) -------------------------------------------

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

size_t count_lines_with(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = 0; (at = text.find(needle, at)) != std::string::npos; at += needle.size()) ++n;
  return n;
}

// A run folder, a log file beside it and RunOutputs writing `steps` judged steps, each with a
// 3 KB finding: enough to fill a small disk in a few dozen steps.
struct OutputRun {
  OutputRun(const fs::path& dir, const fs::path& log_file)
      : run_dir(dir), log_path(log_file), log(make_job_logger("info", log_file.string()), config) {}
  void steps(RunOutputs& outputs, int64_t count) {
    for (int64_t n = 0; n < count; ++n) {
      StepView v;
      v.step = n;
      v.start_ns = n * 50'000'000;
      v.end_ns = v.start_ns + 40'000'000;
      Finding f;
      f.detector = "hidden_sync";
      f.step = n;
      f.message = std::string(3000, 'x');
      const std::vector<Finding> findings = {f};
      outputs.on_step(v, StepStatus::kJudged, findings);
    }
  }
  std::string log_text() {
    log.flush();
    return read_text(log_path);
  }
  fs::path run_dir, log_path;
  LiveConfig config;
  LogReporter log;
  NameTable names;
};

// Every line whole and valid JSON (lines_on_disk fails on a torn last line).
void expect_whole_json_lines(const fs::path& p) {
  for (const std::string& l : lines_on_disk(p)) EXPECT_TRUE(nlohmann::json::accept(l)) << p << ": " << l.substr(0, 80);
}

// The disk fills up for real: a 64 KiB tmpfs (root only; skipped where mount is not permitted).
// Before the fix: steps.jsonl torn at a page boundary, summary files empty, not a word in the log.
TEST(RunOutputsDiskFull, AFullDiskLeavesWholeLinesAndSaysSoOncePerFile) {
  const fs::path base = fs::temp_directory_path() / ("sw_full_" + std::to_string(::getpid()));
  fs::remove_all(base);
  fs::create_directories(base / "mnt");
  if (::mount("tmpfs", (base / "mnt").c_str(), "tmpfs", 0, "size=64k") != 0) {
    const std::string why = std::strerror(errno);
    fs::remove_all(base);
    GTEST_SKIP() << "cannot mount a small tmpfs here (" << why << "): the injected failures below still run";
  }
  struct Unmount {  // also when an ASSERT returns early
    fs::path at;
    ~Unmount() { ::umount2(at.c_str(), MNT_DETACH); }
  } unmount{base / "mnt"};
  OutputRun run(base / "mnt" / "rank0-pid1", base / "log");
  {
    RunOutputs outputs(run.config, run.run_dir.string(), run.log, run.names);
    run.steps(outputs, 100);  // ~350 KB of lines for 64 KiB
    StepCapture capture;
    for (int64_t k = 0; k < 20'000; ++k) {  // a dump of ~2 MB of JSON before compression
      Event kernel;
      kernel.kind = EventKind::kKernel;
      kernel.start_ns = k * 1000;
      kernel.end_ns = kernel.start_ns + 500;
      kernel.correlation = static_cast<uint64_t>(k);
      capture.events.push_back(kernel);
    }
    const std::vector<const StepCapture*> recent = {&capture};
    Finding f;
    f.detector = "hidden_sync";
    outputs.on_first_fire(f, recent, run.names);
    outputs.write_exit_summary(SelfOverhead{});
  }
  const std::string log = run.log_text();
  for (const char* name : {"steps.jsonl", "findings.jsonl"}) {
    const fs::path p = run.run_dir / name;
    expect_whole_json_lines(p);
    EXPECT_EQ(count_lines_with(log, "cannot write " + p.string() + ": write failed after"), 1u) << name << "\n" << log;
  }
  EXPECT_LT(lines_on_disk(run.run_dir / "findings.jsonl").size(), 101u) << "the disk was meant to fill up";
  EXPECT_EQ(count_lines_with(log, "flight-recorder dump failed: "), 1u) << log;
  if (fs::exists(run.run_dir / "dumps")) {
    EXPECT_TRUE(fs::is_empty(run.run_dir / "dumps")) << "no partial dump left behind";
  }
  EXPECT_NE(log.find("output write failures: "), std::string::npos) << "the exit summary lists them:\n" << log;
  EXPECT_NE(log.find("lines not written"), std::string::npos) << log;
  // A summary file is whole or absent (and then said in the log), never empty.
  for (const char* name : {"summary.txt", "summary.json"}) {
    const fs::path p = run.run_dir / name;
    if (fs::exists(p)) {
      EXPECT_GT(fs::file_size(p), 0u) << name;
    } else {
      EXPECT_EQ(count_lines_with(log, "cannot write " + p.string() + ": No space left on device"), 1u) << log;
    }
  }
  if (fs::exists(run.run_dir / "summary.json")) {
    EXPECT_TRUE(nlohmann::json::accept(read_text(run.run_dir / "summary.json")));
  }
  for (const auto& entry : fs::directory_iterator(run.run_dir)) {
    EXPECT_EQ(entry.path().extension() == ".tmp", false) << "temporary left behind: " << entry.path();
  }
  ::umount2(unmount.at.c_str(), MNT_DETACH);
  fs::remove_all(base);
}

// Always runs: the JSONL files are links to /dev/full (every write fails with ENOSPC).
TEST(RunOutputsWriteFailure, DevFullIsSaidOncePerFileAndListedInTheExitSummary) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  const fs::path base = fs::temp_directory_path() / ("sw_devfull_" + std::to_string(::getpid()));
  fs::remove_all(base);
  fs::create_directories(base / "rank0-pid1");
  fs::create_symlink("/dev/full", base / "rank0-pid1" / "steps.jsonl");
  fs::create_symlink("/dev/full", base / "rank0-pid1" / "findings.jsonl");
  std::ofstream(base / "rank0-pid1" / "dumps") << "a file where the dumps folder goes";
  OutputRun run(base / "rank0-pid1", base / "log");
  {
    RunOutputs outputs(run.config, run.run_dir.string(), run.log, run.names);
    run.steps(outputs, 5);
    StepCapture capture;
    Event kernel;
    kernel.kind = EventKind::kKernel;
    kernel.start_ns = 1'000'000;
    kernel.end_ns = 2'000'000;
    capture.events.push_back(kernel);
    const std::vector<const StepCapture*> recent = {&capture};
    Finding f;
    f.detector = "hidden_sync";
    outputs.on_first_fire(f, recent, run.names);
    f.detector = "input_starvation";
    outputs.on_first_fire(f, recent, run.names);  // dumps are off by now: no second line
    EXPECT_EQ(outputs.dumps_written(), 0);
    outputs.write_exit_summary(SelfOverhead{});
  }
  const std::string log = run.log_text();
  for (const char* name : {"steps.jsonl", "findings.jsonl"}) {
    EXPECT_EQ(count_lines_with(log, "cannot write " + (run.run_dir / name).string() +
                                        ": write failed after 0 lines: No space left on device"),
              1u)
        << log;
  }
  EXPECT_NE(log.find("output write failures: steps.jsonl (write failed after 0 lines: No space left on device; 6 "
                     "lines not written), findings.jsonl"),
            std::string::npos)
      << "meta + 5 steps lost:\n" << log;
  EXPECT_EQ(count_lines_with(log, "flight-recorder dump failed: "), 1u) << log;
  EXPECT_NE(log.find("(the partial file is removed); no more dumps this run"), std::string::npos) << log;
  // The summaries are on the real disk: written, with the failures in them.
  EXPECT_NE(read_text(run.run_dir / "summary.txt").find("output write failures: steps.jsonl"), std::string::npos);
  const auto summary = nlohmann::json::parse(read_text(run.run_dir / "summary.json"));
  ASSERT_EQ(summary["output_write_failures"].size(), 3u) << summary.dump();
  EXPECT_EQ(summary["output_write_failures"][2]["file"], "dumps");
  EXPECT_EQ(summary["output_write_failures"][1]["file"], "findings.jsonl");
  EXPECT_EQ(summary["output_write_failures"][1]["lines_lost"], 6);
  fs::remove_all(base);
}

// Injected: the disk has room for a few lines, then none. Each failed output is one log line and
// one entry of write_failures(), which the session can read; nothing half written remains.
TEST(RunOutputsWriteFailure, InjectedFullDiskCountsEveryOutputAndLineLost) {
  const fs::path base = fs::temp_directory_path() / ("sw_inject_" + std::to_string(::getpid()));
  fs::remove_all(base);
  size_t budget = 6000;
  FileIo io = posix_file_io();
  io.write = [&](int fd, const void* data, size_t size) -> ssize_t {
    const size_t n = std::min(size, budget);
    if (n == 0) {
      errno = ENOSPC;
      return -1;
    }
    budget -= n;
    return ::write(fd, data, n);
  };
  OutputRun run(base / "rank0-pid1", base / "log");
  std::vector<OutputWriteFailure> failures;
  {
    RunOutputs outputs(run.config, run.run_dir.string(), run.log, run.names, io);
    run.steps(outputs, 10);
    outputs.write_exit_summary(SelfOverhead{});
    failures = outputs.write_failures();
  }
  ASSERT_EQ(failures.size(), 4u);
  EXPECT_EQ(failures[0].file, "findings.jsonl");  // the 3 KB lines hit the wall first
  EXPECT_EQ(failures[1].file, "steps.jsonl");
  EXPECT_EQ(failures[2].file, "summary.txt");
  EXPECT_EQ(failures[3].file, "summary.json");
  for (const OutputWriteFailure& f : failures) EXPECT_NE(f.error.find("No space left on device"), std::string::npos);
  EXPECT_EQ(failures[0].lines_written + failures[0].lines_lost, 11u) << "meta + 10 findings, each written or counted";
  EXPECT_EQ(failures[1].lines_written + failures[1].lines_lost, 11u) << "meta + 10 steps";
  expect_whole_json_lines(run.run_dir / "steps.jsonl");
  expect_whole_json_lines(run.run_dir / "findings.jsonl");
  EXPECT_EQ(lines_on_disk(run.run_dir / "findings.jsonl").size(), failures[0].lines_written);
  EXPECT_FALSE(fs::exists(run.run_dir / "summary.txt"));
  EXPECT_FALSE(fs::exists(run.run_dir / "summary.json"));
  const std::string log = run.log_text();
  EXPECT_EQ(count_lines_with(log, "cannot write "), 4u) << log;
  EXPECT_EQ(std::distance(fs::directory_iterator(run.run_dir), fs::directory_iterator()), 2) << "no temporaries";
  fs::remove_all(base);
}

}  // namespace
}  // namespace stepwatch::live

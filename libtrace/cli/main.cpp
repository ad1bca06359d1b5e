// `stepwatch` — the command line front end.
//   stepwatch analyze [options] FILE|DIR...   offline analysis of Kineto traces
//   stepwatch detectors                       the registered detector ids
//   stepwatch run [--output-dir D] -- CMD...  run a training command with stepwatch injected
#include <CLI/CLI.hpp>

#include <malloc.h>

#include <cstdio>
#include <iostream>

#include "analyze_command.h"
#include "run_command.h"
#include "stepwatch/detectors/registry.h"

int main(int argc, char** argv) {
  // Large buffers (event vectors, the Timeline's indexes, its temporaries) always mapped, so that
  // freeing one returns its memory: glibc otherwise raises its mmap threshold after the first big
  // free and serves the next from the heap, which keeps freed temporaries resident (the CLI only:
  // the injected library never touches the host's allocator settings).
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  CLI::App app{"stepwatch — finds the faults that waste GPU training steps"};
  app.set_version_flag("--version", std::string("stepwatch ") + STEPWATCH_VERSION);
  app.require_subcommand(1);

  stepwatch::cli::AnalyzeOptions analyze_opts;
  CLI::App* analyze = app.add_subcommand("analyze", "Analyze PyTorch profiler (Kineto) traces and Nsight Systems SQLite exports, one rank per file");
  stepwatch::cli::add_analyze_options(*analyze, analyze_opts);

  CLI::App* detectors = app.add_subcommand("detectors", "List the detector ids with one-line descriptions");

  stepwatch::cli::RunOptions run_opts;
  CLI::App* run = app.add_subcommand("run", "Run a training command with stepwatch injected (CUDA_INJECTION64_PATH, "
                                            "NVTX_INJECTION64_PATH)");
  stepwatch::cli::add_run_options(*run, run_opts);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    // Usage errors are input errors: exit 2, like malformed traces.
    return rc == 0 ? 0 : 2;
  }

  if (*detectors) {
    // Every finding kind a user can see (the per-rank detectors and the multi-rank late_rank).
    for (const auto& d : stepwatch::finding_kinds()) {
      std::printf("%-20.*s %.*s\n", static_cast<int>(d.id.size()), d.id.data(), static_cast<int>(d.description.size()),
                  d.description.data());
    }
    return 0;
  }
  if (*analyze) return stepwatch::cli::run_analyze(analyze_opts);
  if (*run) return stepwatch::cli::run_command(run_opts);
  return 0;
}

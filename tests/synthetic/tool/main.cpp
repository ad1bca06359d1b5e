// stepwatch-synth: writes a synthetic training trace (Kineto JSON) with known ground truth, for
// the demo script, CLI tests, and anyone who wants to see a fault's signature without a GPU.
//
//   stepwatch-synth --scenario item_sync --steps 8 -o item_sync.json.gz [--truth truth.jsonl]
//   stepwatch-synth --ranks 4 --straggler compute --straggler-rank 2 --clock-offsets-ms 0,50,-50,37 -o run_dir
//   stepwatch-synth --list
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <fstream>
#include <iostream>
#include <string>

#include <filesystem>
#include <sstream>
#include <vector>

#include "stepwatch/export/kineto_writer.h"
#include "synthetic/multi_rank.h"
#include "synthetic/workload.h"

namespace {

std::string ms3(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", double(ns) / 1e6);
  return buf;
}

// One JSON object per captured step: what the model knows, in ms (µs precision).
void write_truth(const stepwatch::synthetic::SyntheticRun& run, std::ostream& out) {
  for (const auto& t : run.truth) {
    out << "{\"type\":\"truth\",\"scenario\":\"" << run.config.scenario << "\",\"rank\":" << run.config.rank
        << ",\"step\":" << t.step << ",\"start_us\":" << t.start_ns / 1000 << "." << (t.start_ns % 1000) / 100
        << (t.start_ns % 100) / 10 << t.start_ns % 10 << ",\"dur_ms\":" << ms3(t.duration_ns())
        << ",\"compute_ms\":" << ms3(t.compute_ns) << ",\"comm_ms\":" << ms3(t.comm_ns)
        << ",\"exposed_comm_ms\":" << ms3(t.exposed_comm_ns) << ",\"copy_ms\":" << ms3(t.copy_ns)
        << ",\"copy_only_ms\":" << ms3(t.copy_only_ns) << ",\"idle_ms\":" << ms3(t.idle_ns)
        << ",\"data_wait_ms\":" << ms3(t.data_wait_ns) << ",\"input_idle_ms\":" << ms3(t.input_idle_ns)
        << ",\"sync_idle_ms\":" << ms3(t.sync_idle_ns) << ",\"blocked_idle_ms\":" << ms3(t.blocked_idle_ns)
        << ",\"kernels\":" << t.kernels << ",\"blocking_calls\":" << t.blocking_calls
        << ",\"launch_idle_ms\":" << ms3(t.launch_idle_ns) << ",\"sync_copy_ms\":" << ms3(t.sync_copy_ns)
        << ",\"pageable_copy_ms\":" << ms3(t.pageable_copy_ns) << ",\"slow_h2d_extra_ms\":" << ms3(t.slow_h2d_extra_ns)
        << ",\"allocator_idle_ms\":" << ms3(t.allocator_idle_ns) << "}\n";
  }
}

// Several ranks of one job (multi_rank.h): DIR/rank<R>.json per rank.
int write_ranks(const stepwatch::synthetic::MultiRankOptions& options, const std::string& dir) {
  const auto runs = stepwatch::synthetic::generate_ranks(options);
  std::filesystem::create_directories(dir);
  for (const auto& run : runs) {
    stepwatch::write_kineto_file(run.trace, (std::filesystem::path(dir) / ("rank" + std::to_string(run.config.rank) + ".json")).string());
  }
  return 0;
}

std::vector<int64_t> parse_offsets_ms(const std::string& list) {
  std::vector<int64_t> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) {
    out.push_back(static_cast<int64_t>(std::stod(item) * 1e6));
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"stepwatch-synth: write a synthetic training trace (Kineto JSON) with known ground truth"};
  std::string scenario = "gpu_bound";
  std::string output;
  std::string truth_path;
  stepwatch::synthetic::ScenarioOptions options;
  bool no_marks = false;
  bool list = false;
  app.add_option("-s,--scenario", scenario, "scenario name (see --list); NAME+no_marks drops the step ranges");
  app.add_option("-n,--steps", options.steps, "captured steps")->check(CLI::Range(1, 100000));
  app.add_option("-m,--magnitude", options.magnitude, "fault size multiplier (1.0 = documented size)")
      ->check(CLI::Range(0.0, 100.0));
  app.add_option("--seed", options.seed, "seed of the kernel-duration draw");
  app.add_option("--first-step", options.first_step, "number of the first step (ProfilerStep#N)");
  app.add_option("--rank", options.rank, "rank written to distributedInfo")->check(CLI::Range(0, 1 << 20));
  app.add_flag("--no-marks", no_marks, "drop the ProfilerStep ranges");
  app.add_option("-o,--output", output, "output trace (.json or .json.gz)");
  app.add_option("--truth", truth_path, "also write the ground truth, one JSON object per step ('-' = stdout)");
  app.add_flag("--list", list, "list the scenarios and exit");
  int ranks = 1;
  std::string straggler = "none";
  int straggler_rank = -1;
  std::string offsets_ms;
  app.add_option("--ranks", ranks, "several ranks of one data-parallel job coupled by their all-reduces: -o is a "
                 "directory that receives rank<R>.json (scenario default ddp_overlap)")->check(CLI::Range(1, 1024));
  app.add_option("--straggler", straggler, "with --ranks: none, compute (kernels 1 + 0.5 x magnitude slower) or "
                 "input (DataLoader waits 40 ms x magnitude)")->check(CLI::IsMember({"none", "compute", "input"}));
  app.add_option("--straggler-rank", straggler_rank, "with --ranks: the slow rank");
  app.add_option("--clock-offsets-ms", offsets_ms, "with --ranks: per-rank clock offsets in ms, comma-separated");
  CLI11_PARSE(app, argc, argv);

  if (list) {
    for (const std::string& name : stepwatch::synthetic::scenario_names()) {
      std::cout << name << "\t" << stepwatch::synthetic::scenario_description(name) << "\n";
    }
    return 0;
  }
  if (output.empty()) {
    std::cerr << "stepwatch-synth: -o/--output is required\n";
    return 2;
  }
  try {
    if (ranks > 1) {
      stepwatch::synthetic::MultiRankOptions mr;
      mr.ranks = ranks;
      if (!app.get_option("--scenario")->empty()) mr.scenario = scenario;
      mr.steps = options.steps;
      mr.seed = options.seed;
      mr.magnitude = options.magnitude;
      mr.straggler = straggler == "compute" ? stepwatch::synthetic::StragglerKind::kCompute
                     : straggler == "input" ? stepwatch::synthetic::StragglerKind::kInput
                                            : stepwatch::synthetic::StragglerKind::kNone;
      mr.straggler_rank = straggler_rank;
      mr.clock_offsets_ns = parse_offsets_ms(offsets_ms);
      return write_ranks(mr, output);
    }
    if (no_marks && scenario != "no_marks" && !scenario.ends_with("+no_marks")) scenario += "+no_marks";
    const auto run = stepwatch::synthetic::make_scenario(scenario, options);
    stepwatch::write_kineto_file(run.trace, output);
    if (truth_path == "-") {
      write_truth(run, std::cout);
    } else if (!truth_path.empty()) {
      std::ofstream out(truth_path);
      write_truth(run, out);
      if (!out) throw std::runtime_error("failed writing " + truth_path);
    }
  } catch (const std::invalid_argument& e) {
    std::cerr << "stepwatch-synth: " << e.what() << " (see --list)\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "stepwatch-synth: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

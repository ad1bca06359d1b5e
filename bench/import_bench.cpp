// Kineto import speed (MB/s of JSON text): parsing alone, and the whole file (read + gunzip +
// parse) on the corpus's largest trace when ../shared/corpus is present, else on a synthetic
// trace written through the Kineto writer.
//   build/bin/stepwatch_bench --benchmark_filter=Kineto
#include <benchmark/benchmark.h>

#include <filesystem>

#include "stepwatch/export/kineto_writer.h"
#include "stepwatch/import/kineto_importer.h"
#include "synthetic/workload.h"

namespace stepwatch {
namespace {

std::string input_path() {
  const std::filesystem::path corpus =
      std::filesystem::path(STEPWATCH_CORPUS_DIR) / "kineto/hta-df_index_resolver/df_index_resolver.json.gz";
  if (std::filesystem::exists(corpus)) return corpus.string();
  const std::string path = (std::filesystem::temp_directory_path() / "stepwatch_bench_trace.json.gz").string();
  if (!std::filesystem::exists(path)) {
    synthetic::ScenarioOptions opts;
    opts.steps = 200;
    write_kineto_file(synthetic::make_scenario("ddp_overlap", opts).trace, path);
  }
  return path;
}

void BM_KinetoParse(benchmark::State& state) {
  const std::string path = input_path();
  const std::string json = read_file_maybe_gzip(path);
  for (auto _ : state) {
    Trace t = import_kineto_json(json, path);
    benchmark::DoNotOptimize(t.events.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(json.size()));
  state.SetLabel(std::filesystem::path(path).filename().string());
}
BENCHMARK(BM_KinetoParse)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_KinetoImportFile(benchmark::State& state) {
  const std::string path = input_path();
  const auto json_bytes = static_cast<int64_t>(read_file_maybe_gzip(path).size());
  for (auto _ : state) {
    Trace t = import_kineto_file(path);
    benchmark::DoNotOptimize(t.events.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * json_bytes);
  state.counters["gz_MB"] = static_cast<double>(std::filesystem::file_size(path)) / 1e6;
  state.SetLabel(std::filesystem::path(path).filename().string());
}
// Wall time: the import reads ahead on a thread of its own, which CPU time of this one would miss.
BENCHMARK(BM_KinetoImportFile)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace stepwatch

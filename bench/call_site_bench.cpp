// What reading call sites costs (issue: "nothing per kernel launch; a bounded few µs per blocking
// call"): the adapter's real API callbacks (CallbackCounters) fired as CUPTI fires them, with and
// without the call-site recorder, for a launch and for a blocking call — the blocking call from
// native code (stack unwind) and from Python (the interpreter embedded here, frames read without
// the GIL while a C function called from `log_metrics()` runs).
#include <benchmark/benchmark.h>

#include <mutex>
#include <string>
#include <vector>

#include "core/event_sink.h"
#include "stepwatch/core/name_table.h"

#if defined(STEPWATCH_HAVE_RECORD_INGEST)
#include "bench_support/callback_driver.h"
#include "live/call_site_recorder.h"

#if defined(STEPWATCH_HAVE_EMBEDDED_PYTHON)
#include <Python.h>
#endif

namespace {

using namespace stepwatch;

// Interns for real (the recorder's one lock per site read); keeps nothing it is given.
class CountingSink final : public EventSink {
 public:
  void submit(const Event&) noexcept override { ++submitted; }
  NameId intern(std::string_view name) noexcept override {
    std::lock_guard<std::mutex> lock(mu_);
    return names_.intern(name);
  }
  void report_loss(LossKind, uint64_t) noexcept override {}
  void advance_watermark(int64_t) noexcept override {}
  void mark_incomplete(int64_t, int64_t) noexcept override {}
  void status(std::string_view) noexcept override {}
  uint64_t submitted = 0;

 private:
  std::mutex mu_;
  NameTable names_;
};

live::PythonFrameReader probe_python() {
  std::string why;
  return live::PythonFrameReader::probe(why);
}

// Arg 0: no recorder (the callbacks as before call sites); 1: with it.
void BM_LaunchCallback(benchmark::State& state) {
  CountingSink sink;
  live::CallSiteRecorder recorder(sink, probe_python());
  auto driver = bench::CallbackDriver::create(state.range(0) != 0 ? &recorder : nullptr);
  for (auto _ : state) driver->launch();
  state.counters["sites_read"] = double(recorder.stats().python_sites + recorder.stats().native_sites);
}
BENCHMARK(BM_LaunchCallback)->Arg(0)->Arg(1);

void BM_BlockingCallbackNative(benchmark::State& state) {
  CountingSink sink;
  live::CallSiteRecorder recorder(sink, live::PythonFrameReader{});
  auto driver = bench::CallbackDriver::create(state.range(0) != 0 ? &recorder : nullptr);
  for (auto _ : state) driver->stream_synchronize();
  state.counters["native_sites"] = benchmark::Counter(double(recorder.stats().native_sites), benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_BlockingCallbackNative)->Arg(0)->Arg(1);

#if defined(STEPWATCH_HAVE_EMBEDDED_PYTHON)
benchmark::State* g_state = nullptr;
bench::CallbackDriver* g_driver = nullptr;

// swbench.run(): the benchmark loop, inside a C function called from Python code (as
// `Tensor.item()` is), with the GIL released around it as torch and ctypes release it.
PyObject* run(PyObject*, PyObject*) {
  Py_BEGIN_ALLOW_THREADS
  for (auto _ : *g_state) g_driver->stream_synchronize();
  Py_END_ALLOW_THREADS
  Py_RETURN_NONE;
}
PyMethodDef kMethods[] = {{"run", run, METH_NOARGS, nullptr}, {nullptr, nullptr, 0, nullptr}};
PyModuleDef kModule = {PyModuleDef_HEAD_INIT, "swbench", nullptr, -1, kMethods};
PyObject* init_module() { return PyModule_Create(&kModule); }

void BM_BlockingCallbackPython(benchmark::State& state) {
  static const bool initialized = [] {
    PyImport_AppendInittab("swbench", init_module);
    Py_InitializeEx(0);
    return true;
  }();
  (void)initialized;
  CountingSink sink;
  live::CallSiteRecorder recorder(sink, probe_python());
  if (state.range(0) != 0 && !recorder.reads_python()) {
    state.SkipWithError("no frame layout for this interpreter");
    return;
  }
  auto driver = bench::CallbackDriver::create(state.range(0) != 0 ? &recorder : nullptr);
  g_state = &state;
  g_driver = driver.get();
  // Frames the way a training script has them: the loop, a helper, torch's own code under it.
  // Compiled as a file of its own: "<string>" code reads as the interpreter's, not the user's.
  PyObject* code = Py_CompileString(
      "import swbench\n"
      "def log_metrics():\n"
      "    swbench.run()\n"
      "def train_step():\n"
      "    log_metrics()\n"
      "train_step()\n",
      "/tmp/train.py", Py_file_input);
  PyObject* globals = PyDict_New();
  PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins());
  PyObject* result = code != nullptr ? PyEval_EvalCode(code, globals, globals) : nullptr;
  if (result == nullptr) PyErr_Print();
  Py_XDECREF(result);
  Py_XDECREF(code);
  Py_DECREF(globals);
  state.counters["python_sites"] = benchmark::Counter(double(recorder.stats().python_sites), benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_BlockingCallbackPython)->Arg(0)->Arg(1);
#endif

}  // namespace
#endif

#include "run_command.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>

namespace stepwatch::cli {
namespace fs = std::filesystem;

namespace {

std::string default_library() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  for (const char* rel : {"../lib/libstepwatch.so", "../lib64/libstepwatch.so", "libstepwatch.so"}) {
    const fs::path p = exe.parent_path() / rel;
    if (fs::exists(p, ec)) return fs::weakly_canonical(p, ec).string();
  }
  return {};
}

// The job's process: signals that end a job (torchrun/slurm's SIGTERM, Ctrl-C) are passed on to
// it, and the launcher waits for it to leave.
volatile sig_atomic_t g_child = 0;
void forward_signal(int sig) {
  if (g_child > 0) ::kill(static_cast<pid_t>(g_child), sig);
}

// Run folders (rank<R>-pid<P>/) the job's processes created since `since`: one per process that
// loaded the library and was active.
size_t traced_processes(const fs::path& output_dir, fs::file_time_type since) {
  size_t n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(output_dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("rank", 0) != 0 || name.find("-pid") == std::string::npos || !e.is_directory(ec)) continue;
    const auto written = fs::last_write_time(e.path(), ec);
    if (!ec && written >= since) ++n;
  }
  return n;
}

}  // namespace

void add_run_options(CLI::App& cmd, RunOptions& o) {
  cmd.add_option("--output-dir", o.output_dir, "STEPWATCH_OUTPUT_DIR for the job (default ./stepwatch-out)");
  cmd.add_option("--library", o.library, "libstepwatch.so to inject (default: next to this executable)");
  cmd.add_option("command", o.command, "The training command, after --")->required();
  cmd.footer("Example: stepwatch run -- torchrun --nproc_per_node=8 train.py");
}

int run_command(const RunOptions& o) {
  std::string lib = o.library.empty() ? default_library() : o.library;
  std::error_code ec;
  if (lib.empty() || !fs::exists(lib, ec)) {
    std::cerr << "stepwatch: error: libstepwatch.so not found" << (lib.empty() ? "" : " at " + lib)
              << " (build with the CUDA toolkit, or pass --library PATH)\n";
    return 2;
  }
  lib = fs::absolute(lib, ec).string();
  // Absolute, so that a job that changes directory still writes where this launcher looks.
  const char* env_dir = std::getenv("STEPWATCH_OUTPUT_DIR");
  const fs::path output_dir =
      fs::absolute(!o.output_dir.empty() ? o.output_dir : env_dir != nullptr && *env_dir ? env_dir : "stepwatch-out", ec);
  // One library for both injection points: the driver and every NVTX instance load the same file.
  setenv("CUDA_INJECTION64_PATH", lib.c_str(), 1);
  setenv("NVTX_INJECTION64_PATH", lib.c_str(), 1);
  setenv("STEPWATCH_OUTPUT_DIR", output_dir.c_str(), 1);
  std::vector<char*> argv;
  for (const std::string& a : o.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  // Said once, so that "injected but idle" is told from "not injected" (the library itself says
  // what it traces when CUDA starts in a process).
  std::cerr << "stepwatch: running " << o.command.front() << " with " << lib << " injected; outputs in "
            << output_dir.string() << "/\n";
  // A second earlier, as file times are coarse on some file systems.
  const auto since = fs::file_time_type::clock::now() - std::chrono::seconds(1);
  std::cerr.flush();
  const pid_t child = ::fork();
  if (child < 0) {
    std::cerr << "stepwatch: error: cannot start " << o.command.front() << ": " << std::strerror(errno) << '\n';
    return 127;
  }
  if (child == 0) {
    execvp(argv[0], argv.data());
    std::cerr << "stepwatch: error: cannot run " << o.command.front() << ": " << std::strerror(errno) << '\n';
    _exit(127);
  }
  g_child = child;
  struct sigaction sa {};
  sa.sa_handler = &forward_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) ::sigaction(sig, &sa, nullptr);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  const int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (rc == 127 && WIFEXITED(status)) return rc;  // the command was not found: said above
  const size_t traced = traced_processes(output_dir, since);
  if (traced == 0) {
    std::cerr << "stepwatch: " << o.command.front() << " exited (status " << rc
              << ") and no process of it loaded the library: CUDA never started in it (no GPU work), "
                 "so nothing was traced\n";
  } else {
    std::cerr << "stepwatch: " << o.command.front() << " exited (status " << rc << "); " << traced
              << (traced == 1 ? " process" : " processes") << " traced, exit summaries in " << output_dir.string()
              << "/rank*-pid*/summary.txt\n";
  }
  return rc;
}

}  // namespace stepwatch::cli

// Threads of ours that must not take the host's process-directed signals (SIGINT, SIGCHLD, SIGTERM
// handlers written for the app's own threads): created with every signal blocked. Every thread
// stepwatch starts (analysis, CUPTI flush, samplers, metrics server) goes through here. A host
// SIGTERM handler that calls exit() on one of them would wait in our atexit for that very thread.
#pragma once

#include <pthread.h>
#include <signal.h>

#include <thread>
#include <utility>

namespace stepwatch {

template <typename Fn>
std::thread spawn_quiet_thread(Fn&& fn) {
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &previous);
  try {
    std::thread t(std::forward<Fn>(fn));
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    return t;
  } catch (...) {
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    throw;
  }
}

}  // namespace stepwatch

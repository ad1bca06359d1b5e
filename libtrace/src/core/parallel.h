// Work split over a few threads, for the offline analysis only (stepwatch analyze: the PipelineOptions
// `threads` of a live session stay 1). Private to libtrace/src/core.
//
// The caller's thread takes a share too; a thread that cannot be started leaves its share to the
// others (the work is done either way), and the first exception a share threw is rethrown on the
// caller's thread after every thread joined.
#pragma once

#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace stepwatch::parallel {

// fn(i) for every i in [0, n), in no particular order, on up to `threads` threads.
template <typename Fn>
void for_each_index(size_t n, unsigned threads, Fn&& fn) {
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto share = [&] {
    try {
      for (size_t i = next++; i < n; i = next++) fn(i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
      next = n;  // the others stop at their next index
    }
  };
  std::vector<std::thread> helpers;
  const size_t wanted = std::min<size_t>(threads > 0 ? threads - 1 : 0, n > 0 ? n - 1 : 0);
  for (size_t t = 0; t < wanted; ++t) {
    try {
      helpers.emplace_back(share);
    } catch (const std::system_error&) {
      break;  // no thread to be had: this one does the rest
    }
  }
  share();
  for (std::thread& t : helpers) t.join();
  if (error) std::rethrow_exception(error);
}

// a() and b() at once: b on a thread of its own when `threads` > 1.
template <typename A, typename B>
void both(unsigned threads, A&& a, B&& b) {
  for_each_index(2, threads, [&](size_t i) { i == 0 ? a() : b(); });
}

}  // namespace stepwatch::parallel

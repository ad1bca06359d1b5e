// The metrics endpoint: a minimal HTTP/1.1 server for `GET /metrics`, one thread, bound to
// 127.0.0.1 by default.
//
// Why not a library: Debian's cpp-httplib (libcpp-httplib-dev 0.11) is not header-only — it is a
// compiled libcpp-httplib.so.0.11 pulling in OpenSSL, zlib and brotli, which an injected library
// (static libstdc++, only the C API exported) must not load into every training process. The
// server here answers one request per connection and closes it; everything it parses goes
// through parse_request_head (fuzzed: tests/fuzz/fuzz_metrics_request.cpp).
//
// Connections are served concurrently: one poll() over non-blocking sockets, so a slow or silent
// client holds a slot, not the server. The limits (Limits): at most max_connections open at once
// (at the cap, the connection that has waited longest for its request is closed to make room for
// the new one, so a scrape still gets through a flood of idle connections); each connection has
// deadline_ms from accept to the last byte of its reply, then it is closed; a request head is at
// most 8 KiB (431). Each limit hit is counted (stats()); MetricsExporter says the first of each
// kind in the job log.
//
// Never harms the host: a failed bind is reported to the caller (one log line, the job goes on);
// the thread blocks every signal (core/quiet_thread.h); the analysis thread never waits on this
// thread (the body callback copies a snapshot under a short lock); writes use MSG_NOSIGNAL (no
// SIGPIPE into the host); memory is bounded by the cap (request and reply per connection).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace stepwatch::live {

enum class HttpHead : uint8_t {
  kIncomplete,  // no end of head yet (read more, up to the cap)
  kOk,
  kBad,         // not an HTTP/1.x request line
};

// Parses the head of one request: "METHOD SP target SP HTTP/1.x" CRLF ... CRLF CRLF (bare LF
// accepted). `path` is the target without its query string.
HttpHead parse_request_head(std::string_view data, std::string& method, std::string& path);

// The whole response (status line, headers, body) to a parsed request; `body` renders /metrics.
std::string metrics_http_response(std::string_view method, std::string_view path,
                                  const std::function<std::string()>& body);
// The response to an unparseable or oversized request.
std::string metrics_http_error(int status);

// The endpoint's limits (see the top of this file).
struct MetricsHttpLimits {
  int max_connections = 64;  // open at once (a scraper needs one; Prometheus HA pairs, two)
  int deadline_ms = 2000;    // per connection, accept to last byte of the reply
};
// What the limits did so far (counters, read from any thread).
struct MetricsHttpStats {
  uint64_t served = 0;              // replies sent whole
  uint64_t closed_at_deadline = 0;  // no complete request (or reply not taken) within deadline_ms
  uint64_t closed_at_cap = 0;       // closed to make room at max_connections
};

class MetricsHttpServer {
 public:
  using Limits = MetricsHttpLimits;
  using Stats = MetricsHttpStats;

  MetricsHttpServer() = default;
  ~MetricsHttpServer();
  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

  // Binds `address` (numeric IPv4 or IPv6) and `port` (0: any free port), then serves on its own
  // thread. False with `error` set ("127.0.0.1:9400: Address already in use") when it cannot.
  bool start(const std::string& address, int port, std::function<std::string()> body, std::string& error,
             Limits limits = Limits{});
  // Stops and joins the thread (at once: a wake-up pipe interrupts its poll) and closes every
  // connection. Idempotent.
  void stop() noexcept;
  // In a forked child (DataLoader workers): the serving thread was not copied, but the listening
  // socket was; close the child's copy so the port is the parent's alone. Joins nothing.
  void close_in_child() noexcept;
  int port() const { return port_; }
  const Limits& limits() const { return limits_; }
  Stats stats() const;
  int open_connections() const { return open_connections_.load(std::memory_order_relaxed); }

 private:
  struct Connection;
  void serve() noexcept;
  void accept_new(std::vector<Connection>& open) noexcept;
  bool progress(Connection& c) noexcept;  // false: done with it (closed)
  void close_connection(Connection& c, bool served) noexcept;
  void close_fds() noexcept;

  int listen_fd_ = -1;
  int wake_read_fd_ = -1, wake_write_fd_ = -1;  // stop() writes a byte: the poll returns at once
  int port_ = 0;
  Limits limits_;
  std::function<std::string()> body_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> served_{0}, closed_at_deadline_{0}, closed_at_cap_{0};
  std::atomic<int> open_connections_{0};
  uint64_t next_order_ = 0;             // serving thread only
  int64_t accept_paused_until_ms_ = 0;  // serving thread only
  std::thread thread_;
};

}  // namespace stepwatch::live

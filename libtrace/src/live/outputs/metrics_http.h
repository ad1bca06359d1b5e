// The metrics endpoint: a minimal HTTP/1.1 server for `GET /metrics`, one thread, bound to
// 127.0.0.1 by default.
//
// Why not a library: Debian's cpp-httplib (libcpp-httplib-dev 0.11) is not header-only — it is a
// compiled libcpp-httplib.so.0.11 pulling in OpenSSL, zlib and brotli, which an injected library
// (static libstdc++, only the C API exported) must not load into every training process. The
// server here answers one request per connection and closes it; everything it parses goes
// through parse_request_head (fuzzed: tests/fuzz/fuzz_metrics_request.cpp).
//
// Never harms the host: a failed bind is reported to the caller (one log line, the job goes on);
// each connection has a 2 s deadline and an 8 KiB request cap, so a slow or hostile client delays
// only the next scrape; the analysis thread never waits on this thread (the body callback copies
// a snapshot under a short lock); writes use MSG_NOSIGNAL (no SIGPIPE into the host).
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <string_view>
#include <thread>

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

class MetricsHttpServer {
 public:
  MetricsHttpServer() = default;
  ~MetricsHttpServer();
  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

  // Binds `address` (numeric IPv4 or IPv6) and `port` (0: any free port), then serves on its own
  // thread. False with `error` set ("127.0.0.1:9400: Address already in use") when it cannot.
  bool start(const std::string& address, int port, std::function<std::string()> body, std::string& error);
  // Stops and joins the thread (bounded by one connection's deadline). Idempotent.
  void stop() noexcept;
  // In a forked child (DataLoader workers): the serving thread was not copied, but the listening
  // socket was; close the child's copy so the port is the parent's alone. Joins nothing.
  void close_in_child() noexcept;
  int port() const { return port_; }

 private:
  void serve() noexcept;
  void handle(int connection) noexcept;

  int listen_fd_ = -1;
  int port_ = 0;
  std::function<std::string()> body_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace stepwatch::live

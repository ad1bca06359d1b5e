#include "live/outputs/metrics_http.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "live/outputs/prometheus_text.h"
#include "core/quiet_thread.h"

namespace stepwatch::live {
namespace {

constexpr size_t kMaxRequestBytes = 8192;
constexpr int kConnectionDeadlineMs = 2000;
constexpr int kAcceptPollMs = 200;  // how quickly stop() is noticed

bool is_token_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

std::string response(int status, std::string_view reason, std::string_view content_type, std::string_view body,
                     bool include_body) {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason) + "\r\n";
  out += "Content-Type: ";
  out += content_type;
  out += "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n";
  if (status == 405) out += "Allow: GET, HEAD\r\n";
  out += "\r\n";
  if (include_body) out += body;
  return out;
}

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Waits for `events` on `fd` until `deadline_ms`; false on timeout or error.
bool wait_for(int fd, short events, int64_t deadline_ms) {
  for (;;) {
    const int64_t left = deadline_ms - now_ms();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, static_cast<int>(left));
    if (r > 0) return (p.revents & (events | POLLHUP | POLLERR)) != 0;
    if (r == 0) return false;
    if (errno != EINTR) return false;
  }
}

}  // namespace

HttpHead parse_request_head(std::string_view data, std::string& method, std::string& path) {
  const size_t line_end = data.find('\n');
  if (line_end == std::string_view::npos) return HttpHead::kIncomplete;
  std::string_view line = data.substr(0, line_end);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);

  const size_t sp1 = line.find(' ');
  if (sp1 == std::string_view::npos || sp1 == 0) return HttpHead::kBad;
  const size_t sp2 = line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || sp2 == sp1 + 1) return HttpHead::kBad;
  const std::string_view m = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  for (char c : m) {
    if (!is_token_char(c)) return HttpHead::kBad;
  }
  if (version != "HTTP/1.1" && version != "HTTP/1.0") return HttpHead::kBad;
  if (target.front() != '/') return HttpHead::kBad;  // origin form only: no proxies, no "*"
  for (char c : target) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return HttpHead::kBad;
  }
  // A malformed request line is refused at once; a good one waits for the end of the head.
  if (data.find("\r\n\r\n") == std::string_view::npos && data.find("\n\n") == std::string_view::npos) {
    return HttpHead::kIncomplete;
  }
  method.assign(m);
  path.assign(target.substr(0, target.find('?')));
  return HttpHead::kOk;
}

std::string metrics_http_response(std::string_view method, std::string_view path,
                                  const std::function<std::string()>& body) {
  const bool head = method == "HEAD";
  if (method != "GET" && !head) return response(405, "Method Not Allowed", "text/plain", "GET /metrics\n", true);
  if (path != "/metrics") {
    return response(404, "Not Found", "text/plain", "stepwatch serves Prometheus metrics at /metrics\n", !head);
  }
  return response(200, "OK", kPrometheusContentType, body(), !head);
}

std::string metrics_http_error(int status) {
  if (status == 431) return response(431, "Request Header Fields Too Large", "text/plain", "request too large\n", true);
  return response(400, "Bad Request", "text/plain", "bad request\n", true);
}

MetricsHttpServer::~MetricsHttpServer() { stop(); }

bool MetricsHttpServer::start(const std::string& address, int port, std::function<std::string()> body,
                              std::string& error) {
  const std::string where = address + ":" + std::to_string(port);
  sockaddr_storage storage{};
  socklen_t length = 0;
  int family = AF_INET;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&storage);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&storage);
  if (::inet_pton(AF_INET, address.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(port));
    length = sizeof(sockaddr_in);
  } else if (::inet_pton(AF_INET6, address.c_str(), &v6->sin6_addr) == 1) {
    family = AF_INET6;
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(port));
    length = sizeof(sockaddr_in6);
  } else {
    error = where + ": not a numeric IPv4/IPv6 address";
    return false;
  }
  const int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    error = where + ": " + std::strerror(errno);
    return false;
  }
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);  // restart while old sockets linger
  if (::bind(fd, reinterpret_cast<sockaddr*>(&storage), length) != 0 || ::listen(fd, 16) != 0) {
    error = where + ": " + std::strerror(errno);
    ::close(fd);
    return false;
  }
  sockaddr_storage bound{};
  socklen_t bound_length = sizeof bound;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &bound_length) == 0) {
    port_ = ntohs(family == AF_INET ? reinterpret_cast<sockaddr_in*>(&bound)->sin_port
                                    : reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
  }
  listen_fd_ = fd;
  body_ = std::move(body);
  stop_.store(false);
  try {
    thread_ = spawn_quiet_thread([this] { serve(); });
  } catch (...) {
    ::close(fd);
    listen_fd_ = -1;
    error = where + ": cannot start the server thread";
    return false;
  }
  return true;
}

void MetricsHttpServer::close_in_child() noexcept {
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
  // The std::thread object names the parent's thread: never join or destroy it here.
  if (thread_.joinable()) thread_.detach();
}

void MetricsHttpServer::stop() noexcept {
  stop_.store(true);
  if (thread_.joinable()) {
    try {
      thread_.join();
    } catch (...) {
    }
  }
  if (listen_fd_ >= 0) {
    ::close(listen_fd_);
    listen_fd_ = -1;
  }
}

void MetricsHttpServer::serve() noexcept {
  pthread_setname_np(pthread_self(), "sw-metrics");
  while (!stop_.load(std::memory_order_relaxed)) {
    pollfd p{listen_fd_, POLLIN, 0};
    const int r = ::poll(&p, 1, kAcceptPollMs);
    if (r <= 0) continue;
    const int connection = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (connection < 0) continue;
    handle(connection);
    ::close(connection);
  }
}

void MetricsHttpServer::handle(int connection) noexcept {
  try {
    const int64_t deadline = now_ms() + kConnectionDeadlineMs;
    std::string request;
    std::string method, path, reply;
    char buf[2048];
    for (;;) {
      const HttpHead head = parse_request_head(request, method, path);
      if (head == HttpHead::kOk) {
        reply = metrics_http_response(method, path, body_);
        break;
      }
      if (head == HttpHead::kBad) {
        reply = metrics_http_error(400);
        break;
      }
      if (request.size() >= kMaxRequestBytes) {
        reply = metrics_http_error(431);
        break;
      }
      if (!wait_for(connection, POLLIN, deadline)) return;  // slow or silent client: drop it
      const ssize_t n = ::recv(connection, buf, std::min(sizeof buf, kMaxRequestBytes - request.size()), 0);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (n <= 0) return;  // closed before a full request
      request.append(buf, static_cast<size_t>(n));
    }
    size_t sent = 0;
    while (sent < reply.size()) {
      const ssize_t n = ::send(connection, reply.data() + sent, reply.size() - sent, MSG_NOSIGNAL);
      if (n > 0) {
        sent += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN && wait_for(connection, POLLOUT, deadline)) continue;
      return;
    }
    ::shutdown(connection, SHUT_WR);
  } catch (...) {
    // Out of memory building a reply: drop the connection, keep serving.
  }
}

}  // namespace stepwatch::live

#include "live/outputs/metrics_http.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "live/outputs/prometheus_text.h"
#include "core/quiet_thread.h"

namespace stepwatch::live {
namespace {

constexpr size_t kMaxRequestBytes = 8192;
constexpr int kIdlePollMs = 1000;  // poll's longest sleep (stop() wakes it at once anyway)
constexpr int kListenBacklog = 64;
constexpr int kAcceptPauseMs = 100;  // after accept fails for want of descriptors

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
                              std::string& error, Limits limits) {
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
  // Non-blocking: the serving loop accepts until EAGAIN and never waits inside accept.
  const int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    error = where + ": " + std::strerror(errno);
    return false;
  }
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);  // restart while old sockets linger
  if (::bind(fd, reinterpret_cast<sockaddr*>(&storage), length) != 0 || ::listen(fd, kListenBacklog) != 0) {
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
  int wake[2];
  if (::pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    error = where + ": " + std::strerror(errno);
    ::close(fd);
    return false;
  }
  listen_fd_ = fd;
  wake_read_fd_ = wake[0];
  wake_write_fd_ = wake[1];
  limits_ = limits;
  limits_.max_connections = std::max(limits_.max_connections, 1);
  limits_.deadline_ms = std::max(limits_.deadline_ms, 1);
  body_ = std::move(body);
  stop_.store(false);
  try {
    thread_ = spawn_quiet_thread([this] { serve(); });
  } catch (...) {
    close_fds();
    error = where + ": cannot start the server thread";
    return false;
  }
  return true;
}

void MetricsHttpServer::close_fds() noexcept {
  for (int* fd : {&listen_fd_, &wake_read_fd_, &wake_write_fd_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

MetricsHttpServer::Stats MetricsHttpServer::stats() const {
  return Stats{served_.load(std::memory_order_relaxed), closed_at_deadline_.load(std::memory_order_relaxed),
               closed_at_cap_.load(std::memory_order_relaxed)};
}

void MetricsHttpServer::close_in_child() noexcept {
  // The connections are the serving thread's (which the child has not got); each one is shut
  // down when the parent closes it, so the child's copies keep no client waiting.
  close_fds();
  // The std::thread object names the parent's thread: never join or destroy it here.
  if (thread_.joinable()) thread_.detach();
}

void MetricsHttpServer::stop() noexcept {
  stop_.store(true);
  if (wake_write_fd_ >= 0) {
    const char byte = 1;
    (void)!::write(wake_write_fd_, &byte, 1);
  }
  if (thread_.joinable()) {
    try {
      thread_.join();
    } catch (...) {
    }
  }
  close_fds();
}

// ---- the serving loop ------------------------------------------------------------------------

namespace {
// Unordered removal (accept order is kept in Connection::order).
template <typename T>
void remove_at(std::vector<T>& v, size_t i) {
  if (i + 1 != v.size()) v[i] = std::move(v.back());
  v.pop_back();
}
}  // namespace

struct MetricsHttpServer::Connection {
  int fd = -1;
  int64_t deadline_ms = 0;
  uint64_t order = 0;  // accept order: the lowest one still reading is closed first at the cap
  std::string request;
  std::string reply;   // empty while the request is being read
  size_t sent = 0;
};

void MetricsHttpServer::serve() noexcept {
  pthread_setname_np(pthread_self(), "sw-metrics");
  std::vector<Connection> open;
  std::vector<pollfd> fds;
  try {
    // Sized once for the cap: the loop itself never allocates for connections.
    open.reserve(static_cast<size_t>(limits_.max_connections));
    fds.reserve(static_cast<size_t>(limits_.max_connections) + 2);
  } catch (...) {
    return;
  }
  while (!stop_.load(std::memory_order_relaxed)) {
    const int64_t now = now_ms();
    int timeout = kIdlePollMs;
    for (size_t i = 0; i < open.size();) {
      if (open[i].deadline_ms <= now) {
        closed_at_deadline_.fetch_add(1, std::memory_order_relaxed);
        close_connection(open[i], /*served=*/false);
        remove_at(open, i);
        continue;
      }
      timeout = static_cast<int>(std::min<int64_t>(timeout, open[i].deadline_ms - now));
      ++i;
    }
    open_connections_.store(static_cast<int>(open.size()), std::memory_order_relaxed);
    fds.clear();
    fds.push_back(pollfd{wake_read_fd_, POLLIN, 0});
    // While accepting is paused (see accept_new), the listening socket is left out of the poll.
    const bool accepting = now >= accept_paused_until_ms_;
    if (!accepting) timeout = static_cast<int>(std::min<int64_t>(timeout, accept_paused_until_ms_ - now));
    fds.push_back(pollfd{listen_fd_, static_cast<short>(accepting ? POLLIN : 0), 0});
    for (const Connection& c : open) fds.push_back(pollfd{c.fd, static_cast<short>(c.reply.empty() ? POLLIN : POLLOUT), 0});
    const int ready = ::poll(fds.data(), fds.size(), timeout);
    if (ready < 0 && errno != EINTR) std::this_thread::sleep_for(std::chrono::milliseconds(10));  // ENOMEM: no spin
    if (ready <= 0) continue;  // timeout (deadlines are checked above) or EINTR
    // Connections first (fds[i + 2] is open[i]), then new ones: the new ones are served at accept.
    for (size_t i = open.size(); i-- > 0;) {
      if (fds[i + 2].revents == 0) continue;
      if (!progress(open[i])) {
        remove_at(open, i);
      }
    }
    if (fds[1].revents != 0) accept_new(open);
    if (fds[0].revents != 0) {
      char drain[16];
      while (::read(wake_read_fd_, drain, sizeof drain) > 0) {
      }
    }
  }
  for (Connection& c : open) close_connection(c, /*served=*/false);
  open_connections_.store(0, std::memory_order_relaxed);
}

void MetricsHttpServer::accept_new(std::vector<Connection>& open) noexcept {
  // Bounded per round, so a flood of connects cannot starve the connections already open.
  for (int round = 0; round < limits_.max_connections; ++round) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      // Out of descriptors or memory (the host's limit, shared with us): the pending connection
      // stays queued and the socket stays readable, so pause accepting instead of spinning.
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        accept_paused_until_ms_ = now_ms() + kAcceptPauseMs;
      }
      return;  // EAGAIN: none left; anything else the next poll retries
    }
    if (open.size() >= static_cast<size_t>(limits_.max_connections)) {
      // Make room: close the connection that has waited longest for its request (one sending a
      // reply is nearly done and is spared while any reader remains).
      size_t victim = 0;
      for (size_t i = 1; i < open.size(); ++i) {
        const bool reading = open[i].reply.empty(), victim_reading = open[victim].reply.empty();
        if (reading != victim_reading ? reading : open[i].order < open[victim].order) victim = i;
      }
      closed_at_cap_.fetch_add(1, std::memory_order_relaxed);
      close_connection(open[victim], /*served=*/false);
      remove_at(open, victim);
    }
    open.push_back(Connection{fd, now_ms() + limits_.deadline_ms, next_order_++, {}, {}, 0});  // within reserve()
    // A scraper's request usually arrived with its connection: answer it now.
    if (!progress(open.back())) open.pop_back();
  }
}

// Reads what the client sent, or sends what is left of the reply, without blocking.
bool MetricsHttpServer::progress(Connection& c) noexcept {
  try {
    char buf[2048];
    while (c.reply.empty()) {
      std::string method, path;
      const HttpHead head = parse_request_head(c.request, method, path);
      if (head == HttpHead::kOk) {
        c.reply = metrics_http_response(method, path, body_);
      } else if (head == HttpHead::kBad) {
        c.reply = metrics_http_error(400);
      } else if (c.request.size() >= kMaxRequestBytes) {
        c.reply = metrics_http_error(431);
      } else {
        const ssize_t n = ::recv(c.fd, buf, std::min(sizeof buf, kMaxRequestBytes - c.request.size()), 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;  // the rest comes later
        if (n <= 0) break;  // closed before a full request
        c.request.append(buf, static_cast<size_t>(n));
      }
    }
    while (!c.reply.empty() && c.sent < c.reply.size()) {
      const ssize_t n = ::send(c.fd, c.reply.data() + c.sent, c.reply.size() - c.sent, MSG_NOSIGNAL);
      if (n > 0) {
        c.sent += static_cast<size_t>(n);
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        return true;  // the client reads slowly: wait for POLLOUT
      } else {
        break;
      }
    }
    close_connection(c, /*served=*/!c.reply.empty() && c.sent == c.reply.size());
  } catch (...) {
    // Out of memory building a reply: drop the connection, keep serving.
    close_connection(c, /*served=*/false);
  }
  return false;
}

void MetricsHttpServer::close_connection(Connection& c, bool served) noexcept {
  if (c.fd < 0) return;
  if (served) served_.fetch_add(1, std::memory_order_relaxed);
  // shutdown acts on the socket, not this descriptor: a forked child's copy of it (DataLoader
  // workers inherit every fd) cannot keep the client waiting for the end of the reply.
  ::shutdown(c.fd, served ? SHUT_WR : SHUT_RDWR);
  ::close(c.fd);
  c.fd = -1;
}

}  // namespace stepwatch::live

// Fleet metrics: the Prometheus renderer, the accumulator behind it, the endpoint's request
// parser and server (scraped over a real socket), the textfile, the config that turns them on,
// and per-rank outputs. The endpoint scraped by a real HTTP client and parsed by prometheus_client
// is tests/python/test_metrics.py.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "live/live_config.h"
#include "live_config_support.h"
#include "live/live_session.h"
#include "live/outputs/metrics_exporter.h"
#include "live/outputs/metrics_http.h"
#include "live/outputs/prometheus_text.h"
#include "live/outputs/run_metrics.h"

namespace stepwatch::live {
namespace {
namespace fs = std::filesystem;

bool contains_line(const std::string& text, const std::string& line) {
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    if (l == line) return true;
  }
  return false;
}

StepView traced_step(int64_t step, int64_t ms, int64_t compute_ms, int64_t input_ms) {
  StepView v;
  v.step = step;
  v.start_ns = step * 1'000'000'000;
  v.end_ns = v.start_ns + ms * 1'000'000;
  v.compute_ns = compute_ms * 1'000'000;
  v.busy_ns = v.compute_ns;
  v.idle[IdleCause::kInput] = input_ms * 1'000'000;
  v.idle[IdleCause::kHost] = (ms - compute_ms - input_ms) * 1'000'000;
  return v;
}

Finding finding(const std::string& detector, double cost_ms) {
  Finding f;
  f.detector = detector;
  f.cost_ms = cost_ms;
  return f;
}

TEST(RunMetrics, CountsStepsBreakdownFindingsAndLosses) {
  RunMetrics m(3, "1.2.3");
  const Finding starved[] = {finding("input_starvation", 30.0)};
  m.add_step(traced_step(0, 100, 60, 30), StepStatus::kWarmup, {});
  m.add_step(traced_step(1, 100, 60, 30), StepStatus::kJudged, starved);
  m.add_step(traced_step(2, 400, 0, 0), StepStatus::kUntraced, {});
  m.add_run_finding(finding("data_loss", 0.0));
  const uint64_t losses[] = {0, 3, 0, 0, 7};  // kBufferPoolExhausted = 1 (buffers), kQueueFull = 4
  m.set_losses(losses);
  const MetricsSnapshot& s = m.snapshot();
  EXPECT_EQ(s.dropped_buffers.at("buffer_pool_exhausted"), 3u);
  EXPECT_EQ(s.dropped_records.count("buffer_pool_exhausted"), 0u) << "buffers are not records";
  EXPECT_EQ(s.rank, 3);
  EXPECT_EQ(s.steps, 3u);
  EXPECT_EQ(s.judged_steps, 1u);
  EXPECT_DOUBLE_EQ(s.step_seconds_sum, 0.6);
  EXPECT_DOUBLE_EQ(*s.last_step_seconds, 0.4);
  // The untraced step changes neither the breakdown nor the duty cycle (it has no GPU data).
  EXPECT_DOUBLE_EQ(s.breakdown_seconds[static_cast<size_t>(BreakdownCategory::kCompute)], 0.12);
  EXPECT_DOUBLE_EQ(s.breakdown_seconds[static_cast<size_t>(BreakdownCategory::kInput)], 0.06);
  EXPECT_DOUBLE_EQ(s.breakdown_seconds[static_cast<size_t>(BreakdownCategory::kHost)], 0.02);
  EXPECT_DOUBLE_EQ(*s.gpu_duty_cycle, 0.6);
  EXPECT_EQ(s.detectors.at("input_starvation").findings, 1u);
  EXPECT_DOUBLE_EQ(s.detectors.at("input_starvation").cost_seconds, 0.03);
  EXPECT_EQ(s.detectors.at("data_loss").findings, 1u);
  EXPECT_EQ(s.dropped_records.at("queue_full"), 7u);
  // 0.1 s falls in the 0.1 bucket (le is inclusive), 0.4 s in 0.5.
  EXPECT_EQ(s.step_bucket_counts[4], 2u);
  EXPECT_EQ(s.step_bucket_counts[6], 1u);
}

TEST(PrometheusText, RendersEveryFamilyWithRankLabelsAndCumulativeBuckets) {
  RunMetrics m(1, "0.1.0");
  const Finding both[] = {finding("input_starvation", 30.0), finding("hidden_sync", 5.5)};
  m.add_step(traced_step(4, 100, 60, 30), StepStatus::kJudged, both);
  m.add_step(traced_step(5, 300, 60, 30), StepStatus::kJudged, {});
  m.set_individual_scores(0.5, std::nullopt);
  const uint64_t losses[] = {2, 1};
  m.set_losses(losses);
  const std::string text = render_prometheus(m.snapshot());

  EXPECT_TRUE(contains_line(text, "# TYPE stepwatch_steps_total counter")) << text;
  EXPECT_TRUE(contains_line(text, "stepwatch_steps_total{rank=\"1\"} 2")) << text;
  EXPECT_TRUE(contains_line(text, "stepwatch_judged_steps_total{rank=\"1\"} 2")) << text;
  EXPECT_TRUE(contains_line(text, "# TYPE stepwatch_step_seconds histogram")) << text;
  EXPECT_TRUE(contains_line(text, "stepwatch_step_seconds_bucket{rank=\"1\",le=\"0.05\"} 0")) << text;
  EXPECT_TRUE(contains_line(text, "stepwatch_step_seconds_bucket{rank=\"1\",le=\"0.1\"} 1")) << text;
  EXPECT_TRUE(contains_line(text, "stepwatch_step_seconds_bucket{rank=\"1\",le=\"0.25\"} 1")) << text;
  EXPECT_TRUE(contains_line(text, "stepwatch_step_seconds_bucket{rank=\"1\",le=\"0.5\"} 2")) << text;
  EXPECT_TRUE(contains_line(text, "stepwatch_step_seconds_bucket{rank=\"1\",le=\"+Inf\"} 2")) << text;
  EXPECT_TRUE(contains_line(text, "stepwatch_step_seconds_sum{rank=\"1\"} 0.4")) << text;
  EXPECT_TRUE(contains_line(text, "stepwatch_step_seconds_count{rank=\"1\"} 2")) << text;
  EXPECT_TRUE(contains_line(text, "stepwatch_last_step_seconds{rank=\"1\"} 0.3")) << text;
  EXPECT_TRUE(contains_line(text, "stepwatch_gpu_duty_cycle{rank=\"1\"} 0.2")) << text;
  EXPECT_TRUE(contains_line(text, "stepwatch_step_breakdown_seconds_total{rank=\"1\",category=\"compute\"} 0.12"))
      << text;
  EXPECT_TRUE(contains_line(text, "stepwatch_step_breakdown_seconds_total{rank=\"1\",category=\"comm_exposed\"} 0"))
      << text;
  EXPECT_TRUE(contains_line(text, "stepwatch_findings_total{rank=\"1\",detector=\"hidden_sync\"} 1")) << text;
  EXPECT_TRUE(contains_line(text, "stepwatch_detector_cost_seconds_total{rank=\"1\",detector=\"hidden_sync\"} 0.0055"))
      << text;
  EXPECT_TRUE(contains_line(text, "stepwatch_dropped_records_total{rank=\"1\",kind=\"cupti_dropped\"} 2")) << text;
  EXPECT_TRUE(contains_line(text, "stepwatch_dropped_buffers_total{rank=\"1\",kind=\"buffer_pool_exhausted\"} 1"))
      << text;
  EXPECT_TRUE(contains_line(text, "stepwatch_individual_score{rank=\"1\",signal=\"step_time\"} 0.5")) << text;
  EXPECT_EQ(text.find("collective_wait"), std::string::npos) << "a score not yet known is left out";
  EXPECT_TRUE(contains_line(text, "stepwatch_info{rank=\"0\",version=\"0.1.0\"} 1") ||
              contains_line(text, "stepwatch_info{rank=\"1\",version=\"0.1.0\"} 1"))
      << text;
  // Every sample line belongs to a family declared before it.
  std::istringstream in(text);
  std::string declared;
  for (std::string l; std::getline(in, l);) {
    if (l.rfind("# TYPE ", 0) == 0) declared = l.substr(7, l.find(' ', 7) - 7);
    if (l.empty() || l[0] == '#') continue;
    EXPECT_EQ(l.rfind(declared, 0), 0u) << l << " after family " << declared;
  }
  EXPECT_EQ(text.back(), '\n');
}

TEST(PrometheusText, EscapesLabelValuesAndWritesSpecialFloats) {
  MetricsSnapshot s;
  s.detectors["odd\"id\\x\ny"].findings = 1;
  s.last_step_seconds = std::numeric_limits<double>::quiet_NaN();
  s.gpu_duty_cycle = std::numeric_limits<double>::infinity();
  const std::string text = render_prometheus(s);
  EXPECT_TRUE(contains_line(text, "stepwatch_findings_total{rank=\"0\",detector=\"odd\\\"id\\\\x\\ny\"} 1")) << text;
  EXPECT_TRUE(contains_line(text, "stepwatch_last_step_seconds{rank=\"0\"} NaN")) << text;
  EXPECT_TRUE(contains_line(text, "stepwatch_gpu_duty_cycle{rank=\"0\"} +Inf")) << text;
}

TEST(MetricsHttp, ParsesRequestHeads) {
  std::string method, path;
  EXPECT_EQ(parse_request_head("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", method, path), HttpHead::kOk);
  EXPECT_EQ(method, "GET");
  EXPECT_EQ(path, "/metrics");
  EXPECT_EQ(parse_request_head("HEAD /metrics?name[]=x HTTP/1.0\n\n", method, path), HttpHead::kOk);
  EXPECT_EQ(method, "HEAD");
  EXPECT_EQ(path, "/metrics");
  EXPECT_EQ(parse_request_head("GET /metrics HTTP/1.1\r\nHost: x\r\n", method, path), HttpHead::kIncomplete);
  EXPECT_EQ(parse_request_head("GET /metr", method, path), HttpHead::kIncomplete);
  EXPECT_EQ(parse_request_head("", method, path), HttpHead::kIncomplete);
  // Malformed request lines are refused at once, before the head is complete.
  EXPECT_EQ(parse_request_head("GET /metrics\r\n", method, path), HttpHead::kBad);
  EXPECT_EQ(parse_request_head("GET metrics HTTP/1.1\r\n", method, path), HttpHead::kBad);
  EXPECT_EQ(parse_request_head("GET /metrics SPDY/3\r\n", method, path), HttpHead::kBad);
  EXPECT_EQ(parse_request_head("G\x01T /metrics HTTP/1.1\r\n", method, path), HttpHead::kBad);
  EXPECT_EQ(parse_request_head(" /metrics HTTP/1.1\r\n", method, path), HttpHead::kBad);
  EXPECT_EQ(parse_request_head("GET  HTTP/1.1\r\n", method, path), HttpHead::kBad);
}

TEST(MetricsHttp, AnswersOnlyGetAndHeadOfMetrics) {
  const auto body = [] { return std::string("stepwatch_steps_total{rank=\"0\"} 1\n"); };
  const std::string ok = metrics_http_response("GET", "/metrics", body);
  EXPECT_EQ(ok.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << ok;
  EXPECT_NE(ok.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
  const size_t length = body().size();
  EXPECT_NE(ok.find("Content-Length: " + std::to_string(length) + "\r\n"), std::string::npos) << ok;
  EXPECT_EQ(ok.substr(ok.size() - length), body());
  const std::string head = metrics_http_response("HEAD", "/metrics", body);
  EXPECT_EQ(head.substr(head.size() - 4), "\r\n\r\n") << "HEAD has no body";
  EXPECT_EQ(metrics_http_response("GET", "/", body).rfind("HTTP/1.1 404", 0), 0u);
  EXPECT_EQ(metrics_http_response("POST", "/metrics", body).rfind("HTTP/1.1 405", 0), 0u);
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

sockaddr_in loopback(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  return addr;
}

// A request and its whole reply; connect, send and each receive give up after 3 s (a server that
// does not answer fails the test instead of hanging it).
std::string exchange(int port, const std::string& request) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  const timeval limit{3, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);  // also bounds connect
  const sockaddr_in addr = loopback(port);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return "connect failed";
  }
  ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string reply;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) reply.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return reply;
}

TEST(MetricsHttpServer, ServesOverASocketAndRefusesGarbage) {
  MetricsHttpServer server;
  std::string error;
  int scrapes = 0;
  ASSERT_TRUE(server.start("127.0.0.1", 0, [&] { return "scrape " + std::to_string(++scrapes) + "\n"; }, error))
      << error;
  ASSERT_GT(server.port(), 0);
  const std::string first = exchange(server.port(), "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n");
  EXPECT_EQ(first.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << first;
  EXPECT_NE(first.find("\r\n\r\nscrape 1\n"), std::string::npos) << first;
  EXPECT_NE(exchange(server.port(), "GET /metrics HTTP/1.1\r\n\r\n").find("scrape 2"), std::string::npos);
  EXPECT_EQ(exchange(server.port(), "\x16\x03\x01 hello\r\n\r\n").rfind("HTTP/1.1 400", 0), 0u);
  EXPECT_EQ(exchange(server.port(), "GET /" + std::string(9000, 'a')).rfind("HTTP/1.1 431", 0), 0u);
  EXPECT_EQ(exchange(server.port(), "GET /x HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 404", 0), 0u);
  EXPECT_EQ(scrapes, 2) << "only /metrics renders";

  // A second server on the same port fails with a reason instead of throwing or stealing it.
  MetricsHttpServer second;
  EXPECT_FALSE(second.start("127.0.0.1", server.port(), [] { return std::string(); }, error));
  EXPECT_NE(error.find("127.0.0.1:" + std::to_string(server.port())), std::string::npos) << error;
  EXPECT_FALSE(second.start("localhost", 0, [] { return std::string(); }, error)) << "numeric addresses only";
  server.stop();
  server.stop();  // idempotent
  EXPECT_EQ(exchange(server.port(), "GET /metrics HTTP/1.1\r\n\r\n"), "connect failed");
}

// A client that connects and then sends `partial` (or nothing) and never the rest. The connect does
// not block: it completes in the kernel's backlog whether or not the server accepts.
int idle_client(int port, const std::string& partial) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  const sockaddr_in addr = loopback(port);
  (void)::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  pollfd p{fd, POLLOUT, 0};
  (void)::poll(&p, 1, 1000);
  if (!partial.empty()) (void)::send(fd, partial.data(), partial.size(), MSG_NOSIGNAL);
  return fd;
}

// Whether the server closed `fd` within `timeout_ms` (recv sees the end of the stream or a reset).
bool closed_by_server(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, timeout_ms) <= 0) return false;
  char c;
  return ::recv(fd, &c, 1, MSG_DONTWAIT) <= 0;
}

template <typename Pred>
bool eventually(Pred pred, int timeout_ms = 2000) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Issue 17 item 6: one connection at a time with a 2 s deadline each made 10 half-open requests
// delay a real scrape by 20 s and 32 made the endpoint unusable. Served concurrently, 40 of them
// (within the cap) delay it by nothing that matters.
TEST(MetricsHttpServer, HalfOpenConnectionsDoNotDelayAScrape) {
  MetricsHttpServer server;
  std::string error;
  ASSERT_TRUE(server.start("127.0.0.1", 0, [] { return std::string("m 1\n"); }, error)) << error;
  std::vector<int> slow;
  for (int i = 0; i < 40; ++i) slow.push_back(idle_client(server.port(), i % 2 ? "GET /metrics HTTP/1.1\r\nHo" : ""));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // let the server take them in
  const auto t0 = std::chrono::steady_clock::now();
  const std::string reply = exchange(server.port(), "GET /metrics HTTP/1.1\r\n\r\n");
  const double latency_ms = ms_since(t0);
  EXPECT_EQ(reply.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << reply;
  EXPECT_LT(latency_ms, 500.0) << "a scrape behind 40 half-open connections";
  std::printf("scrape latency with 40 half-open connections: %.1f ms\n", latency_ms);
  std::fflush(stdout);  // not left in a buffer that a forked test's child would copy
  for (int fd : slow) ::close(fd);
  server.stop();
}

// The cap: at max_connections the connection that has waited longest for its request is closed
// for the new one (a scrape gets through a flood of idle connections); the deadline: an idle
// connection is closed deadline_ms after it was accepted. Both are counted.
TEST(MetricsHttpServer, TheCapAndTheDeadlineCloseIdleConnections) {
  MetricsHttpServer server;
  std::string error;
  ASSERT_TRUE(server.start("127.0.0.1", 0, [] { return std::string("m 1\n"); }, error,
                           MetricsHttpServer::Limits{4, 1000}))
      << error;
  std::vector<int> idle;
  for (int i = 0; i < 4; ++i) idle.push_back(idle_client(server.port(), ""));
  ASSERT_TRUE(eventually([&] { return server.open_connections() == 4; })) << server.open_connections();
  idle.push_back(idle_client(server.port(), ""));  // the fifth: the first one makes room
  EXPECT_TRUE(closed_by_server(idle[0], 300)) << "the oldest idle connection is closed at the cap";
  EXPECT_FALSE(closed_by_server(idle[1], 0));
  EXPECT_TRUE(eventually([&] { return server.stats().closed_at_cap == 1; }));
  EXPECT_LE(server.open_connections(), 4);

  const auto t0 = std::chrono::steady_clock::now();
  const std::string reply = exchange(server.port(), "GET /metrics HTTP/1.1\r\n\r\n");
  EXPECT_EQ(reply.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << "a scrape at the cap: " << reply;
  EXPECT_LT(ms_since(t0), 300.0);
  EXPECT_TRUE(closed_by_server(idle[1], 300)) << "the next oldest made room for the scrape";
  EXPECT_EQ(server.stats().closed_at_cap, 2u);
  EXPECT_EQ(server.stats().served, 1u);

  // The three left are closed at their deadline (1 s after accept), not before.
  EXPECT_FALSE(closed_by_server(idle[4], 300));
  EXPECT_TRUE(closed_by_server(idle[4], 2000));
  EXPECT_TRUE(eventually([&] { return server.stats().closed_at_deadline == 3 && server.open_connections() == 0; }))
      << server.stats().closed_at_deadline;
  for (int fd : idle) ::close(fd);
  server.stop();
}

// The host's descriptor limit is ours too. With none left, accept fails (EMFILE) while the
// connection stays queued and the socket readable: the loop must pause accepting, not spin a core.
TEST(MetricsHttpServer, OutOfDescriptorsPausesAcceptingInsteadOfSpinning) {
  int port_pipe[2];
  int go[2];
  ASSERT_EQ(::pipe(port_pipe), 0);
  ASSERT_EQ(::pipe(go), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // the server, in a process of its own: its descriptor limit is lowered below
    MetricsHttpServer server;
    std::string error;
    if (!server.start("127.0.0.1", 0, [] { return std::string("m 1\n"); }, error)) ::_exit(10);
    const int port = server.port();
    (void)!::write(port_pipe[1], &port, sizeof port);
    const int lowest_free = ::open("/dev/null", O_RDONLY);
    ::close(lowest_free);
    rlimit limit{};
    ::getrlimit(RLIMIT_NOFILE, &limit);
    limit.rlim_cur = static_cast<rlim_t>(lowest_free);  // no new descriptor from here on
    if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) ::_exit(11);
    char c;
    (void)!::read(go[0], &c, 1);  // a client is queued
    rusage before{}, after{};
    ::getrusage(RUSAGE_SELF, &before);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    ::getrusage(RUSAGE_SELF, &after);
    const auto cpu_us = [](const rusage& r) {
      return (r.ru_utime.tv_sec + r.ru_stime.tv_sec) * 1'000'000LL + r.ru_utime.tv_usec + r.ru_stime.tv_usec;
    };
    const long long used_ms = (cpu_us(after) - cpu_us(before)) / 1000;
    server.stop();
    ::_exit(used_ms < 100 ? 0 : 1);
  }
  int port = 0;
  ASSERT_EQ(::read(port_pipe[0], &port, sizeof port), static_cast<ssize_t>(sizeof port));
  const int client = idle_client(port, "GET /metrics HTTP/1.1\r\n\r\n");
  char c = 1;
  (void)!::write(go[1], &c, 1);
  int status = 0;
  ::waitpid(child, &status, 0);
  ::close(client);
  for (int fd : {port_pipe[0], port_pipe[1], go[0], go[1]}) ::close(fd);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: the server thread burnt >= 100 ms of CPU in 500 ms with accept failing";
}

// The limits in the job log: one line per kind, the first time, however often it recurs.
TEST(MetricsExporter, SaysOnceWhenTheEndpointsLimitsAreHit) {
  const fs::path log_path = fs::temp_directory_path() / ("sw-limits-" + std::to_string(::getpid()) + ".log");
  fs::remove(log_path);
  LiveConfig c;
  {
    const int probe = ::socket(AF_INET, SOCK_STREAM, 0);  // a free port for the exporter
    sockaddr_in addr = loopback(0);
    socklen_t length = sizeof addr;
    ASSERT_EQ(::bind(probe, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
    ::getsockname(probe, reinterpret_cast<sockaddr*>(&addr), &length);
    c.metrics_port = ntohs(addr.sin_port);
    ::close(probe);
  }
  LogReporter log(make_job_logger("info", log_path.string()), c);
  MetricsExporter exporter(c, log, MetricsHttpServer::Limits{2, 200});
  ASSERT_EQ(exporter.port(), c.metrics_port);
  std::vector<int> idle;
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 3; ++i) idle.push_back(idle_client(c.metrics_port, ""));
    std::this_thread::sleep_for(std::chrono::milliseconds(400));  // past the deadline
    exporter.publish(MetricsSnapshot{}, 0, false);
  }
  exporter.stop();
  for (int fd : idle) ::close(fd);
  log.flush();
  const std::string text = read_file(log_path);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 3) << "start-up, deadline, cap:\n" << text;
  EXPECT_NE(text.find("metrics: closed a connection that sent no complete request (or did not read its reply) "
                      "within 200 ms"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("metrics: 2 connections open at once (the cap)"), std::string::npos) << text;
  fs::remove(log_path);
}

// DataLoader workers are forked children: each inherits the listening socket. Released in the
// child, the port is free again as soon as the parent stops serving, workers still alive or not.
TEST(MetricsHttpServer, AForkedChildReleasesTheListeningSocket) {
  for (const bool release : {false, true}) {
    MetricsHttpServer server;
    std::string error;
    ASSERT_TRUE(server.start("127.0.0.1", 0, [] { return std::string("x\n"); }, error)) << error;
    const int port = server.port();
    int ready[2];
    int quit[2];
    ASSERT_EQ(::pipe(ready), 0);
    ASSERT_EQ(::pipe(quit), 0);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {  // a "worker": waits until the parent has tried to take the port again
      if (release) server.close_in_child();
      char c = 1;
      (void)!::write(ready[1], &c, 1);
      (void)!::read(quit[0], &c, 1);
      ::_exit(0);
    }
    char c = 0;
    ASSERT_EQ(::read(ready[0], &c, 1), 1);
    server.stop();
    MetricsHttpServer again;
    const bool rebound = again.start("127.0.0.1", port, [] { return std::string("y\n"); }, error);
    again.stop();
    (void)!::write(quit[1], &c, 1);
    int status = 0;
    ::waitpid(child, &status, 0);
    for (int fd : {ready[0], ready[1], quit[0], quit[1]}) ::close(fd);
    if (release) {
      EXPECT_TRUE(rebound) << "released in the child, the port is free once the parent stops: " << error;
    } else {
      EXPECT_FALSE(rebound) << "without the release the worker holds the port (the case this guards)";
    }
  }
}

TEST(MetricsTextfile, RankInTheNameAndAtomicWrite) {
  EXPECT_EQ(metrics_textfile_path("/var/lib/node_exporter/stepwatch.prom", 3),
            "/var/lib/node_exporter/stepwatch.rank3.prom");
  EXPECT_EQ(metrics_textfile_path("/tmp/sw", 0), "/tmp/sw.rank0.prom");
  const fs::path dir = fs::temp_directory_path() / ("sw-metrics-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "m.rank0.prom").string();
  std::string error;
  ASSERT_TRUE(write_file_atomically(path, "a 1\n", error)) << error;
  ASSERT_TRUE(write_file_atomically(path, "a 2\n", error)) << error;
  std::ifstream in(path);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(content, "a 2\n");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1) << "no temporary left behind";
  EXPECT_FALSE(write_file_atomically((dir / "missing" / "m.prom").string(), "x", error));
  EXPECT_NE(error.find("missing"), std::string::npos) << error;
  fs::remove_all(dir);
}


TEST(MetricsConfig, OffByDefaultPortOffsetByLocalRank) {
  std::vector<std::string> problems;
  LiveConfig c = test_support::read_config({}, problems);
  EXPECT_EQ(c.metrics_port, 0);
  EXPECT_EQ(c.metrics_addr, "127.0.0.1");
  EXPECT_TRUE(c.metrics_textfile.empty());
  c = test_support::read_config({{"STEPWATCH_METRICS_PORT", "9400"}, {"RANK", "11"}, {"LOCAL_RANK", "3"},
            {"STEPWATCH_METRICS_ADDR", "0.0.0.0"}, {"STEPWATCH_METRICS_TEXTFILE", "/d/sw.prom"},
            {"STEPWATCH_METRICS_INTERVAL_S", "5"}},
           problems);
  EXPECT_TRUE(problems.empty());
  EXPECT_EQ(c.rank, 11);
  EXPECT_EQ(c.local_rank, 3);
  EXPECT_EQ(c.metrics_port, 9400);
  EXPECT_EQ(c.metrics_addr, "0.0.0.0");
  EXPECT_EQ(c.metrics_textfile, "/d/sw.prom");
  EXPECT_EQ(c.metrics_interval_s, 5);
  c = test_support::read_config({{"SLURM_LOCALID", "2"}}, problems);
  EXPECT_EQ(c.local_rank, 2);
}

TEST(MetricsConfig, BadValuesGiveOneLineAndNoEndpoint) {
  std::vector<std::string> problems;
  LiveConfig c = test_support::read_config({{"STEPWATCH_METRICS_PORT", "http"}, {"STEPWATCH_METRICS_INTERVAL_S", "0"}}, problems);
  EXPECT_EQ(c.metrics_port, 0);
  EXPECT_EQ(c.metrics_interval_s, 15);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_NE(problems[0].find("STEPWATCH_METRICS_PORT=http"), std::string::npos);
  problems.clear();
  c = test_support::read_config({{"STEPWATCH_METRICS_PORT", "65535"}, {"LOCAL_RANK", "1"}}, problems);
  EXPECT_EQ(c.metrics_port, 0);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("past 65535"), std::string::npos) << problems[0];
}

// Two ranks with one STEPWATCH_OUTPUT_DIR (torchrun's default): each writes its own folder and
// textfile, and its log lines carry its rank.
TEST(MultiRankOutputs, RanksSharingAnOutputDirDoNotClobberEachOther) {
  const fs::path dir = fs::temp_directory_path() / ("sw-ranks-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (int rank : {1, 2}) {
    LiveConfig c;
    c.output_dir = dir.string();
    c.rank = rank;
    c.local_rank = rank;
    c.flush_period_ms = 100;
    c.metrics_textfile = (dir / "stepwatch.prom").string();
    const std::string log = (dir / ("log" + std::to_string(rank))).string();
    auto session = LiveSession::create(c, {}, log);
    EXPECT_EQ(session->run_dir(), dir.string() + "/rank" + std::to_string(rank) + "-pid" + std::to_string(::getpid()));
    session->step_begin(0);
    session->step_end();
    session->step_begin(1);
    session->step_end();
    session->flush();
    session.reset();  // shutdown: final pass, exit summary, textfile
    EXPECT_NE(read_file(log).find("[stepwatch][rank " + std::to_string(rank) + "]"), std::string::npos);
  }
  for (int rank : {1, 2}) {
    const std::string r = std::to_string(rank);
    EXPECT_TRUE(fs::exists(dir / ("rank" + r + "-pid" + std::to_string(::getpid())) / "summary.json"));
    const std::string prom = read_file(dir / ("stepwatch.rank" + r + ".prom"));
    EXPECT_TRUE(contains_line(prom, "stepwatch_steps_total{rank=\"" + r + "\"} 2")) << prom;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace stepwatch::live

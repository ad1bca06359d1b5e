#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <cctype>
#include <sstream>

#include "stepwatch/report/html.h"

namespace stepwatch {
namespace {

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++n;
  return n;
}

// `word` (lower case) as a whole word, in any case: how printf writes NaN and infinities.
bool has_word(const std::string& text, const std::string& word) {
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  for (size_t i = 0; i + word.size() <= text.size(); ++i) {
    if ((i > 0 && alnum(text[i - 1])) || (i + word.size() < text.size() && alnum(text[i + word.size()]))) continue;
    bool match = true;
    for (size_t k = 0; k < word.size() && match; ++k) match = std::tolower(static_cast<unsigned char>(text[i + k])) == word[k];
    if (match) return true;
  }
  return false;
}

StepView make_step(int64_t step, int64_t dur_ns) {
  // compute 50%, exposed comm 10%, copy-only 5%, idle: input 20%, sync 10%, host 5%.
  StepView v;
  v.step = step;
  v.start_ns = step * dur_ns;
  v.end_ns = v.start_ns + dur_ns;
  v.compute_ns = dur_ns / 2;
  v.exposed_comm_ns = dur_ns / 10;
  v.copy_only_ns = dur_ns / 20;
  v.idle[IdleCause::kInput] = dur_ns / 5;
  v.idle[IdleCause::kSync] = dur_ns / 10;
  v.idle[IdleCause::kHost] = dur_ns - v.compute_ns - v.exposed_comm_ns - v.copy_only_ns -
                             v.idle[IdleCause::kInput] - v.idle[IdleCause::kSync];
  v.busy_ns = v.compute_ns + v.exposed_comm_ns + v.copy_only_ns;
  v.top_kernels.push_back({"void gemm<float, 128>(T*, T const&)", 10, dur_ns / 3, 0, 0});
  BlockingCallStat sync;
  sync.name = "cudaStreamSynchronize";
  sync.api_class = ApiClass::kStreamSync;
  sync.count = 2;
  sync.host_ns = dur_ns / 8;
  sync.gpu_idle_ns = dur_ns / 10;
  v.blocking.push_back(sync);
  CopyRecord copy;
  copy.kind = CopyKind::kHtoD;
  copy.src = MemoryKind::kPageable;
  copy.dst = MemoryKind::kDevice;
  copy.bytes = 64ull << 20;
  copy.duration_ns = 5'000'000;
  v.copies.push_back(copy);
  return v;
}

RunSummary summary_of(const std::vector<StepView>& steps) {
  RunSummaryBuilder b(0);
  for (const StepView& v : steps) b.add_step(v, StepStatus::kJudged, {});
  return b.build();
}

RankResult make_rank(size_t steps, int rank = 0) {
  RankResult r;
  r.rank = rank;
  r.source = "run/rank0.json.gz";
  r.segmentation.source = StepSource::kRange;
  r.segmentation.matched_name = "ProfilerStep#1";
  for (size_t i = 0; i < steps; ++i) r.steps.push_back(make_step(int64_t(i), 40'000'000 + int64_t(i % 7) * 1'000'000));
  r.summary.rank = rank;
  r.summary.steps = int(steps);
  r.summary.step_ms = summary_of(r.steps).step_ms;
  r.summary.gpu_busy_pct = 65;
  r.summary.comm_comp_overlap_pct = std::numeric_limits<double>::quiet_NaN();  // no comm
  return r;
}

Finding make_finding(int64_t step) {
  Finding f;
  f.detector = "input_starvation";
  f.step = step;
  f.severity = Severity::kWarning;
  f.cost_ms = 8.0;
  f.cost_pct = 20.0;
  f.message = "GPU idle 8.0 ms (20% of 40.0 ms) while the host waited for data. Fix: more DataLoader workers.";
  return f;
}

std::string render(const std::vector<RankResult>& ranks, const HtmlReportOptions& options = {}) {
  std::ostringstream out;
  write_html_report(ranks, out, options);
  return out.str();
}

// Self-contained, well-formed enough to trust, and free of non-finite numbers.
void expect_sane_page(const std::string& html) {
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("</html>"), std::string::npos);
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("url("), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  EXPECT_NE(html.find("Content-Security-Policy"), std::string::npos);
  for (const char* tag : {"svg", "table", "section", "g", "tr", "title"}) {
    EXPECT_EQ(count(html, std::string("<") + tag + " ") + count(html, std::string("<") + tag + ">"),
              count(html, std::string("</") + tag + ">"))
        << tag;
  }
  EXPECT_FALSE(has_word(html, "nan"));
  EXPECT_FALSE(has_word(html, "inf"));
  EXPECT_FALSE(has_word(html, "infinity"));
}

TEST(HtmlReport, OneBarPerStepAndTheFindingsTable) {
  RankResult r = make_rank(7);
  r.findings = {make_finding(2), make_finding(5)};
  r.summary.findings["input_starvation"] = {2, 16.0, TaxShare::kOwn, {}};
  const std::string html = render({r});
  expect_sane_page(html);
  EXPECT_EQ(count(html, "<g class=\"bar\">"), 7u);
  EXPECT_NE(html.find("id=\"findings-rank-0\""), std::string::npos);
  // The totals row, and one row for the two findings: steps 2 and 5 of 2..5 fired (half of them).
  EXPECT_EQ(count(html, "<td class=\"det\">input_starvation</td>"), 2u);
  EXPECT_NE(html.find("<td>2–5 (2 of 4)</td>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"fix\">more DataLoader workers.</td>"), std::string::npos);
  EXPECT_NE(html.find("idle: input"), std::string::npos);
  EXPECT_NE(html.find("cudaStreamSynchronize"), std::string::npos);
  // Copies: 7 × 64 MiB in 7 × 5 ms = 13.42 GB/s.
  EXPECT_NE(html.find("<td>13.42</td>"), std::string::npos);
}

TEST(HtmlReport, ListsWhereTheBlockingCallsWereMade) {
  RankResult r = make_rank(3);
  EXPECT_EQ(render({r}).find("Where the blocking calls were made"), std::string::npos) << "no frames, no table";
  for (StepView& v : r.steps) {
    v.blocking_sites.push_back({"log_metrics() defined at train.py:40", "Tensor.item()", "cudaMemcpyAsync", 5,
                                2'000'000, 1'500'000});
    v.blocking_sites.push_back({"train.py:99 in <lambda>", "", "cudaStreamSynchronize", 1, 100'000, 0});
  }
  const std::string html = render({r});
  expect_sane_page(html);
  EXPECT_NE(html.find("id=\"sites-rank-0\""), std::string::npos);
  const size_t first = html.find("<td class=\"name\">log_metrics() defined at train.py:40</td><td>Tensor.item()</td>"
                                 "<td>cudaMemcpyAsync</td><td>15</td>");
  EXPECT_NE(first, std::string::npos);
  const size_t second = html.find("train.py:99 in &lt;lambda&gt;");
  EXPECT_NE(second, std::string::npos);
  EXPECT_LT(first, second) << "most GPU idle first";
}

TEST(HtmlReport, EscapesNamesFromTheTrace) {
  RankResult r = make_rank(2);
  r.source = "evil<script>alert('x')</script>&\".json";
  r.steps[0].top_kernels[0].name = "k<int>&\"'";
  Finding f = make_finding(1);
  f.message = "a <b> & \"c\" 'd'. Fix: <e>";
  r.findings = {f};
  r.summary.findings["input_starvation"] = {1, 8.0, TaxShare::kOwn, {}};
  const std::string html = render({r}, HtmlReportOptions{"title <&>"});
  expect_sane_page(html);
  EXPECT_EQ(html.find("<script>"), std::string::npos);
  EXPECT_EQ(html.find("k<int>"), std::string::npos);
  EXPECT_NE(html.find("k&lt;int&gt;&amp;&quot;&#39;"), std::string::npos);
  EXPECT_NE(html.find("evil&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;.json"), std::string::npos);
  EXPECT_NE(html.find("a &lt;b&gt; &amp; &quot;c&quot; &#39;d&#39;."), std::string::npos);
  EXPECT_NE(html.find("<td class=\"fix\">&lt;e&gt;</td>"), std::string::npos);
  EXPECT_NE(html.find("<title>title &lt;&amp;&gt;</title>"), std::string::npos);
}

TEST(HtmlReport, NoStepsAndNoRanks) {
  RankResult r = make_rank(0);
  r.summary.step_ms = {std::nan(""), std::nan(""), std::nan(""), std::nan("")};
  r.summary.gpu_busy_pct = std::numeric_limits<double>::infinity();
  const std::string html = render({r});
  expect_sane_page(html);
  EXPECT_EQ(count(html, "<g class=\"bar\">"), 0u);
  EXPECT_NE(html.find("No steps"), std::string::npos);
  EXPECT_NE(html.find("No findings"), std::string::npos);

  const std::string none = render({});
  expect_sane_page(none);
  EXPECT_NE(none.find("No traces analyzed"), std::string::npos);
}

TEST(HtmlReport, OneStepAndAZeroLengthStep) {
  RankResult r = make_rank(1);
  std::string html = render({r});
  expect_sane_page(html);
  EXPECT_EQ(count(html, "<g class=\"bar\">"), 1u);
  EXPECT_EQ(count(html, "<circle class=\"pt\""), 1u);  // a lone point still shows

  StepView empty;
  empty.step = 3;
  r.steps = {empty};  // zero duration: every share is 0/0
  r.summary.step_ms = summary_of(r.steps).step_ms;
  html = render({r});
  expect_sane_page(html);
}

TEST(HtmlReport, TenThousandStepsAreAggregated) {
  RankResult r = make_rank(10'000);
  for (int64_t s = 0; s < 10'000; s += 10) r.findings.push_back(make_finding(s));
  r.summary.findings["input_starvation"] = {1000, 8000.0, TaxShare::kOwn, {}};
  HtmlReportOptions options;
  const std::string html = render({r}, options);
  expect_sane_page(html);
  const size_t bars = count(html, "<g class=\"bar\">");
  EXPECT_LE(bars, options.max_step_bars);
  EXPECT_GE(bars, options.max_step_bars / 2);
  EXPECT_NE(html.find("each bar is the mean of 34 consecutive steps"), std::string::npos);
  EXPECT_NE(html.find("the 100 costliest are listed"), std::string::npos);
  EXPECT_LT(html.size(), 1'000'000u);
}

TEST(HtmlReport, SeveralRanksGetAnOverviewAndASectionEach) {
  const std::string html = render({make_rank(3, 0), make_rank(4, 1)});
  expect_sane_page(html);
  EXPECT_NE(html.find("<h2>All ranks</h2>"), std::string::npos);
  EXPECT_NE(html.find("<section class=\"rank\" id=\"rank-0\">"), std::string::npos);
  EXPECT_NE(html.find("<section class=\"rank\" id=\"rank-1\">"), std::string::npos);
  EXPECT_EQ(count(html, "<g class=\"bar\">"), 7u);
}

}  // namespace
}  // namespace stepwatch

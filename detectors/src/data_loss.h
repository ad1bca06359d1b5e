#pragma once

#include "stepwatch/core/data_loss.h"
#include "stepwatch/core/detector.h"

namespace stepwatch {

// Not a fault of the program but of the data: records that never reached the analysis (the
// tracer dropped them, a queue or table was full, the importer could not use them, they arrived
// after their step was judged). Reported when the count changes: at the first step that sees it
// and at the end of data; an established finding (the live log says so at once, rate-limited).
class DataLossDetector final : public Detector {
 public:
  static constexpr std::string_view kId = "data_loss";
  static constexpr bool kNoCost = true;  // says what the data lacks: nothing to threshold
  static constexpr std::string_view kDescription =
      "Trace records lost before the analysis (dropped, unusable or late): findings near them may miss activity";
  explicit DataLossDetector(const AnalysisConfig& /*config*/) {}
  std::string_view id() const override { return kId; }
  void on_step(const StepView& step, FindingSink& sink) override;
  void on_finish(const RunView& run, FindingSink& sink) override;

 private:
  void report(int rank, int64_t step, const LossSnapshot& now, FindingSink& sink);
  LossSnapshot reported_;
};

}  // namespace stepwatch

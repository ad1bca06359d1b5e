#include "live/cupti_adapter.h"
#include "cupti/cupti_api.h"

namespace stepwatch::live {

CuptiState start_cupti(std::string_view cupti_path, const CuptiAdapterOptions& options, EventSink& sink,
                       std::string& detail) noexcept {
  // The table must outlive the adapter: CUPTI's threads call through it until the process exits.
  static CuptiApi api;
  std::string error;
  if (!load_cupti_api(cupti_path, api, error)) {
    detail = "GPU tracing unavailable: " + error +
             " (set STEPWATCH_CUPTI_PATH to libcupti.so.13); stepwatch stands down from GPU tracing, step marks "
             "are still timed, nothing is judged";
    return CuptiState::kUnavailable;
  }
  return CuptiAdapter::instance().start(api, options, sink, detail);
}

}  // namespace stepwatch::live

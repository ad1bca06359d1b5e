#include "cupti/cupti_adapter.h"

namespace stepwatch {

GpuTracer& cupti_tracer() noexcept { return live::CuptiAdapter::instance(); }

}  // namespace stepwatch

// Small helpers shared by detector implementations (private to detectors/).
#pragma once

#include <cstdint>
#include <string>

namespace stepwatch::detail {

inline double ns_to_ms(int64_t ns) { return double(ns) / 1e6; }

// Rounds to µs precision, the precision of every ms figure in outputs.
inline double ms3(double ms) { return double(static_cast<int64_t>(ms * 1000.0 + (ms >= 0 ? 0.5 : -0.5))) / 1000.0; }
inline double ms3_ns(int64_t ns) { return ms3(ns_to_ms(ns)); }

}  // namespace stepwatch::detail

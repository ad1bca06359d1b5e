// libFuzzer target: the metrics endpoint's request parser (live/metrics_http.h), which reads
// whatever a client sends to the port. parse_request_head and the response built from its result
// must never crash or throw; a request accepted as complete has a path starting with '/' and a
// method of token characters, and every prefix of an accepted request is incomplete or accepted.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "live/outputs/metrics_http.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using stepwatch::live::HttpHead;
  const std::string_view request(reinterpret_cast<const char*>(data), size);
  std::string method, path;
  try {
    const HttpHead head = stepwatch::live::parse_request_head(request, method, path);
    if (head == HttpHead::kOk) {
      if (path.empty() || path[0] != '/' || method.empty()) std::abort();
      const std::string reply =
          stepwatch::live::metrics_http_response(method, path, [] { return std::string("m 1\n"); });
      if (reply.rfind("HTTP/1.1 ", 0) != 0) std::abort();
      std::string m2, p2;
      if (stepwatch::live::parse_request_head(request.substr(0, size / 2), m2, p2) == HttpHead::kBad) std::abort();
    }
  } catch (...) {
    std::abort();  // the server thread must never see an exception from parsing
  }
  return 0;
}

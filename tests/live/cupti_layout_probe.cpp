// Compiled once per pinned CUPTI release against that release's own headers (tests/live/
// cupti_versions.cmake; the headers come from the NVIDIA wheels scripts/install-deps.sh fetches):
// the layout table (cupti/record_layouts.h) must give this release's CUPTI_API_VERSION the record
// sizes and struct names its header defines, and every field stepwatch reads must sit at the
// offset the table says. SW_<KIND> name the release's current structs (the ones its
// cupti_activity.h defines, not cupti_activity_deprecated.h), found by the CMake file.
#include <cupti_activity.h>
#include <cupti_version.h>

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <type_traits>

#include "cupti/record_layouts.h"

#define SW_STR2(x) #x
#define SW_STR(x) SW_STR2(x)

namespace probe {
using kernel = SW_KERNEL;
using memcpy = SW_MEMCPY;
using peer_copy = SW_PEER_COPY;
using memset = SW_MEMSET;
using sync = SW_SYNC;
using api = SW_API;
using memory = SW_MEMORY;
using overhead = SW_OVERHEAD;

template <typename T, typename = void>
struct has_copy_count : std::false_type {};
template <typename T>
struct has_copy_count<T, std::void_t<decltype(&T::copyCount)>> : std::true_type {};
template <typename T>
size_t copy_count_offset() {
  if constexpr (has_copy_count<T>::value) {
    return offsetof(T, copyCount);
  } else {
    return 0;
  }
}
}  // namespace probe

int main() {
  using stepwatch::live::RecordLayout;
  int failures = 0;
  const RecordLayout* l = stepwatch::live::record_layout(CUPTI_API_VERSION);
  if (l == nullptr) {
    std::printf("FAIL: CUPTI_API_VERSION %u is not in the layout table\n", static_cast<unsigned>(CUPTI_API_VERSION));
    return 1;
  }
  std::printf("CUPTI_API_VERSION %u -> %s\n", static_cast<unsigned>(CUPTI_API_VERSION), l->name);
  auto kind = [&](const char* what, const RecordLayout::Kind& k, size_t size, const char* type) {
    const char* name = std::strncmp(type, "CUpti_Activity", 14) == 0 ? type + 14 : type;
    const bool ok = k.bytes == size && std::strcmp(k.record, name) == 0;
    std::printf("%s %-10s %-18s %3zu bytes; table: %s %u\n", ok ? "ok  " : "FAIL", what, name, size, k.record,
                static_cast<unsigned>(k.bytes));
    failures += ok ? 0 : 1;
  };
  kind("kernel", l->kernel, sizeof(probe::kernel), SW_STR(SW_KERNEL));
  kind("memcpy", l->memcpy, sizeof(probe::memcpy), SW_STR(SW_MEMCPY));
  kind("peer_copy", l->peer_copy, sizeof(probe::peer_copy), SW_STR(SW_PEER_COPY));
  kind("memset", l->memset, sizeof(probe::memset), SW_STR(SW_MEMSET));
  kind("sync", l->sync, sizeof(probe::sync), SW_STR(SW_SYNC));
  kind("api", l->api, sizeof(probe::api), SW_STR(SW_API));
  kind("memory", l->memory, sizeof(probe::memory), SW_STR(SW_MEMORY));
  kind("overhead", l->overhead, sizeof(probe::overhead), SW_STR(SW_OVERHEAD));
#define SW_PROBE_FIELD(k, field, offset)                                                            \
  if (offsetof(probe::k, field) != (offset)) {                                                      \
    std::printf("FAIL %s.%s at %zu, the table says %d\n", #k, #field, offsetof(probe::k, field), offset); \
    ++failures;                                                                                     \
  }
  SW_CUPTI_READ_FIELDS(SW_PROBE_FIELD)
#undef SW_PROBE_FIELD
  // The builder writes copyCount only where the table's memcpy record is long enough for it.
  const bool has = probe::has_copy_count<probe::memcpy>::value;
  if (has != (l->memcpy.bytes > stepwatch::live::kMemcpyCopyCountOffset) ||
      probe::copy_count_offset<probe::memcpy>() != (has ? stepwatch::live::kMemcpyCopyCountOffset : 0)) {
    std::printf("FAIL memcpy.copyCount: %s, at %zu\n", has ? "present" : "absent", probe::copy_count_offset<probe::memcpy>());
    ++failures;
  }
  std::printf("%s\n", failures == 0 ? "every read field at the table's offset" : "layout table is wrong");
  return failures == 0 ? 0 : 1;
}

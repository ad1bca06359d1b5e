// Process-wide NVTX registries shared by every hooked NVTX instance: domains, registered strings
// and payload schemas. Handles we give to NVTX are small integers (index + 1), not pointers, so a
// handle is validated by a bounds check and can never make us read stray memory.
//
// Everything is bounded and leaked on purpose: NVTX handles stay valid for the life of the
// process (libraries keep them in statics and use them during their own static destruction).
// Writers take a spinlock (registration is rare); readers never lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include "stepwatch/core/event.h"

// nvtxDomainHandle_t, nvtxStringHandle_t, nvtxPayloadData_t, nvtxPayloadSchemaAttr_t.
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>

namespace stepwatch::live::nvtx {

// A lock that fork() cannot leave held in the child: the child handler re-arms every one of them
// (std::mutex cannot be reset, and a DataLoader fork while another thread registers would
// otherwise deadlock the worker on its first NVTX call).
class SpinLock {
 public:
  void lock() noexcept;
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }
  void reset_after_fork() noexcept { locked_.store(false, std::memory_order_relaxed); }

 private:
  std::atomic<bool> locked_{false};
};

class SpinLockGuard {
 public:
  explicit SpinLockGuard(SpinLock& lock) noexcept : lock_(lock) { lock_.lock(); }
  ~SpinLockGuard() { lock_.unlock(); }
  SpinLockGuard(const SpinLockGuard&) = delete;
  SpinLockGuard& operator=(const SpinLockGuard&) = delete;

 private:
  SpinLock& lock_;
};

// ---- Domains ---------------------------------------------------------------------------------

inline constexpr uint32_t kDefaultDomain = 0;
inline constexpr uint32_t kMaxDomains = 256;  // including the default domain
inline constexpr size_t kMaxDomainNameBytes = 95;

// The domain index behind a handle; the default domain for null and for handles we did not make.
uint32_t domain_index(nvtxDomainHandle_t domain) noexcept;
// Same name, same handle (two NCCL copies in one process share "NCCL"). Past the cap: the
// default domain's handle (null), so ranges lose their prefix but are still traced.
nvtxDomainHandle_t create_domain(std::string_view name) noexcept;
// Empty for the default domain.
std::string_view domain_name(uint32_t domain) noexcept;
bool domain_is_nccl(uint32_t domain) noexcept;

// "<domain>:<message>" for named domains, "<message>" for the default domain, into `out`
// (reused by the caller, so it does not allocate once warm).
void build_range_name(uint32_t domain, std::string_view message, std::string& out);

// ---- Registered strings ----------------------------------------------------------------------

inline constexpr uint32_t kMaxRegisteredStrings = 1u << 16;

struct RegisteredString {
  uint32_t domain = kDefaultDomain;
  CollectiveType collective = CollectiveType::kNone;
  std::string_view text;  // points into the registry's leaked storage
  // (epoch << 32) | NameId of the full range name, interned on first use per sink epoch.
  mutable std::atomic<uint64_t> name_for_epoch{0};
};

// Same (domain, text), same handle. Null past the cap (messages then read as empty).
nvtxStringHandle_t register_string(uint32_t domain, std::string_view text) noexcept;
const RegisteredString* find_registered_string(nvtxStringHandle_t handle) noexcept;

// ---- Payload schemas (NCCL's extended payload) -----------------------------------------------

inline constexpr uint32_t kMaxPayloadSchemas = 512;

uint64_t register_payload_schema(uint32_t domain, const nvtxPayloadSchemaAttr_t& attributes) noexcept;
// The message size carried by an extended payload (`payloadType == NVTX_PAYLOAD_TYPE_EXT`), when
// one of its payloads has a schema registered in `domain` with a "Message size [bytes]" entry.
bool payload_message_bytes(uint32_t domain, const nvtxEventAttributes_t& attributes,
                           uint64_t& bytes) noexcept;

// ---- Text ------------------------------------------------------------------------------------

// Linux wchar_t is UTF-32. Invalid code points become U+FFFD; stops at `max_bytes` of output.
void append_utf8(const wchar_t* text, size_t max_bytes, std::string& out);
// NCCL API names as its NVTX ranges carry them (`__func__`): ncclAllReduce, ncclSend, ...
CollectiveType collective_from_nccl_function(std::string_view function) noexcept;

// Re-arms every registry lock in a forked child (only the forking thread survives there).
void reset_registry_locks_after_fork() noexcept;

}  // namespace stepwatch::live::nvtx

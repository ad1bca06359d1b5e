// Domains, registered strings and payload schemas (see nvtx_registry.h for the contract).
//
// Tools include NVTX with NVTX_NO_IMPL: declarations and types only, so this library does not
// carry an NVTX instance (and a static-injection weak symbol) of its own.
#define NVTX_NO_IMPL
#include "nvtx/nvtx_registry.h"

#include <sched.h>

#include <array>
#include <cstring>
#include <new>
#include <unordered_map>

namespace stepwatch::live::nvtx {

void SpinLock::lock() noexcept {
  for (;;) {
    if (!locked_.exchange(true, std::memory_order_acquire)) return;
    // Critical sections are a few stores (or one rare registration); yield rather than burn a
    // core when the holder was preempted.
    for (int spins = 0; locked_.load(std::memory_order_relaxed); ++spins) {
      if (spins >= 64) {
        sched_yield();
        spins = 0;
      }
    }
  }
}

namespace {

// ---- Domains ---------------------------------------------------------------------------------

struct DomainRecord {
  std::array<char, kMaxDomainNameBytes + 1> name{};
  uint32_t length = 0;
  bool is_nccl = false;
};

struct DomainTable {
  SpinLock lock;
  std::atomic<uint32_t> count{1};  // index 0 is the default domain
  std::array<DomainRecord, kMaxDomains> records{};
};

// NOTE: constant-initialized and trivially destructible: hooks may run during static
// destruction of other libraries, after our own statics would otherwise be gone.
constinit DomainTable g_domains;

nvtxDomainHandle_t domain_handle(uint32_t index) noexcept {
  return index == kDefaultDomain ? nullptr
                                 : reinterpret_cast<nvtxDomainHandle_t>(static_cast<uintptr_t>(index));
}

// ---- Registered strings ----------------------------------------------------------------------

inline constexpr uint32_t kStringChunk = 1024;
inline constexpr uint32_t kStringChunks = kMaxRegisteredStrings / kStringChunk;

struct StringTable {
  SpinLock lock;
  std::atomic<uint32_t> count{0};
  std::array<std::atomic<RegisteredString*>, kStringChunks> chunks{};
  // Dedup index and text storage: "<domain index>\x1f<text>" -> string index. Node-based, so a
  // key's characters never move and RegisteredString::text can point into them. Leaked (see top).
  std::unordered_map<std::string, uint32_t>* index = nullptr;
};

constinit StringTable g_strings;

// ---- Payload schemas -------------------------------------------------------------------------

// Where NCCL's "Message size [bytes]" sits in one static payload schema.
struct PayloadSchema {
  uint32_t domain = kDefaultDomain;
  uint64_t schema_id = 0;
  uint64_t message_bytes_offset = 0;
  uint8_t message_bytes_width = 0;  // 4 or 8
};

struct SchemaTable {
  SpinLock lock;
  std::atomic<uint32_t> count{0};
  std::array<PayloadSchema, kMaxPayloadSchemas> schemas{};
  std::atomic<uint64_t> next_dynamic_id{NVTX_PAYLOAD_SCHEMA_ID_DYNAMIC_START};
};

constinit SchemaTable g_schemas;

// The entry NCCL's schemas (src/include/nvtx_payload_schemas.h) name for the collective's size.
constexpr std::string_view kMessageBytesEntryName = "Message size [bytes]";

struct TypeLayout {
  uint8_t size_bytes = 0;
  uint8_t align_bytes = 0;
};

// Sizes and alignments of the predefined entry types on this ABI (the same table NVTX bakes into
// the app as `nvtxExtPayloadTypeInfo`, for the types a schema before "Message size" can hold).
TypeLayout predefined_type_layout(uint64_t type) noexcept {
  auto of = [](size_t size, size_t align) {
    return TypeLayout{static_cast<uint8_t>(size), static_cast<uint8_t>(align)};
  };
  switch (type) {
    case NVTX_PAYLOAD_ENTRY_TYPE_CHAR: case NVTX_PAYLOAD_ENTRY_TYPE_UCHAR:
    case NVTX_PAYLOAD_ENTRY_TYPE_INT8: case NVTX_PAYLOAD_ENTRY_TYPE_UINT8:
    case NVTX_PAYLOAD_ENTRY_TYPE_CHAR8: case NVTX_PAYLOAD_ENTRY_TYPE_BYTE:
      return of(1, 1);
    case NVTX_PAYLOAD_ENTRY_TYPE_SHORT: case NVTX_PAYLOAD_ENTRY_TYPE_USHORT:
    case NVTX_PAYLOAD_ENTRY_TYPE_INT16: case NVTX_PAYLOAD_ENTRY_TYPE_UINT16:
    case NVTX_PAYLOAD_ENTRY_TYPE_CHAR16: case NVTX_PAYLOAD_ENTRY_TYPE_FLOAT16:
    case NVTX_PAYLOAD_ENTRY_TYPE_BF16:
      return of(2, 2);
    case NVTX_PAYLOAD_ENTRY_TYPE_INT: case NVTX_PAYLOAD_ENTRY_TYPE_UINT:
    case NVTX_PAYLOAD_ENTRY_TYPE_INT32: case NVTX_PAYLOAD_ENTRY_TYPE_UINT32:
    case NVTX_PAYLOAD_ENTRY_TYPE_FLOAT: case NVTX_PAYLOAD_ENTRY_TYPE_FLOAT32:
    case NVTX_PAYLOAD_ENTRY_TYPE_CHAR32: case NVTX_PAYLOAD_ENTRY_TYPE_TF32:
    case NVTX_PAYLOAD_ENTRY_TYPE_CATEGORY: case NVTX_PAYLOAD_ENTRY_TYPE_COLOR_ARGB:
    case NVTX_PAYLOAD_ENTRY_TYPE_PID_UINT32: case NVTX_PAYLOAD_ENTRY_TYPE_TID_UINT32:
      return of(4, 4);
    case NVTX_PAYLOAD_ENTRY_TYPE_WCHAR:
      return of(sizeof(wchar_t), alignof(wchar_t));
    case NVTX_PAYLOAD_ENTRY_TYPE_LONG: case NVTX_PAYLOAD_ENTRY_TYPE_ULONG:
      return of(sizeof(long), alignof(long));
    case NVTX_PAYLOAD_ENTRY_TYPE_LONGLONG: case NVTX_PAYLOAD_ENTRY_TYPE_ULONGLONG:
    case NVTX_PAYLOAD_ENTRY_TYPE_INT64: case NVTX_PAYLOAD_ENTRY_TYPE_UINT64:
    case NVTX_PAYLOAD_ENTRY_TYPE_DOUBLE: case NVTX_PAYLOAD_ENTRY_TYPE_FLOAT64:
    case NVTX_PAYLOAD_ENTRY_TYPE_SCOPE_ID: case NVTX_PAYLOAD_ENTRY_TYPE_PID_UINT64:
    case NVTX_PAYLOAD_ENTRY_TYPE_TID_UINT64:
      return of(8, alignof(uint64_t));
    case NVTX_PAYLOAD_ENTRY_TYPE_SIZE:
      return of(sizeof(size_t), alignof(size_t));
    case NVTX_PAYLOAD_ENTRY_TYPE_ADDRESS:
      return of(sizeof(void*), alignof(void*));
    case NVTX_PAYLOAD_ENTRY_TYPE_NVTX_REGISTERED_STRING_HANDLE:
      return of(sizeof(nvtxStringHandle_t), alignof(nvtxStringHandle_t));
    default:
      return {};  // nested schemas, strings, arrays of unknown size: layout unknown
  }
}

bool is_integer_type(uint64_t type) noexcept {
  switch (type) {
    case NVTX_PAYLOAD_ENTRY_TYPE_INT: case NVTX_PAYLOAD_ENTRY_TYPE_UINT:
    case NVTX_PAYLOAD_ENTRY_TYPE_LONG: case NVTX_PAYLOAD_ENTRY_TYPE_ULONG:
    case NVTX_PAYLOAD_ENTRY_TYPE_LONGLONG: case NVTX_PAYLOAD_ENTRY_TYPE_ULONGLONG:
    case NVTX_PAYLOAD_ENTRY_TYPE_INT32: case NVTX_PAYLOAD_ENTRY_TYPE_UINT32:
    case NVTX_PAYLOAD_ENTRY_TYPE_INT64: case NVTX_PAYLOAD_ENTRY_TYPE_UINT64:
    case NVTX_PAYLOAD_ENTRY_TYPE_SIZE:
      return true;
    default:
      return false;
  }
}

// Entry flags that change where or how a value is stored (pointers, arrays, offsets relative to
// something else). Only plain embedded scalars are laid out by natural alignment.
constexpr uint64_t kLayoutChangingFlags =
    NVTX_PAYLOAD_ENTRY_FLAG_POINTER | NVTX_PAYLOAD_ENTRY_FLAG_OFFSET_FROM_BASE |
    NVTX_PAYLOAD_ENTRY_FLAG_OFFSET_FROM_HERE | NVTX_PAYLOAD_ENTRY_FLAG_IS_ARRAY |
    NVTX_PAYLOAD_ENTRY_FLAG_ARRAY_LENGTH_PAYLOAD_INDEX;

// Finds the offset of the "Message size [bytes]" entry. Explicit offsets are used as given (NVTX's
// helper macros, which NCCL uses, fill them with offsetof); otherwise the layout is computed by
// natural alignment, which only works while every earlier entry is a plain predefined scalar.
bool locate_message_bytes(const nvtxPayloadSchemaAttr_t& attributes, PayloadSchema& schema) noexcept {
  const uint64_t mask = attributes.fieldMask;
  if ((mask & NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES) == 0 || attributes.entries == nullptr) return false;
  if ((mask & NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES) == 0) return false;
  if ((mask & NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_TYPE) != 0 &&
      attributes.type != NVTX_PAYLOAD_SCHEMA_TYPE_STATIC) {
    return false;  // dynamic layouts and unions: no fixed offset to read from
  }
  size_t pack_align_bytes = 0;
  if ((mask & NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ALIGNMENT) != 0) pack_align_bytes = attributes.packAlign;

  constexpr size_t kMaxEntries = 256;  // far above any real schema; bounds a corrupt count
  const size_t entries = attributes.numEntries < kMaxEntries ? attributes.numEntries : kMaxEntries;
  uint64_t cursor_bytes = 0;   // end of the previous entry
  bool cursor_known = true;    // false once an entry of unknown size or placement was passed
  for (size_t i = 0; i < entries; ++i) {
    const nvtxPayloadSchemaEntry_t& entry = attributes.entries[i];
    const TypeLayout layout = predefined_type_layout(entry.type);
    const bool plain = (entry.flags & kLayoutChangingFlags) == 0 && layout.size_bytes != 0;
    // Offset 0 on any entry but the first means "not given": derive it from the previous entry.
    uint64_t offset_bytes = entry.offset;
    bool offset_known = true;
    if (entry.offset == 0 && i != 0) {
      if (cursor_known && plain) {
        size_t align = layout.align_bytes;
        if (pack_align_bytes != 0 && pack_align_bytes < align) align = pack_align_bytes;
        offset_bytes = (cursor_bytes + align - 1) / align * align;
      } else {
        offset_known = false;
      }
    }
    if (entry.name != nullptr && kMessageBytesEntryName == entry.name) {
      if (!offset_known || !plain || !is_integer_type(entry.type)) return false;
      if (layout.size_bytes != 4 && layout.size_bytes != 8) return false;
      schema.message_bytes_offset = offset_bytes;
      schema.message_bytes_width = layout.size_bytes;
      return true;
    }
    cursor_known = offset_known && plain;
    if (cursor_known) cursor_bytes = offset_bytes + layout.size_bytes;
  }
  return false;
}

const PayloadSchema* find_schema(uint32_t domain, uint64_t schema_id) noexcept {
  const uint32_t count = g_schemas.count.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < count; ++i) {
    const PayloadSchema& schema = g_schemas.schemas[i];
    if (schema.schema_id == schema_id && schema.domain == domain) return &schema;
  }
  return nullptr;
}

}  // namespace

// ---- Domains ---------------------------------------------------------------------------------

uint32_t domain_index(nvtxDomainHandle_t domain) noexcept {
  const auto value = reinterpret_cast<uintptr_t>(domain);
  if (value == 0 || value >= kMaxDomains) return kDefaultDomain;
  if (value >= g_domains.count.load(std::memory_order_acquire)) return kDefaultDomain;
  return static_cast<uint32_t>(value);
}

nvtxDomainHandle_t create_domain(std::string_view name) noexcept {
  if (name.size() > kMaxDomainNameBytes) name = name.substr(0, kMaxDomainNameBytes);
  SpinLockGuard guard(g_domains.lock);
  const uint32_t count = g_domains.count.load(std::memory_order_relaxed);
  for (uint32_t i = 1; i < count; ++i) {
    const DomainRecord& record = g_domains.records[i];
    if (std::string_view(record.name.data(), record.length) == name) return domain_handle(i);
  }
  if (count >= kMaxDomains) return nullptr;
  DomainRecord& record = g_domains.records[count];
  std::memcpy(record.name.data(), name.data(), name.size());
  record.name[name.size()] = '\0';
  record.length = static_cast<uint32_t>(name.size());
  record.is_nccl = (name == "NCCL");
  // Publish after the record is complete: readers index only below `count`.
  g_domains.count.store(count + 1, std::memory_order_release);
  return domain_handle(count);
}

std::string_view domain_name(uint32_t domain) noexcept {
  if (domain == kDefaultDomain || domain >= g_domains.count.load(std::memory_order_acquire)) return {};
  const DomainRecord& record = g_domains.records[domain];
  return {record.name.data(), record.length};
}

bool domain_is_nccl(uint32_t domain) noexcept {
  if (domain == kDefaultDomain || domain >= g_domains.count.load(std::memory_order_acquire)) return false;
  return g_domains.records[domain].is_nccl;
}

void build_range_name(uint32_t domain, std::string_view message, std::string& out) {
  out.clear();
  const std::string_view prefix = domain_name(domain);
  if (!prefix.empty()) {
    out.append(prefix);
    out.push_back(':');
  }
  out.append(message);
}

// ---- Registered strings ----------------------------------------------------------------------

nvtxStringHandle_t register_string(uint32_t domain, std::string_view text) noexcept {
  try {
    std::string key = std::to_string(domain);
    key.push_back('\x1f');
    const size_t text_at = key.size();
    key.append(text);

    SpinLockGuard guard(g_strings.lock);
    if (g_strings.index == nullptr) g_strings.index = new std::unordered_map<std::string, uint32_t>();
    auto found = g_strings.index->find(key);
    if (found != g_strings.index->end()) {
      return reinterpret_cast<nvtxStringHandle_t>(static_cast<uintptr_t>(found->second) + 1);
    }
    const uint32_t index = g_strings.count.load(std::memory_order_relaxed);
    if (index >= kMaxRegisteredStrings) return nullptr;
    std::atomic<RegisteredString*>& chunk_slot = g_strings.chunks[index / kStringChunk];
    RegisteredString* chunk = chunk_slot.load(std::memory_order_relaxed);
    if (chunk == nullptr) {
      chunk = new RegisteredString[kStringChunk];
      chunk_slot.store(chunk, std::memory_order_release);
    }
    auto [inserted, ok] = g_strings.index->emplace(std::move(key), index);
    (void)ok;
    RegisteredString& record = chunk[index % kStringChunk];
    record.domain = domain;
    record.text = std::string_view(inserted->first).substr(text_at);
    record.collective = domain_is_nccl(domain) ? collective_from_nccl_function(record.text)
                                               : CollectiveType::kNone;
    g_strings.count.store(index + 1, std::memory_order_release);
    return reinterpret_cast<nvtxStringHandle_t>(static_cast<uintptr_t>(index) + 1);
  } catch (...) {
    return nullptr;  // out of memory: the message reads as empty, the range is still traced
  }
}

const RegisteredString* find_registered_string(nvtxStringHandle_t handle) noexcept {
  const auto value = reinterpret_cast<uintptr_t>(handle);
  if (value == 0 || value > kMaxRegisteredStrings) return nullptr;
  const auto index = static_cast<uint32_t>(value - 1);
  if (index >= g_strings.count.load(std::memory_order_acquire)) return nullptr;
  const RegisteredString* chunk = g_strings.chunks[index / kStringChunk].load(std::memory_order_acquire);
  return chunk == nullptr ? nullptr : &chunk[index % kStringChunk];
}

// ---- Payload schemas -------------------------------------------------------------------------

uint64_t register_payload_schema(uint32_t domain, const nvtxPayloadSchemaAttr_t& attributes) noexcept {
  uint64_t schema_id = 0;
  // A caller-chosen (static) id is what its payloads will carry, whatever range it is in: NCCL
  // ignores our return value and uses its own constant.
  if ((attributes.fieldMask & NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_SCHEMA_ID) != 0 && attributes.schemaId != 0) {
    schema_id = attributes.schemaId;
  } else {
    schema_id = g_schemas.next_dynamic_id.fetch_add(1, std::memory_order_relaxed);
  }

  PayloadSchema schema;
  schema.domain = domain;
  schema.schema_id = schema_id;
  // Schemas without a message size are not stored: nothing to read from their payloads.
  if (!locate_message_bytes(attributes, schema)) return schema_id;

  SpinLockGuard guard(g_schemas.lock);
  if (find_schema(domain, schema_id) != nullptr) return schema_id;  // another NCCL copy, same schema
  const uint32_t count = g_schemas.count.load(std::memory_order_relaxed);
  if (count >= kMaxPayloadSchemas) return schema_id;
  g_schemas.schemas[count] = schema;
  g_schemas.count.store(count + 1, std::memory_order_release);
  return schema_id;
}

bool payload_message_bytes(uint32_t domain, const nvtxEventAttributes_t& attributes, uint64_t& bytes) noexcept {
  if (attributes.payloadType != NVTX_PAYLOAD_TYPE_EXT) return false;
  if (g_schemas.count.load(std::memory_order_relaxed) == 0) return false;
  // NVTX_PAYLOAD_EVTATTR_SET_*: payload.ullValue points at `reserved0` nvtxPayloadData_t.
  constexpr int32_t kMaxPayloads = 16;
  if (attributes.reserved0 < 1 || attributes.reserved0 > kMaxPayloads) return false;
  const auto* payloads = reinterpret_cast<const nvtxPayloadData_t*>(
      static_cast<uintptr_t>(attributes.payload.ullValue));
  if (payloads == nullptr) return false;
  for (int32_t i = 0; i < attributes.reserved0; ++i) {
    const nvtxPayloadData_t& data = payloads[i];
    const PayloadSchema* schema = find_schema(domain, data.schemaId);
    if (schema == nullptr || data.payload == nullptr) continue;
    const uint64_t end_bytes = schema->message_bytes_offset + schema->message_bytes_width;
    // SIZE_MAX means "size unknown"; otherwise never read past what the caller says it passed.
    if (data.size != SIZE_MAX && end_bytes > data.size) continue;
    const auto* at = static_cast<const unsigned char*>(data.payload) + schema->message_bytes_offset;
    if (schema->message_bytes_width == 8) {
      uint64_t value = 0;
      std::memcpy(&value, at, sizeof(value));
      bytes = value;
    } else {
      uint32_t value = 0;
      std::memcpy(&value, at, sizeof(value));
      bytes = value;
    }
    return true;
  }
  return false;
}

// ---- Text ------------------------------------------------------------------------------------

void append_utf8(const wchar_t* text, size_t max_bytes, std::string& out) {
  if (text == nullptr) return;
  const size_t limit = out.size() + max_bytes;
  for (; *text != L'\0'; ++text) {
    auto code = static_cast<uint32_t>(*text);
    if (code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) code = 0xFFFD;
    char encoded[4];
    size_t length = 0;
    if (code < 0x80) {
      encoded[length++] = static_cast<char>(code);
    } else if (code < 0x800) {
      encoded[length++] = static_cast<char>(0xC0 | (code >> 6));
      encoded[length++] = static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      encoded[length++] = static_cast<char>(0xE0 | (code >> 12));
      encoded[length++] = static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      encoded[length++] = static_cast<char>(0x80 | (code & 0x3F));
    } else {
      encoded[length++] = static_cast<char>(0xF0 | (code >> 18));
      encoded[length++] = static_cast<char>(0x80 | ((code >> 12) & 0x3F));
      encoded[length++] = static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      encoded[length++] = static_cast<char>(0x80 | (code & 0x3F));
    }
    if (out.size() + length > limit) return;  // never cut a character in half
    out.append(encoded, length);
  }
}

CollectiveType collective_from_nccl_function(std::string_view function) noexcept {
  struct Known {
    std::string_view name;
    CollectiveType type;
  };
  static constexpr Known kKnown[] = {
      {"ncclAllReduce", CollectiveType::kAllReduce},
      {"ncclAllGather", CollectiveType::kAllGather},
      {"ncclReduceScatter", CollectiveType::kReduceScatter},
      {"ncclAlltoAll", CollectiveType::kAllToAll},
      {"ncclAllToAll", CollectiveType::kAllToAll},
      {"ncclAlltoAllv", CollectiveType::kAllToAll},
      {"ncclSend", CollectiveType::kSendRecv},
      {"ncclRecv", CollectiveType::kSendRecv},
      {"ncclBroadcast", CollectiveType::kBroadcast},
      {"ncclBcast", CollectiveType::kBroadcast},
      {"ncclReduce", CollectiveType::kReduce},
      {"ncclGather", CollectiveType::kOther},
      {"ncclScatter", CollectiveType::kOther},
  };
  for (const Known& known : kKnown) {
    if (known.name == function) return known.type;
  }
  return CollectiveType::kNone;
}

void reset_registry_locks_after_fork() noexcept {
  g_domains.lock.reset_after_fork();
  g_strings.lock.reset_after_fork();
  g_schemas.lock.reset_after_fork();
}

}  // namespace stepwatch::live::nvtx

#include "cupti/record_layouts.h"

namespace stepwatch::live {
namespace {

// cuptiGetVersion() values from cupti_version.h's history: v24 CUDA 12.6, v26 12.8, v27 12.9,
// v28 12.9 Update 1, 130000 13.0, 130001 13.0 Update 1, 1301xx 13.1, ... 130500 13.5. Earlier 12.x
// (v19-v23) write CUpti_ActivityMemory3 for MEMORY2 and are not read. Sizes measured with each
// release's headers (nvidia-cuda-cupti-cu12 / nvidia-cuda-cupti wheels, pinned in
// scripts/install-deps.sh) and checked against them by tests/live/cupti_layout_probe.cpp.
// The API (40), MemcpyPtoP4 (96), Memory4 (128) and Overhead3 (56) records are the same in all.
constexpr RecordLayout kLayouts[] = {
    {24, 24, "CUDA 12.6", 12,
     {208, "Kernel9"}, {88, "Memcpy5"}, {96, "MemcpyPtoP4"}, {88, "Memset4"}, {40, "Synchronization"},
     {40, "API"}, {128, "Memory4"}, {56, "Overhead3"}},
    {26, 28, "CUDA 12.8-12.9", 12,
     {208, "Kernel9"}, {96, "Memcpy6"}, {96, "MemcpyPtoP4"}, {88, "Memset4"}, {56, "Synchronization2"},
     {40, "API"}, {128, "Memory4"}, {56, "Overhead3"}},
    {130000, 130099, "CUDA 13.0", 13,
     {216, "Kernel10"}, {96, "Memcpy6"}, {96, "MemcpyPtoP4"}, {88, "Memset4"}, {56, "Synchronization2"},
     {40, "API"}, {128, "Memory4"}, {56, "Overhead3"}},
    {130100, 130199, "CUDA 13.1", 13,
     {224, "Kernel11"}, {96, "Memcpy6"}, {96, "MemcpyPtoP4"}, {88, "Memset4"}, {56, "Synchronization2"},
     {40, "API"}, {128, "Memory4"}, {56, "Overhead3"}},
    {130200, 130299, "CUDA 13.2", 13,
     {224, "Kernel11"}, {96, "Memcpy6"}, {96, "MemcpyPtoP4"}, {88, "Memset4"}, {56, "Synchronization2"},
     {40, "API"}, {128, "Memory4"}, {56, "Overhead3"}},
    {130300, 130399, "CUDA 13.3", 13,
     {232, "Kernel12"}, {96, "Memcpy6"}, {96, "MemcpyPtoP4"}, {88, "Memset4"}, {56, "Synchronization2"},
     {40, "API"}, {128, "Memory4"}, {56, "Overhead3"}},
    {130400, 130599, "CUDA 13.4-13.5", 13,
     {248, "Kernel13"}, {112, "Memcpy7"}, {96, "MemcpyPtoP4"}, {104, "Memset5"}, {56, "Synchronization2"},
     {40, "API"}, {128, "Memory4"}, {56, "Overhead3"}},
};

}  // namespace

const RecordLayout* record_layout(uint32_t cupti_version) noexcept {
  for (const RecordLayout& l : kLayouts) {
    if (cupti_version >= l.first_version && cupti_version <= l.last_version) return &l;
  }
  return nullptr;
}

const RecordLayout& compiled_record_layout() noexcept { return kLayouts[2]; }

std::span<const RecordLayout> known_record_layouts() noexcept { return kLayouts; }

std::string known_record_layouts_text() {
  std::string text;
  for (const RecordLayout& l : kLayouts) {
    std::string name = l.name;
    if (name.rfind("CUDA ", 0) == 0) name.erase(0, 5);
    text += (text.empty() ? "" : ", ") + name;
  }
  return text;
}

}  // namespace stepwatch::live

// Locating the shared corpus (../shared/corpus next to the project). Tests skip when absent.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace stepwatch::testing {

inline std::filesystem::path corpus_dir() { return std::filesystem::path(STEPWATCH_CORPUS_DIR); }

inline bool corpus_available() { return std::filesystem::is_directory(corpus_dir() / "kineto"); }

inline std::vector<std::filesystem::path> kineto_files() {
  std::vector<std::filesystem::path> out;
  if (!corpus_available()) return out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(corpus_dir() / "kineto")) {
    const std::string n = e.path().filename().string();
    if (e.is_regular_file() && n.size() > 8 && n.substr(n.size() - 8) == ".json.gz") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

#define STEPWATCH_REQUIRE_CORPUS()                                                                       \
  do {                                                                                                  \
    if (!::stepwatch::testing::corpus_available())                                                      \
      GTEST_SKIP() << "corpus not found at " << ::stepwatch::testing::corpus_dir() << " (skipping)";    \
  } while (0)

}  // namespace stepwatch::testing

// TempDir: a temporary directory for tests, removed with everything in it.
#pragma once

#include <stdlib.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <system_error>

namespace spindle::test {

// A fresh directory under $TMPDIR, or /tmp (mkdtemp), removed with
// everything in it. TMPDIR picks the file system the storage tests run on.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/spindle-test-XXXXXX";
    const char* p = ::mkdtemp(tmpl.data());
    REQUIRE(p != nullptr);
    path_ = p;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // A new, not yet existing subdirectory: one per runtime run of a test body.
  std::filesystem::path fresh() { return path_ / ("run" + std::to_string(next_++)); }

 private:
  std::filesystem::path path_;
  std::atomic<int> next_{0};
};

}  // namespace spindle::test

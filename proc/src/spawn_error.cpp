// std::error_code holds a value and a category, never a string: a category
// per program name is how a Result's error can say which program is missing.

#include "spawn_error.hpp"

#include <map>
#include <memory>

#include "spindle/base/lock_guard.hpp"
#include "spindle/base/thread_mutex.hpp"

namespace spindle::process::detail {
namespace {

class SpawnCategory final : public std::error_category {
 public:
  explicit SpawnCategory(std::string what) : what_(std::move(what)) {}

  const char* name() const noexcept override { return "spindle::process::spawn"; }
  std::string message(int value) const override {
    return "spawn " + what_ + ": " + std::system_category().message(value);
  }
  std::error_condition default_error_condition(int value) const noexcept override {
    return std::system_category().default_error_condition(value);
  }

 private:
  const std::string what_;
};

// The categories made so far, by `what`. Never destroyed: an error_code may
// outlive static destruction.
class Categories {
 public:
  const std::error_category* find_or_add(const std::string& what) {
    LockGuard lock(mutex_);
    if (auto it = by_what_.find(what); it != by_what_.end()) return it->second.get();
    if (by_what_.size() == kNamedSpawnErrors) return nullptr;
    return by_what_.emplace(what, std::make_unique<SpawnCategory>(what)).first->second.get();
  }

 private:
  spindle::detail::ThreadMutex mutex_;
  std::map<std::string, std::unique_ptr<SpawnCategory>> by_what_ SPINDLE_GUARDED_BY(mutex_);
};

}  // namespace

std::error_code spawn_error(int err, const std::string& what) {
  static auto* categories = new Categories;
  const std::error_category* category = categories->find_or_add(what);
  return {err, category != nullptr ? *category : std::system_category()};
}

}  // namespace spindle::process::detail

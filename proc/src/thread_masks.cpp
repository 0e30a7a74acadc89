#include "thread_masks.hpp"

#include <dirent.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string_view>

#include "spindle/proc/signal_set.hpp"

namespace spindle::signals::detail {
namespace {

struct ThreadMask {
  std::string name;
  std::uint64_t blocked = 0;  // bit n - 1: signal n
};

// One thread's name and SigBlk line; nullopt for a thread that has exited.
std::optional<ThreadMask> read_mask(const std::string& tid) {
  std::ifstream status("/proc/self/task/" + tid + "/status");
  if (!status) return std::nullopt;
  ThreadMask m;
  bool have_mask = false;
  for (std::string line; std::getline(status, line);) {
    const std::string_view l = line;
    if (l.starts_with("Name:")) {
      const std::size_t start = l.find_first_not_of(" \t", 5);
      if (start != std::string_view::npos) m.name = std::string(l.substr(start));
    } else if (l.starts_with("SigBlk:")) {
      m.blocked = std::strtoull(line.c_str() + 7, nullptr, 16);
      have_mask = true;
    }
  }
  if (!have_mask) return std::nullopt;
  return m;
}

}  // namespace

std::optional<std::string> thread_not_blocking(const sigset_t& set) {
  const std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir("/proc/self/task"), &::closedir);
  if (!dir) return std::nullopt;
  while (const dirent* e = ::readdir(dir.get())) {
    if (e->d_name[0] == '.') continue;
    const std::string tid = e->d_name;
    const auto m = read_mask(tid);
    if (!m) continue;
    for (int sig = 1; sig <= 64; ++sig) {
      if (sigismember(&set, sig) == 1 && (m->blocked & (std::uint64_t{1} << (sig - 1))) == 0) {
        return "thread " + tid + " (" + m->name + ") does not block " + name(sig);
      }
    }
  }
  return std::nullopt;
}

}  // namespace spindle::signals::detail

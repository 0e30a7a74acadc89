// RuntimeHandle::dump(): holds every worker between fibers (at most a short
// wait), walks the supervision tree from the root, captures the stacks of
// suspended fibers, lets the workers go, then formats the listing. If a worker
// does not reach a point between fibers in time (a fiber that does not
// suspend), the listing says so and carries no backtraces. Formatting
// symbolizes the backtraces, which reads debug information (100 ms and more
// the first time): a fiber caller has it done on the blocking pool and parks
// meanwhile, so its worker goes on with other fibers.

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/current.hpp"
#include "core/park_word.hpp"
#include "core/scheduler.hpp"
#include "core/worker.hpp"
#include "io/request.hpp"
#include "observe/symbolize.hpp"
#include "spindle/sched/context.hpp"
#include "spindle/sched/detail/core.hpp"
#include "time/coarse_clock.hpp"

namespace spindle::detail {
namespace {

constexpr auto kPauseWait = std::chrono::milliseconds(200);
constexpr std::size_t kMaxBacktraces = 1000;  // fibers whose stacks are captured
constexpr std::size_t kMaxFrames = 32;
constexpr int kMaxIndent = 16;  // tree levels shown by indentation

struct Entry {
  int depth;
  std::string line;
  std::vector<void*> frames;
};

std::string describe_state(const Fiber& f, bool complete, const Fiber* caller) {
  if (&f == caller) return "running (this dump)";
  const std::uint64_t word = f.wake_word.load(std::memory_order_acquire);
  const ParkKind kind = park_kind(word);
  if (kind == ParkKind::kNone) {
    if (!complete) return "running or ready";
    return f.started ? "ready" : "pending (not started)";
  }
  std::string state = fmt::format("parked ({}", complete && f.waiting_on ? f.waiting_on : "?");
  if (complete && kind == ParkKind::kIo && f.io_request) {
    fmt::format_to(std::back_inserter(state), " {}", io_code_name(f.io_request->op->code));
  }
  state += ')';
  return state;
}

// One line for `node`; its stack if it is a suspended fiber and `capture`.
Entry describe_node(Node* node, int depth, bool complete, const Fiber* caller, std::uint64_t now,
                    bool capture) {
  Entry e{depth, {}, {}};
  if (auto* f = dynamic_cast<Fiber*>(node)) {
    e.line = fmt::format("fiber {}", f->id);
    if (!f->name.empty()) fmt::format_to(std::back_inserter(e.line), " '{}'", f->name);
    fmt::format_to(std::back_inserter(e.line), ": {}", describe_state(*f, complete, caller));
    if (complete && f->pinned && f->pinned->placement() == Placement::kDedicated)
      e.line += ", dedicated thread";
    if (f->aborted()) e.line += ", aborted";
    fmt::format_to(std::back_inserter(e.line), ", age {} ms",
                   now >= f->spawned_ms ? now - f->spawned_ms : 0);
    if (capture && complete && f != caller && f->started && f->context) {
      e.frames.resize(kMaxFrames);
      e.frames.resize(fiber::backtrace_of(*f->context, e.frames.data(), e.frames.size()));
    }
  } else if (dynamic_cast<BlockingTask*>(node)) {
    e.line = "blocking task (spawn_blocking)";
    if (node->aborted()) e.line += ", aborted";
  } else {
    e.line = "task";
  }
  return e;
}

// What a dump captured while the workers were held.
struct Listing {
  const char* io_backend = "";
  std::vector<Entry> entries;
  bool complete = true;  // every worker was held: states exact, stacks captured
};

Listing capture(Scheduler& s) {
  std::lock_guard serial(s.dump_mutex);
  Worker* self = current_worker();
  if (self && &self->scheduler() != &s) self = nullptr;
  const Fiber* caller = self ? self->current() : nullptr;
  const std::uint64_t now = coarse_now_ms();

  Listing listing;
  listing.io_backend = s.io_backend;
  std::size_t captured = 0;
  listing.complete = s.roster.pause(self ? &self->remote() : nullptr, kPauseWait);
  // Depth-first from the root; each node on the stack holds a reference.
  std::vector<std::pair<Node*, int>> stack;
  std::vector<Node*> children;
  try {
    s.root->ref();
    stack.emplace_back(s.root, 0);
    while (!stack.empty()) {
      auto [node, depth] = stack.back();
      stack.pop_back();
      // An ended task stays linked until its worker detaches it, and so do
      // its children until they end: it is skipped, they are listed.
      const auto* task = dynamic_cast<const Task*>(node);
      const bool ended = task && task->done();
      if (!ended) {
        const bool take = captured < kMaxBacktraces;
        listing.entries.push_back(describe_node(node, depth, listing.complete, caller, now, take));
        if (!listing.entries.back().frames.empty()) ++captured;
      }
      children.clear();
      node->collect_children(children);
      node->unref();
      for (auto it = children.rbegin(); it != children.rend(); ++it)
        stack.emplace_back(*it, ended ? depth : depth + 1);
    }
  } catch (...) {
    for (auto& [node, depth] : stack) node->unref();
    s.roster.resume();
    throw;
  }
  s.roster.resume();
  return listing;
}

// The listing's text, backtraces symbolized. Any thread; slow (see above).
std::string format(const Listing& listing) {
  std::string out = fmt::format("spindle: {} live tasks on the {} backend", listing.entries.size(),
                                listing.io_backend);
  if (!listing.complete) {
    out +=
        " (a worker is still running a fiber that has not suspended: states are approximate and "
        "stacks were not captured)";
  }
  out += '\n';
  for (const Entry& e : listing.entries) {
    const int indent = std::min(e.depth, kMaxIndent);
    fmt::format_to(std::back_inserter(out), "{:{}}{}\n", "", indent * 2, e.line);
    if (!e.frames.empty()) {
      const std::string pad(static_cast<std::size_t>(indent) * 2 + 4, ' ');
      append_backtrace(out, e.frames.data(), e.frames.size(), pad.c_str());
    }
  }
  return out;
}

}  // namespace

std::string dump(Scheduler& s) {
  auto listing = std::make_shared<const Listing>(capture(s));
  const Fiber* f = current_fiber();
  // A simulation's fiber formats it on its own thread, the only one there is.
  if (f != nullptr && &f->scheduler() == &s && s.sim == nullptr) {
    // The task owns what it formats: an abort ends the join, not the task.
    auto formatted = spawn_blocking([listing] { return format(*listing); });
    if (auto text = formatted.join()) return std::move(*text);
    // Refused (the runtime is stopping) or aborted: format here.
  }
  return format(*listing);
}

}  // namespace spindle::detail

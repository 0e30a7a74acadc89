#include "spindle/sched/fiber_local.hpp"

#include <atomic>
#include <stdexcept>
#include <utility>
#include <vector>

#include "core/current.hpp"
#include "core/worker.hpp"
#include "spindle/sched/detail/core.hpp"
#include "spindle/sched/pin.hpp"

namespace spindle {
namespace detail {

// A fiber's FiberLocal values, indexed by key.
class LocalSlots {
 public:
  struct Slot {
    void* value = nullptr;
    void (*destroy)(void*) = nullptr;
  };
  std::vector<Slot> slots;
};

namespace {
std::atomic<std::size_t> next_key{0};

Fiber& require_fiber(const char* what) {
  Fiber* f = current_fiber();
  if (!f) throw std::logic_error(std::string("spindle: ") + what + " used outside a fiber");
  return *f;
}
}  // namespace

std::size_t allocate_local_key() noexcept {
  return next_key.fetch_add(1, std::memory_order_relaxed);
}

void* local_get(std::size_t key) {
  Fiber& f = require_fiber("FiberLocal");
  if (!f.locals || key >= f.locals->slots.size()) return nullptr;
  return f.locals->slots[key].value;
}

void local_set(std::size_t key, void* value, void (*destroy)(void*)) {
  Fiber& f = require_fiber("FiberLocal");
  if (!f.locals) f.locals = new LocalSlots();
  if (key >= f.locals->slots.size()) f.locals->slots.resize(key + 1);
  f.locals->slots[key] = {value, destroy};
}

void destroy_fiber_locals(Fiber* f) noexcept {
  LocalSlots* locals = std::exchange(f->locals, nullptr);
  if (!locals) return;
  // Latest key first; a destructor may create new values, which are destroyed
  // in turn.
  while (locals) {
    for (auto it = locals->slots.rbegin(); it != locals->slots.rend(); ++it) {
      if (it->value) it->destroy(std::exchange(it->value, nullptr));
    }
    delete locals;
    locals = std::exchange(f->locals, nullptr);
  }
}

}  // namespace detail

PinToWorker::PinToWorker() {
  detail::Fiber* f = detail::current_fiber();
  if (!f) throw std::logic_error("spindle::PinToWorker used outside a fiber");
  previous_ = f->pinned;
  if (!f->pinned) f->pinned = &detail::current_worker()->remote();
}

PinToWorker::~PinToWorker() { detail::current_fiber()->pinned = previous_; }

}  // namespace spindle

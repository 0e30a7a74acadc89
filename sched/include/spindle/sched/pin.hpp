// PinToWorker: keep the running fiber on its current worker thread.
#pragma once

namespace spindle {

namespace detail {
class WorkerRemote;
}

// Fiber-only, not movable. While it lives, the fiber is never stolen and
// resumes only on the worker it was on when the scope began, so thread_local
// state (and code that caches it, such as some allocators and C libraries)
// stays valid across blocking calls. Nests; the outermost scope decides.
// Neither the constructor nor the destructor suspends.
class PinToWorker {
 public:
  PinToWorker();  // throws std::logic_error outside a fiber
  ~PinToWorker();
  PinToWorker(const PinToWorker&) = delete;
  PinToWorker& operator=(const PinToWorker&) = delete;

 private:
  detail::WorkerRemote* previous_;
};

}  // namespace spindle

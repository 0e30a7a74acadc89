#include "observe/stall_detector.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <unwind.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/current.hpp"
#include "core/scheduler.hpp"
#include "core/worker.hpp"
#include "observe/symbolize.hpp"

namespace spindle {

int stall_capture_signal() noexcept { return SIGRTMIN + 5; }

namespace detail {
namespace {

// How long the watchdog waits for a stalled worker's signal handler.
constexpr auto kCaptureWait = std::chrono::milliseconds(100);

struct Frames {
  void** out;
  std::size_t max;
  std::size_t count = 0;
  std::size_t skip;
};

_Unwind_Reason_Code record_frame(struct _Unwind_Context* uc, void* arg) {
  auto* f = static_cast<Frames*>(arg);
  const _Unwind_Ptr ip = _Unwind_GetIP(uc);
  if (ip == 0 || f->count == f->max) return _URC_END_OF_STACK;
  if (f->skip > 0) {
    --f->skip;
  } else {
    f->out[f->count++] = reinterpret_cast<void*>(ip);
  }
  return _URC_NO_REASON;
}

// On the stalled worker's thread, inside the fiber it is stuck in.
void on_capture_signal(int) {
  const int saved_errno = errno;
  Worker* w = current_worker();
  if (w) {
    StallProbe& p = w->remote().stall_probe();
    const std::uint64_t request = p.request.load(std::memory_order_acquire);
    if (request != 0 && p.done.load(std::memory_order_relaxed) != request) {
      const Fiber* f = w->current();
      p.fiber_id = 0;
      p.frame_count = 0;
      if (f && p.turns.load(std::memory_order_relaxed) == request) {
        p.fiber_id = f->id;
        const std::size_t n = std::min(f->name.size(), sizeof p.fiber_name - 1);
        std::memcpy(p.fiber_name, f->name.data(), n);
        p.fiber_name[n] = '\0';
        // Skips this handler and the kernel's signal trampoline.
        Frames frames{p.frames, StallProbe::kMaxFrames, 0, 2};
        _Unwind_Backtrace(&record_frame, &frames);
        p.frame_count = frames.count;
      }
      p.done.store(request, std::memory_order_release);
    }
  }
  errno = saved_errno;
}

void install_capture_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    // The unwinder loads libgcc_s on first use, which a signal handler must
    // not do: use it once here.
    void* frame;
    Frames warm{&frame, 1, 0, 0};
    _Unwind_Backtrace(&record_frame, &warm);
    struct sigaction sa{};
    sa.sa_handler = &on_capture_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    ::sigaction(stall_capture_signal(), &sa, nullptr);
  });
}

struct Stall {
  std::string worker;
  std::uint64_t turns;
  std::chrono::milliseconds stalled;
  bool answered = false;
  std::uint64_t fiber_id = 0;
  std::string fiber_name;
  std::vector<void*> frames;
};

// Asks the worker's thread for its fiber and stack; waits for the answer.
// Called under the roster lock, so the worker cannot leave meanwhile.
void capture(WorkerRemote* w, Stall& stall) {
  StallProbe& p = w->stall_probe();
  p.request.store(stall.turns, std::memory_order_release);
  if (::pthread_kill(p.thread, stall_capture_signal()) != 0) return;
  const auto limit = std::chrono::steady_clock::now() + kCaptureWait;
  while (p.done.load(std::memory_order_acquire) != stall.turns) {
    if (std::chrono::steady_clock::now() > limit) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  stall.answered = true;
  stall.fiber_id = p.fiber_id;
  stall.fiber_name = p.fiber_name;
  stall.frames.assign(p.frames, p.frames + p.frame_count);
}

std::string describe(const Stall& s, std::chrono::milliseconds threshold) {
  std::string out;
  if (!s.answered) {
    out = fmt::format(
        "stall: {} has run one fiber for {} ms without it suspending (stall_threshold "
        "{} ms); its thread did not answer the backtrace signal",
        s.worker, s.stalled.count(), threshold.count());
  } else if (s.fiber_id == 0) {
    out = fmt::format(
        "stall: {} ran one fiber for {} ms without it suspending "
        "(stall_threshold {} ms); it suspended before the backtrace",
        s.worker, s.stalled.count(), threshold.count());
  } else {
    out = fmt::format(
        "stall: {} has run fiber {} '{}' for {} ms without it suspending "
        "(stall_threshold {} ms)\n",
        s.worker, s.fiber_id, s.fiber_name, s.stalled.count(), threshold.count());
    append_backtrace(out, s.frames.data(), s.frames.size(), "    ");
    if (out.ends_with('\n')) out.pop_back();
  }
  return out;
}

}  // namespace

StallDetector::StallDetector(Scheduler& scheduler, std::chrono::milliseconds threshold,
                             LogSink sink)
    : scheduler_(scheduler), threshold_(threshold), sink_(std::move(sink)) {
  install_capture_handler();
  thread_ = std::thread([this] { run(); });
}

StallDetector::~StallDetector() {
  {
    ThreadLock lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void StallDetector::run() {
  struct Seen {
    WorkerRemote* worker;
    std::uint64_t turns;
    std::chrono::steady_clock::time_point since;
    bool reported;
    bool present;
  };
  std::vector<Seen> seen;
  std::vector<Stall> stalls;
  const auto period =
      std::max<std::chrono::milliseconds>(threshold_ / 4, std::chrono::milliseconds(1));
  ThreadLock lock(mutex_);
  while (!lock.wait_for(cv_, period, [this]() SPINDLE_REQUIRES(mutex_) { return stop_; })) {
    lock.unlock();
    const auto now = std::chrono::steady_clock::now();
    for (Seen& s : seen) s.present = false;
    scheduler_.roster.for_each([&](WorkerRemote* w) {
      const std::uint64_t turns = w->stall_probe().turns.load(std::memory_order_relaxed);
      auto it =
          std::find_if(seen.begin(), seen.end(), [w](const Seen& s) { return s.worker == w; });
      if (it == seen.end()) {
        seen.push_back({w, turns, now, false, true});
        return;
      }
      it->present = true;
      if (turns != it->turns) {
        *it = {w, turns, now, false, true};
        return;
      }
      if ((turns & 1) == 0 || it->reported || now - it->since < threshold_) return;
      it->reported = true;
      Stall stall;
      stall.worker = w->placement() == Placement::kPool ? fmt::format("worker {}", w->index())
                                                        : std::string("a dedicated worker");
      stall.turns = turns;
      stall.stalled = std::chrono::duration_cast<std::chrono::milliseconds>(now - it->since);
      capture(w, stall);
      stalls.push_back(std::move(stall));
    });
    std::erase_if(seen, [](const Seen& s) { return !s.present; });
    for (const Stall& s : stalls) {
      write_log(sink_, LogLevel::kWarning, describe(s, threshold_));
    }
    stalls.clear();
    lock.lock();
  }
}

}  // namespace detail
}  // namespace spindle

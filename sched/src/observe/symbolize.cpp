#include "observe/symbolize.hpp"

#define BOOST_STACKTRACE_LINK
#include <fmt/format.h>
#include <unistd.h>

#include <boost/stacktrace/frame.hpp>
#include <condition_variable>
#include <exception>
#include <functional>
#include <thread>

#include "spindle/base/thread_mutex.hpp"

namespace spindle::detail {
namespace {

void append_frames(std::string& out, void* const* frames, std::size_t count, const char* indent) {
  for (std::size_t i = 0; i < count; ++i) {
    // A return address points after its call: look up the call itself.
    const boost::stacktrace::frame f(reinterpret_cast<boost::stacktrace::frame::native_frame_ptr_t>(
        reinterpret_cast<std::uintptr_t>(frames[i]) - 1));
    std::string name = f.name();
    if (name.empty()) name = fmt::format("{}", frames[i]);
    const std::string file = f.source_file();
    if (file.empty()) {
      fmt::format_to(std::back_inserter(out), "{}#{} {}\n", indent, i, name);
    } else {
      fmt::format_to(std::back_inserter(out), "{}#{} {} at {}:{}\n", indent, i, name, file,
                     f.source_line());
    }
  }
}

// Boost.Stacktrace keeps libbacktrace's state (the parsed debug information)
// per thread and never frees it. Every lookup therefore runs on this one
// thread, started on first use and stopped and joined at static destruction:
// the debug information is read once per process however many threads ask,
// and no thread of ours is left running when the process exits. Callers block
// until their job is done, one job at a time. A forked child starts its own
// thread and never touches its parent's (which does not exist in the child).
class Symbolizer {
 public:
  static void run(const std::function<void()>& job) {
    static Registry registry;
    Symbolizer* s;
    {
      ThreadLock lock(registry.mutex);
      if (!registry.instance || registry.instance->pid_ != ::getpid())
        registry.instance = new Symbolizer;  // a parent's instance is leaked in a child
      s = registry.instance;
    }
    s->submit(job);
  }

  ~Symbolizer() {
    {
      ThreadLock lock(mutex_);
      stopping_ = true;
    }
    ready_.notify_one();
    thread_.join();
  }

 private:
  struct Registry {
    ThreadMutex mutex;
    Symbolizer* instance SPINDLE_GUARDED_BY(mutex) = nullptr;
    ~Registry() {
      if (instance && instance->pid_ == ::getpid()) delete instance;
    }
  };

  void submit(const std::function<void()>& job) {
    ThreadLock lock(mutex_);
    lock.wait(done_, [&]() SPINDLE_REQUIRES(mutex_) { return job_ == nullptr; });  // one at a time
    job_ = &job;
    error_ = nullptr;
    ready_.notify_one();
    lock.wait(done_, [&]() SPINDLE_REQUIRES(mutex_) { return finished_ == &job; });
    finished_ = nullptr;
    const std::exception_ptr error = error_;
    job_ = nullptr;
    done_.notify_all();
    if (error) std::rethrow_exception(error);
  }

  void loop() {
    ThreadLock lock(mutex_);
    for (;;) {
      lock.wait(ready_, [&]() SPINDLE_REQUIRES(mutex_) {
        return stopping_ || (job_ != nullptr && finished_ == nullptr);
      });
      if (stopping_) return;
      const std::function<void()>* job = job_;
      lock.unlock();
      std::exception_ptr error;
      try {
        (*job)();
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      error_ = error;
      finished_ = job;
      done_.notify_all();
    }
  }

  const pid_t pid_ = ::getpid();
  ThreadMutex mutex_;
  std::condition_variable ready_;  // a job was posted, or stopping_ set
  std::condition_variable done_;   // a job finished, or its result was collected
  // The job posted, until collected.
  const std::function<void()>* job_ SPINDLE_GUARDED_BY(mutex_) = nullptr;
  // The job just run, until collected.
  const std::function<void()>* finished_ SPINDLE_GUARDED_BY(mutex_) = nullptr;
  std::exception_ptr error_ SPINDLE_GUARDED_BY(mutex_);
  bool stopping_ SPINDLE_GUARDED_BY(mutex_) = false;  // set once, by the destructor
  std::thread thread_{[this] { loop(); }};            // last: starts after the members above
};

}  // namespace

void append_backtrace(std::string& out, void* const* frames, std::size_t count,
                      const char* indent) {
  Symbolizer::run([&] { append_frames(out, frames, count, indent); });
}

}  // namespace spindle::detail

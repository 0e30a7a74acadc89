#include "symbolize.hpp"

#define BOOST_STACKTRACE_LINK
#include <fmt/format.h>
#include <unistd.h>

#include <boost/stacktrace/frame.hpp>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

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
// thread, which lives until the process exits: the debug information is read
// once per process however many threads ask. Callers block until their job is
// done, one job at a time. A forked child starts its own thread.
class Symbolizer {
 public:
  static void run(const std::function<void()>& job) {
    static std::mutex instance_mutex;
    static Symbolizer* instance = nullptr;  // never destroyed: its thread may outlive main
    Symbolizer* s;
    {
      std::lock_guard lock(instance_mutex);
      if (!instance || instance->pid_ != ::getpid()) instance = new Symbolizer;
      s = instance;
    }
    s->submit(job);
  }

 private:
  Symbolizer() {
    std::thread([this] { loop(); }).detach();
  }

  void submit(const std::function<void()>& job) {
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return job_ == nullptr; });  // one job at a time
    job_ = &job;
    error_ = nullptr;
    ready_.notify_one();
    done_.wait(lock, [&] { return finished_ == &job; });
    finished_ = nullptr;
    const std::exception_ptr error = error_;
    job_ = nullptr;
    done_.notify_all();
    if (error) std::rethrow_exception(error);
  }

  void loop() {
    std::unique_lock lock(mutex_);
    for (;;) {
      ready_.wait(lock, [&] { return job_ != nullptr && finished_ == nullptr; });
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
  std::mutex mutex_;
  std::condition_variable ready_;                    // a job was posted
  std::condition_variable done_;                     // a job finished, or its result was collected
  const std::function<void()>* job_ = nullptr;       // the job posted, until collected
  const std::function<void()>* finished_ = nullptr;  // the job just run, until collected
  std::exception_ptr error_;
};

}  // namespace

void append_backtrace(std::string& out, void* const* frames, std::size_t count,
                      const char* indent) {
  Symbolizer::run([&] { append_frames(out, frames, count, indent); });
}

}  // namespace spindle::detail

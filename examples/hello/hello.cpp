// spindle-example-hello: the "hello world" of the runtime. The root fiber
// spawns a handful of fibers; each sleeps (parking only itself, not its
// worker thread), says hello, and returns its finishing place, which the root
// collects by joining them in spawn order.

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <exception>
#include <spindle/spindle.hpp>
#include <vector>

using namespace std::chrono_literals;

int main(int argc, char** argv) {
  CLI::App app{"spindle-example-hello: spawn fibers that sleep, then join them"};
  int fibers = 5;
  std::size_t workers = 2;
  app.add_option("-f,--fibers", fibers, "fibers to spawn")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("-w,--workers", workers, "worker threads")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  try {
    spindle::Runtime runtime(spindle::Config{.workers = workers});
    const std::vector<int> places = runtime.run([fibers] {
      std::atomic<int> finished = 0;
      std::vector<spindle::JoinHandle<int>> handles;
      for (int i = 0; i < fibers; ++i) {
        // Later fibers sleep less, so they tend to finish first.
        handles.push_back(spindle::spawn([i, fibers, &finished] {
          const auto nap = 10ms * (fibers - i);
          spindle::this_fiber::sleep_for(nap).value();
          const int place = ++finished;
          fmt::print("hello from fiber {} (id {}): slept {} ms, finished #{} on thread {}\n", i,
                     spindle::this_fiber::id(), nap.count(), place, ::gettid());
          return place;
        }));
      }
      std::vector<int> joined;
      for (auto& h : handles) joined.push_back(h.join().value());
      return joined;
    });
    fmt::print("joined {} fibers on {} worker{}; finishing places in spawn order: {}\n",
               places.size(), workers, workers == 1 ? "" : "s", fmt::join(places, " "));
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "spindle-example-hello: {}\n", e.what());
    return 1;
  }
}

// A plain thread hands a value to a simulated fiber parked on a channel: a
// wake no seed decides, which must say so and abort. Another fiber yields
// all the while, so the simulation never finds every fiber blocked (a
// deadlock) before the plain thread gets there.
#include <chrono>
#include <cstdio>
#include <spindle/spindle.hpp>
#include <thread>

int main() {
  spindle::sim::Runtime rt(spindle::sim::Config{.seed = 1});
  rt.run([] {
    spindle::Channel<int> ch(0);
    spindle::spawn([] {
      for (;;) (void)spindle::this_fiber::yield();
    }).detach();
    std::thread plain([&] {
      // try_send succeeds only into a parked receiver.
      while (ch.try_send(1)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
    (void)ch.recv();
    plain.join();
  });
  std::puts("the foreign wake was accepted");
  return 0;
}

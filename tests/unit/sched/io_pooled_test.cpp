// io::recv_pooled: the bytes arrive in a buffer of the worker's receive
// pool, taken only when they arrive; buffers come back from any thread; a
// pool with every buffer out falls back to a buffer of the call's own.
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "exposition.hpp"
#include "io/buffer_pool.hpp"
#include "runtime_harness.hpp"
#include "spindle/base/unique_fd.hpp"

using namespace std::chrono_literals;
namespace io = spindle::io;
using spindle::UniqueFd;
using spindle::detail::BufferPool;

namespace {

std::pair<UniqueFd, UniqueFd> stream_pair() {
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  return {UniqueFd(sv[0]), UniqueFd(sv[1])};
}

void send_text(int fd, std::string_view s) {
  REQUIRE(io::send(fd, std::as_bytes(std::span(s)), MSG_NOSIGNAL).value() == s.size());
}

}  // namespace

TEST_CASE("io: recv_pooled gets what arrives later in a pool buffer, and end of stream empty",
          "[io][pooled]") {
  spindle::test::on_workers([] {
    auto [a, b] = stream_pair();
    auto reader = spindle::spawn([&a] { return io::recv_pooled(a.get(), 0); });
    (void)spindle::this_fiber::sleep_for(5ms);
    send_text(b.get(), "hello");
    auto got = reader.join().value();
    REQUIRE(got);
    CHECK(got->view() == "hello");
    CHECK(got->from_pool());
    CHECK(::shutdown(b.get(), SHUT_WR) == 0);
    auto end = io::recv_pooled(a.get(), 0);
    REQUIRE(end);
    CHECK(end->empty());
    CHECK_FALSE(end->from_pool());
  });
}

TEST_CASE("io: recv_pooled returns at most one buffer's worth; the rest stays readable",
          "[io][pooled]") {
  spindle::test::on_workers([] {
    auto [a, b] = stream_pair();
    std::string big(BufferPool::kSize + 100, 'x');
    for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('a' + i % 26);
    auto writer = spindle::spawn([&b, &big] { send_text(b.get(), big); });
    std::string got;
    while (got.size() < big.size()) {
      auto part = io::recv_pooled(a.get(), 0);
      REQUIRE(part);
      REQUIRE_FALSE(part->empty());
      CHECK(part->size() <= io::kPooledBufferSize);
      got += part->view();
    }
    CHECK(got == big);
    REQUIRE(writer.join());
  });
}

TEST_CASE("io: pool buffers given back on other threads are used again", "[io][pooled]") {
  spindle::test::on_workers([] {
    auto [a, b] = stream_pair();
    // Each round sends a whole buffer's worth, so it fills at least one
    // buffer; more rounds than a pool has buffers: one that never came back
    // would leave the pool empty, and the later receives in buffers of
    // their own.
    const std::string chunk(BufferPool::kSize, 'x');
    for (std::uint32_t i = 0; i < 3 * BufferPool::kCount; ++i) {
      auto writer = spindle::spawn([fd = b.get(), &chunk] {
        std::size_t sent = 0;
        while (sent < chunk.size()) {
          auto n = io::send(fd, std::as_bytes(std::span(chunk)).subspan(sent), MSG_NOSIGNAL);
          REQUIRE(n);
          sent += *n;
        }
      });
      std::size_t got = 0;
      while (got < chunk.size()) {
        auto part = io::recv_pooled(a.get(), 0);
        REQUIRE(part);
        REQUIRE_FALSE(part->empty());
        REQUIRE(part->from_pool());
        got += part->size();
        if ((i + got) % 2 == 0) {
          std::thread([held = std::move(*part)]() mutable { held.reset(); }).join();
        }
      }
      REQUIRE(got == chunk.size());
      REQUIRE(writer.join());
    }
  });
}

TEST_CASE("io: a pooled receive that waits holds no buffer", "[io][pooled]") {
  // One worker: one pool.
  spindle::test::on_workers(
      [] {
        // More readers than the pool has buffers (and, when each takes a
        // piece of a buffer, a buffer's worth of their bytes).
        constexpr std::size_t kReaders = 2 * BufferPool::kCount + 44;
        std::vector<std::pair<UniqueFd, UniqueFd>> pairs;
        for (std::size_t i = 0; i < kReaders; ++i) pairs.push_back(stream_pair());
        // All wait at once, more than the pool has buffers. Bytes come to
        // a few at a time, and each gives its buffer back before the next
        // few: every one of them gets a pool buffer.
        std::vector<spindle::JoinHandle<bool>> readers;
        for (auto& p : pairs) {
          readers.push_back(spindle::spawn([fd = p.first.get()] {
            auto got = io::recv_pooled(fd, 0);
            return got && got->view() == "ab" && got->from_pool();
          }));
        }
        (void)spindle::this_fiber::sleep_for(5ms);
        constexpr std::size_t kFew = 32;
        for (std::size_t i = 0; i < kReaders; i += kFew) {
          const std::size_t end = std::min(kReaders, i + kFew);
          for (std::size_t j = i; j < end; ++j) send_text(pairs[j].second.get(), "ab");
          for (std::size_t j = i; j < end; ++j) CHECK(readers[j].join().value());
        }
      },
      {1});
}

TEST_CASE("io: with every pool buffer held, a pooled receive uses a buffer of its own",
          "[io][pooled]") {
  // One worker: one pool.
  spindle::test::on_workers(
      [] {
        auto [a, b] = stream_pair();
        // More bytes than the whole pool holds, every piece kept.
        constexpr std::size_t kTotal = (BufferPool::kCount + 8) * BufferPool::kSize;
        auto writer = spindle::spawn([fd = b.get()] {
          const std::string chunk(BufferPool::kSize, 'p');
          std::size_t sent = 0;
          while (sent < kTotal) {
            const std::size_t len = std::min(chunk.size(), kTotal - sent);
            auto n = io::send(fd, std::as_bytes(std::span(chunk).first(len)), MSG_NOSIGNAL);
            REQUIRE(n);
            sent += *n;
          }
        });
        std::vector<io::PooledBuffer> held;
        std::size_t got = 0;
        std::size_t pooled = 0;
        std::size_t own = 0;
        while (got < kTotal) {
          auto part = io::recv_pooled(a.get(), 0);
          REQUIRE(part);
          REQUIRE_FALSE(part->empty());
          REQUIRE(part->view().find_first_not_of('p') == std::string_view::npos);
          got += part->size();
          (part->from_pool() ? pooled : own) += part->size();
          held.push_back(std::move(*part));
        }
        REQUIRE(writer.join());
        CHECK(got == kTotal);
        CHECK(pooled <= BufferPool::kCount * BufferPool::kSize);
        CHECK(own > 0);
        CHECK(spindle::test::metric_value(spindle::current_runtime().metrics_text(),
                                          "runtime_pooled_receive_fallbacks_total") >= 1);
        // Given back, the buffers serve again.
        held.clear();
        send_text(b.get(), "ef");
        auto again = io::recv_pooled(a.get(), 0);
        REQUIRE(again);
        CHECK(again->view() == "ef");
        CHECK(again->from_pool());
      },
      {1});
}

TEST_CASE("io: a pooled receive times out or is aborted without losing a buffer", "[io][pooled]") {
  spindle::test::on_workers([] {
    auto [a, b] = stream_pair();
    auto late = io::recv_pooled(a.get(), 0, {.deadline = spindle::Clock::now() + 10ms});
    REQUIRE_FALSE(late);
    CHECK(late.error() == spindle::errc::timed_out);
    auto waiting = spindle::spawn([&a] { return io::recv_pooled(a.get(), 0); });
    (void)spindle::this_fiber::sleep_for(5ms);
    waiting.abort();
    auto aborted = waiting.join();
    CHECK((!aborted || !aborted.value()));
    send_text(b.get(), "after");
    auto got = io::recv_pooled(a.get(), 0);
    REQUIRE(got);
    CHECK(got->view() == "after");
    CHECK(got->from_pool());
  });
}

TEST_CASE("io: a pool buffer may outlive its runtime", "[io][pooled]") {
  io::PooledBuffer kept;
  spindle::Runtime rt(spindle::Config{.workers = 1});
  rt.run([&kept] {
    auto [a, b] = stream_pair();
    send_text(b.get(), "kept");
    kept = io::recv_pooled(a.get(), 0).value();
  });
  CHECK(kept.from_pool());
  CHECK(kept.view() == "kept");
  kept.reset();
  CHECK(kept.empty());
}

TEST_CASE("io: a copy of bytes is a buffer of its own", "[io][pooled]") {
  const std::string s = "copied";
  auto b = io::PooledBuffer::copy_of(std::as_bytes(std::span(s)));
  CHECK(b.view() == "copied");
  CHECK_FALSE(b.from_pool());
  auto moved = std::move(b);
  CHECK(moved.view() == "copied");
  CHECK(b.empty());
  CHECK(io::PooledBuffer::copy_of({}).empty());
}

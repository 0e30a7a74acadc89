// The soak test (`ctest -L soak`; never part of the default runs):
// spindle-echo, spindle-http and spindle-kv under mixed load from client
// threads for SPINDLE_SOAK_SECONDS (default 600), with random client
// disconnects injected: a reset (RST) in the middle of a request, or a clean
// close after half a request. Beside that churn, each server holds 5,000
// connections open for the whole run, every one of them exchanging again
// about once a second. Every reply is checked. After a warm-up (a tenth of
// the time) and again at the end, the load stops and each server's RSS and
// open descriptors are read: at the end neither may exceed its after-warm-up
// value by more than 10%. Each server must then stop on SIGTERM with exit
// code 0 and nothing but its banner and shutdown lines on stderr.
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "many_connections.hpp"
#include "proc_stats.hpp"
#include "process.hpp"
#include "xorshift.hpp"

using spindle::test::Client;
using spindle::test::Ms;
using spindle::test::open_fds;
using spindle::test::rss_kib;
using spindle::test::Server;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {

// Connections each server holds open through the whole run, beside the churn.
constexpr std::size_t kHeld = 5'000;

// What the clients saw. Thread-safe.
struct Tally {
  std::atomic<std::uint64_t> exchanges{0};  // requests answered and checked
  std::atomic<std::uint64_t> injected{0};   // disconnects the clients made on purpose
  std::atomic<std::uint64_t> failures{0};   // anything else
  std::mutex mutex;
  std::string first_failure;

  void fail(const std::string& what) {
    if (failures.fetch_add(1) == 0) {
      std::lock_guard lock(mutex);
      first_failure = what;
    }
  }
};

// Reads from `c` up to and including the first `marker`, byte by byte (a
// pipelined response may follow), or "" on end of stream, error or timeout.
std::string recv_through(Client& c, std::string_view marker) {
  std::string out;
  char ch;
  while (out.size() < 65536) {
    if (::recv(c.fd(), &ch, 1, 0) != 1) return {};
    out += ch;
    if (out.ends_with(marker)) return out;
  }
  return {};
}

// Makes the close of `c` a reset (RST): the server sees ECONNRESET.
void reset_on_close(Client& c) {
  linger l{1, 0};
  ::setsockopt(c.fd(), SOL_SOCKET, SO_LINGER, &l, sizeof l);
}

std::string random_bytes(spindle::test::Xorshift& rng, std::size_t n) {
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>('a' + rng.next() % 26);
  return s;
}

// One exchange per server kind; false (after tally.fail) on a wrong answer.
bool echo_once(Client& c, spindle::test::Xorshift& rng, Tally& tally) {
  const std::string msg = random_bytes(rng, 1 + rng.next() % 16384);
  if (!c.send_all(msg)) return tally.fail("echo: send failed"), false;
  if (c.recv_n(msg.size()) != msg) return tally.fail("echo: wrong or missing echo"), false;
  return true;
}

bool http_once(Client& c, spindle::test::Xorshift& rng, Tally& tally) {
  const std::size_t pipelined = 1 + rng.next() % 4;
  std::string req;
  for (std::size_t i = 0; i < pipelined; ++i) req += "GET / HTTP/1.1\r\nHost: soak\r\n\r\n";
  if (!c.send_all(req)) return tally.fail("http: send failed"), false;
  for (std::size_t i = 0; i < pipelined; ++i) {
    const std::string head = recv_through(c, "\r\n\r\n");
    if (head.rfind("HTTP/1.1 200 ", 0) != 0) return tally.fail("http: bad status: " + head), false;
    const auto at = head.find("Content-Length: ");
    if (at == std::string::npos) return tally.fail("http: no Content-Length"), false;
    const std::size_t len = std::stoul(head.substr(at + 16));
    if (len > 0 && c.recv_n(len).size() != len) return tally.fail("http: short body"), false;
  }
  return true;
}

std::string resp(std::initializer_list<std::string_view> args) {
  std::string s = "*" + std::to_string(args.size()) + "\r\n";
  for (auto a : args) s += "$" + std::to_string(a.size()) + "\r\n" + std::string(a) + "\r\n";
  return s;
}

bool kv_once(Client& c, spindle::test::Xorshift& rng, Tally& tally, int client) {
  // Each client has its own 200 keys: the keyspace stops growing in the warm-up.
  const std::string key = "soak:" + std::to_string(client) + ":" + std::to_string(rng.next() % 200);
  const std::string value = random_bytes(rng, 1 + rng.next() % 256);
  if (!c.send_all(resp({"SET", key, value}) + resp({"GET", key})))
    return tally.fail("kv: send failed"), false;
  if (c.recv_n(5) != "+OK\r\n") return tally.fail("kv: SET not OK"), false;
  const std::string want = "$" + std::to_string(value.size()) + "\r\n" + value + "\r\n";
  if (c.recv_n(want.size()) != want) return tally.fail("kv: GET gave another value"), false;
  return true;
}

enum class Kind { kEcho, kHttp, kKv };

// One exchange of `kind` on `c`; `id` is the client's, for its kv keys.
bool exchange(Kind kind, Client& c, spindle::test::Xorshift& rng, Tally& tally, int id) {
  return kind == Kind::kEcho   ? echo_once(c, rng, tally)
         : kind == Kind::kHttp ? http_once(c, rng, tally)
                               : kv_once(c, rng, tally, id);
}

// Connects, exchanges a random number of times, then closes cleanly or
// injects a disconnect; over and over until `until`.
void client(Kind kind, int port, int id, Clock::time_point until, Tally& tally) {
  spindle::test::Xorshift rng(0x5eed0000u + static_cast<std::uint64_t>(id) * 7919u +
                              static_cast<std::uint64_t>(Clock::now().time_since_epoch().count()));
  while (Clock::now() < until) {
    std::optional<Client> conn;
    try {
      conn.emplace(port);
    } catch (const std::exception& e) {
      tally.fail(e.what());
      std::this_thread::sleep_for(100ms);
      continue;
    }
    Client& c = *conn;
    const std::size_t exchanges = 1 + rng.next() % 100;
    bool good = true;
    for (std::size_t i = 0; i < exchanges && good && Clock::now() < until; ++i) {
      good = exchange(kind, c, rng, tally, id);
      if (good) ++tally.exchanges;
    }
    if (!good) continue;
    switch (rng.next() % 4) {
      case 0: {  // half a request, then a reset
        const std::string half = kind == Kind::kHttp ? "GET / HTTP/1.1\r\nHo"
                                 : kind == Kind::kKv ? "*3\r\n$3\r\nSET\r\n$1\r\nk"
                                                     : std::string(8192, 'x');
        (void)c.send_all(half);
        reset_on_close(c);
        ++tally.injected;
        break;
      }
      case 1: {  // half a request, then a clean close
        (void)c.send_all(kind == Kind::kKv ? "*2\r\n$3\r\nGET" : "GET /");
        ++tally.injected;
        break;
      }
      default:  // a clean close between requests
        break;
    }
  }
}

// A server's held connections (kHeld, opened at the start) and the client id
// their exchanges use.
struct Held {
  Kind kind;
  int id;
  std::vector<std::unique_ptr<Client>> clients;
};

// Sweeps `held` until `until`: one exchange on every connection, then a
// pause, so each stays mostly idle; a connection that fails is dropped.
void hold(Held& held, Clock::time_point until, Tally& tally) {
  spindle::test::Xorshift rng(0x401d0000u + static_cast<std::uint64_t>(held.id));
  while (Clock::now() < until) {
    for (auto& c : held.clients) {
      if (c && exchange(held.kind, *c, rng, tally, held.id)) {
        ++tally.exchanges;
      } else {
        c.reset();
      }
    }
    std::this_thread::sleep_for(1s);
  }
}

// Runs the load on every server until `until`, the churn and the sweeps of
// the held connections; returns once every client thread has closed its
// last churn connection.
void load(const std::vector<std::pair<Kind, int>>& servers, std::vector<Held>& held,
          Clock::time_point until, Tally& tally) {
  std::vector<std::thread> threads;
  int id = 0;
  for (const auto& [kind, port] : servers)
    for (int i = 0; i < 2; ++i)
      threads.emplace_back(client, kind, port, id++, until, std::ref(tally));
  for (Held& h : held) threads.emplace_back(hold, std::ref(h), until, std::ref(tally));
  for (auto& t : threads) t.join();
}

struct Sample {
  long rss_kib;
  long fds;
};

// RSS and descriptors of `s` once its descriptor count has settled (the
// server closes its side of the connections the clients just closed).
Sample settle(Server& s) {
  const pid_t pid = s.process().pid();
  long fds = open_fds(pid);
  for (int i = 0; i < 50; ++i) {
    (void)s.process().wait_for_err_line("\x01", Ms(100));  // also drains its stderr pipe
    const long now = open_fds(pid);
    if (now == fds) break;
    fds = now;
  }
  return {rss_kib(pid), fds};
}

std::chrono::seconds soak_time() {
  const char* env = std::getenv("SPINDLE_SOAK_SECONDS");
  const long s = env ? std::atol(env) : 600;
  return std::chrono::seconds(s >= 20 ? s : 20);
}

}  // namespace

TEST_CASE("soak: echo - http and kv under mixed load with disconnects hold memory and fds",
          "[soak]") {
  spindle::test::require_fds_for_connections(3 * kHeld);
  const auto total = soak_time();
  const auto warmup = std::max<std::chrono::seconds>(total / 10, 10s);
  char dir_template[] = "/tmp/spindle-soak.XXXXXX";
  REQUIRE(::mkdtemp(dir_template) != nullptr);
  const std::filesystem::path dir(dir_template);

  Server echo(SPINDLE_ECHO_BIN, {"--idle-timeout", "30"});
  Server http(SPINDLE_HTTP_BIN, {"--idle-timeout", "30"});
  Server kv(SPINDLE_KV_BIN, {"--dir", (dir / "kv").string(), "--fsync", "everysec"});
  const std::vector<std::pair<Kind, int>> servers = {
      {Kind::kEcho, echo.port()}, {Kind::kHttp, http.port()}, {Kind::kKv, kv.port()}};
  Server* procs[] = {&echo, &http, &kv};
  const char* names[] = {"echo", "http", "kv"};

  Tally tally;
  std::vector<Held> held;
  for (int i = 0; i < 3; ++i) {
    const auto [kind, port] = servers[i];
    Held h{kind, 100 + i, {}};
    spindle::test::Xorshift rng(0x0be40000u + static_cast<std::uint64_t>(i));
    h.clients = spindle::test::open_connections(port, kHeld, [&](Client& c, std::size_t) {
                  return exchange(kind, c, rng, tally, h.id);
                }).clients;
    INFO(names[i]);
    REQUIRE(h.clients.size() == kHeld);
    held.push_back(std::move(h));
  }
  const auto began = Clock::now();
  load(servers, held, began + warmup, tally);
  Sample warm[3];
  for (int i = 0; i < 3; ++i) warm[i] = settle(*procs[i]);
  load(servers, held, began + total, tally);
  Sample end[3];
  for (int i = 0; i < 3; ++i) end[i] = settle(*procs[i]);
  // Every held connection is still served at the end.
  for (int i = 0; i < 3; ++i) {
    spindle::test::Xorshift rng(0x0e4d0000u + static_cast<std::uint64_t>(i));
    std::size_t answered = 0;
    for (auto& c : held[i].clients) {
      if (c && exchange(held[i].kind, *c, rng, tally, held[i].id)) ++answered;
    }
    INFO(names[i]);
    CHECK(answered == kHeld);
  }
  held.clear();

  std::printf("soak: %lld s, %llu exchanges checked, %llu disconnects injected, %llu failures\n",
              static_cast<long long>(total.count()),
              static_cast<unsigned long long>(tally.exchanges.load()),
              static_cast<unsigned long long>(tally.injected.load()),
              static_cast<unsigned long long>(tally.failures.load()));
  for (int i = 0; i < 3; ++i) {
    std::printf("soak: %-4s RSS %ld -> %ld KiB, fds %ld -> %ld\n", names[i], warm[i].rss_kib,
                end[i].rss_kib, warm[i].fds, end[i].fds);
  }
  {
    std::lock_guard lock(tally.mutex);
    INFO("first failure: " << tally.first_failure);
    CHECK(tally.failures == 0);
  }
  CHECK(tally.exchanges > 0);
  CHECK(tally.injected > 0);
  for (int i = 0; i < 3; ++i) {
    INFO(names[i]);
    CHECK(warm[i].rss_kib > 0);
    CHECK(end[i].rss_kib * 10 <= warm[i].rss_kib * 11);
    CHECK(end[i].fds * 10 <= warm[i].fds * 11);
  }
  for (int i = 0; i < 3; ++i) {
    INFO(names[i] << " stderr:\n" << procs[i]->process().err());
    CHECK(procs[i]->stop() == 0);
    const std::string& err = procs[i]->process().err();
    CHECK(err.find("ERROR") == std::string::npos);  // sanitizer reports
    CHECK(err.find("runtime error") == std::string::npos);
  }
  std::filesystem::remove_all(dir);
}

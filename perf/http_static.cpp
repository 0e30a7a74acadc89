// http_static: a 64 KiB file over HTTP/1.1 keep-alive, served by
// spindle-http (--workers 1 --root) and measured by wrk; nginx.cpp is the
// baseline. The frame (http_static.hpp) is shared by both servers.
//
// wrk's -d takes whole seconds, so wrk gets a second more than the window
// and a SIGINT at its end: wrk then stops its threads within its 100 ms
// sampling tick and prints its report as at the end of -d. A report script
// prints wrk's exact counts (requests, bytes, errors) on one line.

#include "http_static.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <system_error>
#include <thread>

#include "echo.hpp"
#include "measure.hpp"
#include "programs.hpp"
#include "scratch.hpp"
#include "unique_fd.hpp"

namespace spindle::perf {
namespace {

constexpr std::string_view kWhat = "http_static";
constexpr std::uint64_t kStaticBytes = 64 * 1024;
constexpr std::size_t kConnections = 64;
// A response's status line and headers are at most this long (the upper
// bound of wrk's bytes per request).
constexpr std::uint64_t kMaxHead = 1024;
// The server must accept within this long of its start; a probe response
// must arrive within it.
constexpr auto kStartTimeout = std::chrono::seconds(10);
constexpr std::string_view kReportScript = "report.lua";
constexpr std::string_view kReportPrefix = "spindle-perf:";

// wrk's report script: its `done` hook prints the exact counts.
constexpr std::string_view kReportLua =
    R"(-- spindle-perf http_static: wrk's exact counts on one line.
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "spindle-perf: requests %.0f bytes %.0f duration_us %.0f " ..
    "connect %.0f read %.0f write %.0f timeout %.0f status %.0f\n",
    summary.requests, summary.bytes, summary.duration,
    e.connect, e.read, e.write, e.timeout, e.status))
end
)";

std::filesystem::path report_script(const Params& p) {
  return p.static_root.parent_path() / kReportScript;
}

std::string spindle_http_path() {
#ifdef SPINDLE_PERF_HTTP_BIN
  return SPINDLE_PERF_HTTP_BIN;
#else
  return "";
#endif
}

// A blocking connection to 127.0.0.1:port whose reads and writes give up
// after kStartTimeout; invalid if the connection is refused.
UniqueFd connect_loopback(std::uint16_t port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) throw_errno("http_static: socket");
  const timeval tv{std::chrono::seconds(kStartTimeout).count(), 0};
  if (::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
      ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0) {
    throw_errno("http_static: setsockopt");
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  while (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    if (errno == ECONNREFUSED) return {};
    if (errno != EINTR) throw_errno("http_static: connect");
  }
  return fd;
}

// The end of `log`, to say why a server did not start.
std::string log_tail(const std::filesystem::path& log) {
  if (log.empty()) return "";
  std::ifstream in(log);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (text.size() > 2000) text.erase(0, text.size() - 2000);
  return text.empty() ? "" : fmt::format("; {}: {}", log.string(), text);
}

void wait_until_listening(Program& server, std::string_view impl, const StaticServer& s) {
  const auto until = std::chrono::steady_clock::now() + kStartTimeout;
  for (;;) {
    check(server.running(), "{}: {} {} before listening{}", kWhat, impl,
          describe_status(server.ended().status), log_tail(s.log));
    if (connect_loopback(s.port)) return;
    check(std::chrono::steady_clock::now() < until, "{}: {} not listening on port {} after {} s",
          kWhat, impl, s.port, std::chrono::seconds(kStartTimeout).count());
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno("http_static: sending a request");
    data.remove_prefix(static_cast<std::size_t>(n));
  }
}

// Appends what the next recv brings to `in`; the peer closing fails.
void receive(int fd, std::string& in) {
  char buf[16 * 1024];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof buf, 0)) < 0 && errno == EINTR) {
  }
  if (n < 0) throw_errno("http_static: receiving a response");
  check(n > 0, "{}: the server closed the connection mid-response", kWhat);
  in.append(buf, static_cast<std::size_t>(n));
}

// The Content-Length of a response head, or -1 without one.
long long content_length(std::string_view head) {
  std::string lower(head);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const std::string_view name = "\r\ncontent-length:";
  const auto at = lower.find(name);
  if (at == std::string::npos) return -1;
  std::string_view value = std::string_view(lower).substr(at + name.size());
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  long long n = -1;
  std::from_chars(value.data(), value.data() + value.size(), n);
  return n;
}

// Two GETs of the file on one connection (so keep-alive works): each
// answered 200 with a Content-Length of the file's size and its bytes.
void check_responses(std::uint16_t port, std::string_view impl) {
  const UniqueFd fd = connect_loopback(port);
  check(bool(fd), "{}: {} refused a connection", kWhat, impl);
  const std::string request =
      fmt::format("GET /{} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n\r\n", kStaticName, port);
  std::string in;
  for (int i = 0; i < 2; ++i) {
    send_all(fd.get(), request);
    std::size_t end;
    while ((end = in.find("\r\n\r\n")) == std::string::npos) receive(fd.get(), in);
    const std::string_view head = std::string_view(in).substr(0, end);
    const std::string_view status = head.substr(0, head.find("\r\n"));
    check(status.starts_with("HTTP/1.1 200 "), "{}: {} answered GET /{} with '{}'", kWhat, impl,
          kStaticName, status);
    const long long length = content_length(head);
    check(length == static_cast<long long>(kStaticBytes),
          "{}: {} answered GET /{} with Content-Length {}, not {}", kWhat, impl, kStaticName,
          length, kStaticBytes);
    const std::size_t body = end + 4;
    while (in.size() < body + kStaticBytes) receive(fd.get(), in);
    for (std::uint64_t b = 0; b < kStaticBytes / kBlock; ++b) {
      check(stamped(reinterpret_cast<const std::byte*>(in.data() + body + b * kBlock), b),
            "{}: {} sent block {} of /{} wrong", kWhat, impl, b, kStaticName);
    }
    in.erase(0, body + kStaticBytes);
  }
}

// wrk's counts, from the report script's line.
struct WrkReport {
  double requests = 0, bytes = 0, duration_us = 0;
  double connect = 0, read = 0, write = 0, timeout = 0, status = 0;  // errors
};

WrkReport run_wrk(const Params& p, std::uint16_t port) {
  const std::string wrk = find_on_path("wrk");
  check(!wrk.empty(), "{}: {}", kWhat, wrk_missing());
  const std::uint64_t window_ms = p.sizes.http_window_ms;
  Program load(
      wrk,
      {"-t1", fmt::format("-c{}", kConnections), fmt::format("-d{}s", (window_ms + 999) / 1000 + 1),
       "-s", report_script(p).string(), fmt::format("http://127.0.0.1:{}/{}", port, kStaticName)},
      {.merge_stderr = true});
  std::this_thread::sleep_for(std::chrono::milliseconds(window_ms));
  load.signal(SIGINT);
  const ProgramExit e = load.wait();
  check(e.ok(), "{}: wrk {}: {}", kWhat, describe_status(e.status), e.out);
  WrkReport r;
  const auto at = e.out.find(kReportPrefix);
  const int got =
      at == std::string::npos
          ? 0
          : std::sscanf(e.out.c_str() + at,
                        "spindle-perf: requests %lf bytes %lf duration_us %lf connect %lf read %lf "
                        "write %lf timeout %lf status %lf",
                        &r.requests, &r.bytes, &r.duration_us, &r.connect, &r.read, &r.write,
                        &r.timeout, &r.status);
  check(got == 8, "{}: no counts from wrk's report script in its output: {}", kWhat, e.out);
  return r;
}

}  // namespace

std::uint16_t free_loopback_port() {
  std::uint16_t port = 0;
  listen_loopback(port, 0);  // closed at once
  return port;
}

std::string wrk_missing() {
  return find_on_path("wrk").empty()
             ? "wrk is not installed (no wrk on PATH; scripts/bootstrap.sh installs it)"
             : "";
}

Row measure_http_static(const Params& p, std::string_view impl, const StaticServer& s) {
  Program server(s.exe, s.args, {.cpu = kServerCpu, .capture_stdout = false});
  pin_to_cpu(kClientCpu);
  wait_until_listening(server, impl, s);
  check_responses(s.port, impl);
  clockid_t clock{};
  if (const int err = ::clock_getcpuclockid(server.pid(), &clock); err != 0) {
    throw std::system_error(err, std::system_category(), "clock_getcpuclockid");
  }
  const double cpu_start = cpu_clock_seconds(clock);
  const WrkReport load = run_wrk(p, s.port);
  const double cpu = cpu_clock_seconds(clock) - cpu_start;
  check(server.running(), "{}: {} {} during the run{}", kWhat, impl,
        describe_status(server.ended().status), log_tail(s.log));
  server.kill();

  check(load.connect + load.read + load.write + load.timeout + load.status == 0,
        "{}: wrk counted errors against {}: connect {}, read {}, write {}, timeout {}, "
        "status >= 400 {}",
        kWhat, impl, load.connect, load.read, load.write, load.timeout, load.status);
  check(load.requests > 0 && load.duration_us > 0, "{}: wrk completed no request", kWhat);
  // Every completed response brought the whole file; the bytes beyond them
  // are heads and the responses in flight when wrk stopped.
  const double per_response = static_cast<double>(kStaticBytes);
  check(load.bytes >= load.requests * per_response &&
            load.bytes <= (load.requests + kConnections) * (per_response + kMaxHead),
        "{}: {} bytes for {} responses from {} do not fit a {}-byte file in each", kWhat,
        load.bytes, load.requests, impl, kStaticBytes);

  Params one = p;
  one.workers = 1;
  const auto requests = static_cast<std::uint64_t>(load.requests);
  Row r = make_row(std::string(kWhat), std::string(impl), one, requests,
                   {load.duration_us * 1e-6, cpu}, "req/s");
  r.set("connections", static_cast<double>(kConnections));
  r.set("server_cpu_s_per_req", cpu / load.requests);
  r.set("file_kib", static_cast<double>(kStaticBytes >> 10));
  return r;
}

std::shared_ptr<void> prepare_http_static(Params& p) {
  auto dir = std::make_shared<ScratchDir>();
  p.static_root = dir->path() / "root";
  std::filesystem::create_directory(p.static_root);
  make_stamped_file(p.static_root / kStaticName, {}, kStaticBytes, kWhat);
  write_text_file(report_script(p), kReportLua, kWhat);
  return dir;
}

std::string spindle_http_missing() {
  if (std::string wrk = wrk_missing(); !wrk.empty()) return wrk;
  const std::string bin = spindle_http_path();
  if (bin.empty()) return "spindle-http is not built (SPINDLE_BUILD_APPS is OFF)";
  if (::access(bin.c_str(), X_OK) != 0) {
    return fmt::format("no spindle-http at {} (build the spindle-http target)", bin);
  }
  return "";
}

Row spindle_http_static(const Params& p) {
  const std::string missing = spindle_http_missing();
  check(missing.empty(), "{}: {}", kWhat, missing);
  const std::uint16_t port = free_loopback_port();
  return measure_http_static(p, "spindle",
                             {.exe = spindle_http_path(),
                              .args = {"--listen", fmt::format("127.0.0.1:{}", port), "--workers",
                                       "1", "--root", p.static_root.string()},
                              .port = port,
                              .log = {}});
}

}  // namespace spindle::perf

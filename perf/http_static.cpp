// http_static: a 64 KiB file over HTTP/1.1 keep-alive, served by
// spindle-http (--workers 1 --root) and measured by wrk; nginx.cpp is the
// baseline. The frame (http_static.hpp) is shared by both servers, and by
// the https rows: the same file over HTTPS keep-alive (https), and over a
// new connection with a full TLS handshake per request (https_handshake,
// wrk sending "Connection: close"). Both https rows serve the same 64 KiB
// file as http_static, so that with everything else alike the difference of
// https from http_static is the cost of the TLS records, and that of
// https_handshake from https the cost of a connection and its handshake.
//
// The TLS settings are not chosen by either server's code or flags but by
// the OpenSSL configuration file prepare_https writes (kOpensslConf), which
// both servers and wrk get as OPENSSL_CONF: OpenSSL 3 loads it when a
// program first uses libssl and applies its system_default section to every
// SSL_CTX made after, so each server gets the same suite, group and ticket
// settings through its unchanged TLS set-up. With NumTickets = 0 no server
// sends a session ticket, so every connection of https_handshake is a full
// handshake (wrk would otherwise resume). Both servers set the lowest
// protocol version themselves, over the file's MinProtocol (spindle-http's
// tls::Context TLS 1.2, nginx its ssl_protocols); wrk, which does not, offers
// TLS 1.3 only. The certificate is EC P-256, made by openssl at prepare
// time. The start-up probe offers more than the file allows (tls_client.hpp)
// and checks that each server chose what the file says and sent no ticket.
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
#include <optional>
#include <string>
#include <system_error>
#include <thread>

#include "echo.hpp"
#include "measure.hpp"
#include "programs.hpp"
#include "scratch.hpp"
#include "tls_client.hpp"
#include "unique_fd.hpp"

namespace spindle::perf {
namespace {

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

// What every TLS handshake of the https rows negotiates, as the OpenSSL
// configuration file says.
constexpr std::string_view kTlsVersion = "TLSv1.3";
constexpr std::string_view kTlsSuite = "TLS_AES_128_GCM_SHA256";
constexpr std::string_view kTlsGroup = "X25519";

// The OpenSSL configuration file of the https rows: `openssl_conf` names
// the section read at OpenSSL's start-up, whose ssl_conf's system_default
// section is applied to every SSL_CTX.
constexpr std::string_view kOpensslConf =
    R"(# spindle-perf https: the TLS settings of both servers and of wrk.
openssl_conf = openssl_init

[openssl_init]
ssl_conf = ssl_sect

[ssl_sect]
system_default = system_default_sect

[system_default_sect]
MinProtocol = {version}
Ciphersuites = {suite}
Groups = {group}
NumTickets = 0
)";

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
  if (!fd) throw_errno("http: socket");
  const timeval tv{std::chrono::seconds(kStartTimeout).count(), 0};
  if (::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
      ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0) {
    throw_errno("http: setsockopt");
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  while (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    if (errno == ECONNREFUSED) return {};
    if (errno != EINTR) throw_errno("http: connect");
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

void wait_until_listening(Program& server, std::string_view what, std::string_view impl,
                          const StaticServer& s) {
  const auto until = std::chrono::steady_clock::now() + kStartTimeout;
  for (;;) {
    check(server.running(), "{}: {} {} before listening{}", what, impl,
          describe_status(server.ended().status), log_tail(s.log));
    if (connect_loopback(s.port)) return;
    check(std::chrono::steady_clock::now() < until, "{}: {} not listening on port {} after {} s",
          what, impl, s.port, std::chrono::seconds(kStartTimeout).count());
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno("http: sending a request");
    data.remove_prefix(static_cast<std::size_t>(n));
  }
}

// The start-up probe's connection to the server: a socket, with TLS over it
// for a load with tls.
class ProbeConnection {
 public:
  ProbeConnection(std::uint16_t port, const HttpLoad& load, std::string_view impl)
      : fd_(connect_loopback(port)) {
    check(bool(fd_), "{}: {} refused a connection", load.name, impl);
    if (load.tls) tls_.emplace(fd_.get(), fmt::format("{}: {}", load.name, impl));
  }

  void send(std::string_view data) {
    if (tls_) return tls_->send_all(data);
    send_all(fd_.get(), data);
  }

  // Appends what the next read brings to `in`; false at the end of the stream.
  bool receive(std::string& in) {
    char buf[16 * 1024];
    if (tls_) {
      const std::size_t n = tls_->receive(buf, sizeof buf);
      in.append(buf, n);
      return n > 0;
    }
    ssize_t n;
    while ((n = ::recv(fd_.get(), buf, sizeof buf, 0)) < 0 && errno == EINTR) {
    }
    if (n < 0) throw_errno("http: receiving a response");
    in.append(buf, static_cast<std::size_t>(n));
    return n > 0;
  }

  const TlsClient* tls() const { return tls_ ? &*tls_ : nullptr; }

 private:
  UniqueFd fd_;
  std::optional<TlsClient> tls_;  // after fd_: ends before the socket is closed
};

// The value of header `name` (lower case) in a response head, lower-cased,
// without the spaces around it; empty without one.
std::string header(std::string_view head, std::string_view name) {
  std::string lower(head);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const std::string key = fmt::format("\r\n{}:", name);
  const auto at = lower.find(key);
  if (at == std::string::npos) return "";
  std::string_view value = std::string_view(lower).substr(at + key.size());
  value = value.substr(0, value.find("\r\n"));
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
  return std::string(value);
}

// The Content-Length of a response head, or -1 without one.
long long content_length(std::string_view head) {
  const std::string value = header(head, "content-length");
  long long n = -1;
  std::from_chars(value.data(), value.data() + value.size(), n);
  return n;
}

// GETs of the file on one connection, each answered 200 with a
// Content-Length of the file's size and its bytes: two (so keep-alive
// works), or for a load with close one, answered with "Connection: close",
// after which the server closes the connection. Over TLS the handshake must
// have negotiated kTlsVersion, kTlsSuite and kTlsGroup, and no session
// ticket may have come.
void check_responses(const HttpLoad& load, std::uint16_t port, std::string_view impl) {
  const std::string_view what = load.name;
  ProbeConnection conn(port, load, impl);
  const std::string request =
      fmt::format("GET /{} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n{}\r\n", kStaticName, port,
                  load.close ? "Connection: close\r\n" : "");
  auto more = [&](std::string& in) {
    check(conn.receive(in), "{}: {} closed the connection mid-response", what, impl);
  };
  std::string in;
  for (int i = 0; i < (load.close ? 1 : 2); ++i) {
    conn.send(request);
    std::size_t end;
    while ((end = in.find("\r\n\r\n")) == std::string::npos) more(in);
    const std::string_view head = std::string_view(in).substr(0, end);
    const std::string_view status = head.substr(0, head.find("\r\n"));
    check(status.starts_with("HTTP/1.1 200 "), "{}: {} answered GET /{} with '{}'", what, impl,
          kStaticName, status);
    const long long length = content_length(head);
    check(length == static_cast<long long>(kStaticBytes),
          "{}: {} answered GET /{} with Content-Length {}, not {}", what, impl, kStaticName, length,
          kStaticBytes);
    check(!load.close || header(head, "connection") == "close",
          "{}: {} answered Connection: close without one (wrk would not reconnect)", what, impl);
    const std::size_t body = end + 4;
    while (in.size() < body + kStaticBytes) more(in);
    for (std::uint64_t b = 0; b < kStaticBytes / kBlock; ++b) {
      check(stamped(reinterpret_cast<const std::byte*>(in.data() + body + b * kBlock), b),
            "{}: {} sent block {} of /{} wrong", what, impl, b, kStaticName);
    }
    in.erase(0, body + kStaticBytes);
  }
  if (load.close) {
    check(in.empty() && !conn.receive(in),
          "{}: {} did not close the connection after answering Connection: close", what, impl);
  }
  if (const TlsClient* tls = conn.tls()) {
    const std::string want = fmt::format("{} {} {}", kTlsVersion, kTlsSuite, kTlsGroup);
    check(tls->negotiated() == want,
          "{}: {}'s TLS handshake negotiated {}, not {}: the server did not apply OPENSSL_CONF's "
          "system_default section",
          what, impl, tls->negotiated(), want);
    check(!tls->resumable(),
          "{}: {} sent a session ticket: NumTickets = 0 of OPENSSL_CONF was not applied", what,
          impl);
  }
}

// The environment the programs of `load` run with, beside what they inherit.
std::vector<std::string> load_env(const Params& p, const HttpLoad& load) {
  if (!load.tls) return {};
  return {"OPENSSL_CONF=" + p.openssl_conf.string()};
}

// wrk's counts, from the report script's line.
struct WrkReport {
  double requests = 0, bytes = 0, duration_us = 0;
  double connect = 0, read = 0, write = 0, timeout = 0, status = 0;  // errors
};

WrkReport run_wrk(const Params& p, const HttpLoad& load, std::uint16_t port) {
  const std::string wrk = find_on_path("wrk");
  check(!wrk.empty(), "{}: {}", load.name, load_missing(load));
  const std::uint64_t window_ms = p.sizes.http_window_ms;
  std::vector<std::string> args = {"-t1", fmt::format("-c{}", kConnections),
                                   fmt::format("-d{}s", (window_ms + 999) / 1000 + 1), "-s",
                                   report_script(p).string()};
  if (load.close) args.insert(args.end(), {"-H", "Connection: close"});
  args.push_back(
      fmt::format("{}://127.0.0.1:{}/{}", load.tls ? "https" : "http", port, kStaticName));
  Program client(wrk, args, {.merge_stderr = true, .env = load_env(p, load)});
  std::this_thread::sleep_for(std::chrono::milliseconds(window_ms));
  client.signal(SIGINT);
  const ProgramExit e = client.wait();
  check(e.ok(), "{}: wrk {}: {}", load.name, describe_status(e.status), e.out);
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
  check(got == 8, "{}: no counts from wrk's report script in its output: {}", load.name, e.out);
  return r;
}

}  // namespace

std::uint16_t free_loopback_port() {
  std::uint16_t port = 0;
  listen_loopback(port, 0);  // closed at once
  return port;
}

std::string load_missing(const HttpLoad& load) {
  if (find_on_path("wrk").empty()) {
    return "wrk is not installed (no wrk on PATH; scripts/bootstrap.sh installs it)";
  }
  if (load.tls && find_on_path("openssl").empty()) {
    return "openssl is not installed (no openssl on PATH to make the certificate; "
           "scripts/bootstrap.sh installs it)";
  }
  return "";
}

Row measure_http(const Params& p, const HttpLoad& load, std::string_view impl,
                 const StaticServer& s) {
  const std::string_view what = load.name;
  Program server(s.exe, s.args,
                 {.cpu = kServerCpu, .capture_stdout = false, .env = load_env(p, load)});
  pin_to_cpu(kClientCpu);
  wait_until_listening(server, what, impl, s);
  check_responses(load, s.port, impl);
  clockid_t clock{};
  if (const int err = ::clock_getcpuclockid(server.pid(), &clock); err != 0) {
    throw std::system_error(err, std::system_category(), "clock_getcpuclockid");
  }
  const double cpu_start = cpu_clock_seconds(clock);
  const WrkReport w = run_wrk(p, load, s.port);
  const double cpu = cpu_clock_seconds(clock) - cpu_start;
  check(server.running(), "{}: {} {} during the run{}", what, impl,
        describe_status(server.ended().status), log_tail(s.log));
  server.kill();

  check(w.connect + w.read + w.write + w.timeout + w.status == 0,
        "{}: wrk counted errors against {}: connect {}, read {}, write {}, timeout {}, "
        "status >= 400 {}",
        what, impl, w.connect, w.read, w.write, w.timeout, w.status);
  check(w.requests > 0 && w.duration_us > 0, "{}: wrk completed no request", what);
  // Every completed response brought the whole file; the bytes beyond them
  // are heads and the responses in flight when wrk stopped.
  const double per_response = static_cast<double>(kStaticBytes);
  check(w.bytes >= w.requests * per_response &&
            w.bytes <= (w.requests + kConnections) * (per_response + kMaxHead),
        "{}: {} bytes for {} responses from {} do not fit a {}-byte file in each", what, w.bytes,
        w.requests, impl, kStaticBytes);

  Params one = p;
  one.workers = 1;
  const auto requests = static_cast<std::uint64_t>(w.requests);
  Row r = make_row(std::string(what), std::string(impl), one, requests, {w.duration_us * 1e-6, cpu},
                   "req/s");
  r.set("connections", static_cast<double>(kConnections));
  r.set("server_cpu_s_per_req", cpu / w.requests);
  r.set("file_kib", static_cast<double>(kStaticBytes >> 10));
  return r;
}

std::shared_ptr<void> prepare_http_static(Params& p) {
  auto dir = std::make_shared<ScratchDir>();
  p.static_root = dir->path() / "root";
  std::filesystem::create_directory(p.static_root);
  make_stamped_file(p.static_root / kStaticName, {}, kStaticBytes, "http_static");
  write_text_file(report_script(p), kReportLua, "http_static");
  return dir;
}

std::shared_ptr<void> prepare_https(Params& p) {
  auto dir = prepare_http_static(p);
  const std::filesystem::path scratch = p.static_root.parent_path();
  p.openssl_conf = scratch / "openssl.cnf";
  p.tls_certificate = scratch / "cert.pem";
  p.tls_key = scratch / "key.pem";
  write_text_file(p.openssl_conf,
                  fmt::format(kOpensslConf, fmt::arg("version", kTlsVersion),
                              fmt::arg("suite", kTlsSuite), fmt::arg("group", kTlsGroup)),
                  "https");
  // Without openssl there is no certificate, and load_missing skips both sides.
  if (const std::string openssl = find_on_path("openssl"); !openssl.empty()) {
    run_capture(openssl,
                {"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                 "-nodes", "-days", "2", "-subj", "/CN=localhost", "-keyout", p.tls_key.string(),
                 "-out", p.tls_certificate.string()},
                {.merge_stderr = true});
  }
  return dir;
}

std::string spindle_http_missing(const HttpLoad& load) {
  if (std::string tools = load_missing(load); !tools.empty()) return tools;
  const std::string bin = spindle_http_path();
  if (bin.empty()) return "spindle-http is not built (SPINDLE_BUILD_APPS is OFF)";
  if (::access(bin.c_str(), X_OK) != 0) {
    return fmt::format("no spindle-http at {} (build the spindle-http target)", bin);
  }
  return "";
}

Row spindle_http(const Params& p, const HttpLoad& load) {
  const std::string missing = spindle_http_missing(load);
  check(missing.empty(), "{}: {}", load.name, missing);
  const std::uint16_t port = free_loopback_port();
  std::vector<std::string> args = {"--listen",  fmt::format("127.0.0.1:{}", port),
                                   "--workers", "1",
                                   "--root",    p.static_root.string()};
  if (load.tls) {
    args.insert(args.end(),
                {"--tls-cert", p.tls_certificate.string(), "--tls-key", p.tls_key.string()});
  }
  return measure_http(p, load, "spindle",
                      {.exe = spindle_http_path(), .args = args, .port = port, .log = {}});
}

}  // namespace spindle::perf

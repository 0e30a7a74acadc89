// spindle-http driven by real clients: curl (keep-alive, limits, garbage,
// /metrics) and short bounded wrk runs, plus raw sockets for pipelining and
// stops.
#include <sys/socket.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "exposition.hpp"
#include "many_connections.hpp"
#include "process.hpp"
#include "skip.hpp"
#include "temp_dir.hpp"

using spindle::test::Client;
using spindle::test::count_of;
using spindle::test::Ms;
using spindle::test::run_program;
using spindle::test::Server;
using spindle::test::Trickle;
using spindle::test::trickle;

namespace {

const std::string kHttp = SPINDLE_HTTP_BIN;
const std::string kGet = "GET / HTTP/1.1\r\nHost: t\r\n\r\n";

void need(const char* program) {
  if (!spindle::test::have_program(program)) SPINDLE_SKIP("%s is not installed", program);
}

// A file of `size` bytes for curl to send; removed with the object.
struct TempFile {
  std::string path;
  TempFile(const std::string& contents) {
    char name[] = "/tmp/spindle-http-test-XXXXXX";
    const int fd = ::mkstemp(name);
    REQUIRE(fd >= 0);
    ::close(fd);
    path = name;
    std::ofstream(path, std::ios::binary) << contents;
  }
  ~TempFile() { ::unlink(path.c_str()); }
};

// The status code of a POST to `path`.
std::string post_status(const Server& server, const std::string& path) {
  auto r = run_program({"curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10",
                        "-d", "x=1", server.url(path)},
                       Ms(20'000));
  return r.out;
}

// A 3-second wrk run of `connections` against `path`: every request answered 2xx.
void check_wrk(const Server& server, const std::string& path, const std::string& connections) {
  auto r = run_program({"wrk", "-t1", connections, "-d3s", server.url(path)}, Ms(60'000));
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("requests in"));
  CHECK(r.out.find("Socket errors") == std::string::npos);
  CHECK(r.out.find("Non-2xx") == std::string::npos);
}

// A --root tree: a 64 KiB file of every byte value, an index.html, a
// symlink inside the tree and one out of it, and a file beside the tree.
struct StaticTree {
  spindle::test::TempDir dir;
  std::filesystem::path root = dir.path() / "root";
  std::string big;
  StaticTree() {
    std::filesystem::create_directories(root / "sub");
    for (int i = 0; i < 64 * 1024; ++i) big += static_cast<char>((i * 7 + i / 256) & 0xff);
    std::ofstream(root / "big.bin", std::ios::binary) << big;
    std::ofstream(root / "index.html") << "<p>index</p>\n";
    std::ofstream(root / "sub" / "a b.txt") << "spaced\n";
    std::ofstream(dir.path() / "secret.txt") << "secret\n";
    std::filesystem::create_symlink("big.bin", root / "inner.bin");
    std::filesystem::create_symlink("../secret.txt", root / "escape.txt");
  }
  std::string file(const std::string& name) const { return (root / name).string(); }
};

// curl's status code and body for `path` (sent as is: no dot-segment removal).
std::pair<std::string, std::string> fetch(const Server& server, const std::string& path) {
  const spindle::test::TempDir out;
  const std::string body = (out.path() / "body").string();
  auto r = run_program({"curl", "-s", "--path-as-is", "--max-time", "10", "-o", body, "-w",
                        "%{http_code}", server.url(path)},
                       Ms(20'000));
  REQUIRE(r.code == 0);
  std::ifstream in(body, std::ios::binary);
  return {r.out, std::string(std::istreambuf_iterator<char>(in), {})};
}

// Reads HTTP/1.1 responses, one after another, from a connection: each the
// status line's code and the body its Content-Length announces.
class ResponseReader {
 public:
  explicit ResponseReader(int fd) : fd_(fd) {}

  // The next response's status code and body; {"", ""} if the stream ended first.
  std::pair<std::string, std::string> next() {
    std::size_t end;
    while ((end = pending_.find("\r\n\r\n")) == std::string::npos) {
      if (!fill()) return {};
    }
    const std::string head = pending_.substr(0, end);
    const std::string key = "Content-Length: ";
    const std::size_t at = head.find(key);
    if (head.size() < 12 || at == std::string::npos) return {};
    const std::size_t length = std::stoul(head.substr(at + key.size()));
    while (pending_.size() < end + 4 + length) {
      if (!fill()) return {};
    }
    std::pair<std::string, std::string> r{head.substr(9, 3), pending_.substr(end + 4, length)};
    pending_.erase(0, end + 4 + length);
    return r;
  }

 private:
  bool fill() {
    char buf[65536];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) return false;
    pending_.append(buf, static_cast<std::size_t>(n));
    return true;
  }

  int fd_;
  std::string pending_;
};

// GET `path` on a keep-alive connection.
std::string get(const std::string& path) { return "GET " + path + " HTTP/1.1\r\nHost: t\r\n\r\n"; }

}  // namespace

TEST_CASE("curl: --root serves files byte-identical, and no path leaves the root",
          "[integration][http]") {
  need("curl");
  StaticTree tree;
  Server server(kHttp, {"--root", tree.root.string()});
  CHECK(fetch(server, "/big.bin") == std::pair<std::string, std::string>{"200", tree.big});
  CHECK(fetch(server, "/inner.bin").second == tree.big);  // a symlink inside the root
  CHECK(fetch(server, "/").second == "<p>index</p>\n");
  CHECK(fetch(server, "/sub/a%20b.txt").second == "spaced\n");
  CHECK(fetch(server, "/missing").first == "404");
  CHECK(fetch(server, "/sub/").first == "404");  // a directory without index.html
  CHECK(fetch(server, "/../secret.txt").first == "404");
  CHECK(fetch(server, "/sub/../../secret.txt").first == "404");
  CHECK(fetch(server, "/%2e%2e/secret.txt").first == "404");
  const auto escape = fetch(server, "/escape.txt");
  CHECK(escape.first == "403");
  CHECK(escape.second.find("secret") == std::string::npos);
  CHECK(fetch(server, "/metrics").first == "200");  // still the runtime's metrics

  // HEAD: the GET's headers, no body; then a GET on the same connection.
  auto head = run_program(
      {"curl", "-sv", "--http1.1", "--max-time", "10", "-I", server.url("/big.bin")}, Ms(20'000));
  REQUIRE(head.code == 0);
  CHECK_THAT(head.out, Catch::Contains("Content-Length: 65536"));
  CHECK_THAT(head.out, Catch::Contains("Content-Type: application/octet-stream"));
  CHECK(post_status(server, "/big.bin") == "405");
  CHECK(server.stop() == 0);
}

TEST_CASE("one keep-alive connection gets many files in a row, also after a reader left mid-body",
          "[integration][http]") {
  StaticTree tree;
  // Larger than both sockets' buffers: a client that stops reading leaves
  // the server's send of it mid-body.
  std::string huge(24 << 20, '\0');
  for (std::size_t i = 0; i < huge.size(); ++i) huge[i] = static_cast<char>(i * 31 + i / 4093);
  std::ofstream(tree.root / "huge.bin", std::ios::binary) << huge;
  Server server(kHttp, {"--root", tree.root.string()});
  const std::vector<std::pair<std::string, std::pair<std::string, std::string>>> files = {
      {"/big.bin", {"200", tree.big}},
      {"/index.html", {"200", "<p>index</p>\n"}},
      {"/sub/a%20b.txt", {"200", "spaced\n"}},
      {"/inner.bin", {"200", tree.big}},
      {"/escape.txt", {"403", "Forbidden"}},
      {"/big.bin", {"200", tree.big}},
      {"/huge.bin", {"200", huge}},
      {"/", {"200", "<p>index</p>\n"}},
  };
  // On one connection: one request at a time, then all of them at once
  // (pipelined). Bodies are compared, not printed.
  const auto in_a_row = [&] {
    Client c(server.port());
    ResponseReader reader(c.fd());
    for (const auto& [path, want] : files) {
      INFO(path);
      REQUIRE(c.send_all(get(path)));
      const auto got = reader.next();
      CHECK(got.first == want.first);
      CHECK((want.first != "200" || got.second == want.second));
    }
    std::string batch;
    for (const auto& f : files) batch += get(f.first);
    REQUIRE(c.send_all(batch));
    for (const auto& [path, want] : files) {
      INFO("pipelined " << path);
      const auto got = reader.next();
      CHECK(got.first == want.first);
      CHECK((want.first != "200" || got.second == want.second));
    }
  };
  in_a_row();
  for (int i = 0; i < 3; ++i) {
    // A file sent, then a client that reads a little of the next and resets
    // the connection while the server's splice of it is under way.
    Client gone(server.port());
    ResponseReader reader(gone.fd());
    REQUIRE(gone.send_all(get("/big.bin")));
    CHECK((reader.next().second == tree.big));
    REQUIRE(gone.send_all(get("/huge.bin")));
    CHECK(gone.recv_n(100'000).size() == 100'000);
    const linger reset{1, 0};
    REQUIRE(::setsockopt(gone.fd(), SOL_SOCKET, SO_LINGER, &reset, sizeof reset) == 0);
  }
  in_a_row();
  CHECK(server.stop() == 0);
}

TEST_CASE("spindle-http refuses a --root that is not a directory", "[integration][http]") {
  StaticTree tree;
  auto r =
      run_program({kHttp, "--listen", "127.0.0.1:0", "--root", tree.file("big.bin")}, Ms(10'000));
  REQUIRE(r.code.has_value());
  CHECK(*r.code != 0);
  CHECK_THAT(r.err, Catch::Contains("--root") && Catch::Contains("not a directory"));
}

TEST_CASE("wrk over a 64 KiB static file completes with no errors", "[integration][http]") {
  need("wrk");
  StaticTree tree;
  Server server(kHttp, {"--root", tree.root.string()});
  check_wrk(server, "/big.bin", "-c32");
  CHECK(server.stop() == 0);
}

TEST_CASE("curl: GET / and keep-alive", "[integration][http]") {
  need("curl");
  Server server(kHttp);
  auto r = run_program({"curl", "-sv", "--http1.1", "--max-time", "10", server.url("/"),
                        server.url("/?q=1"), server.url("/missing")},
                       Ms(20'000));
  REQUIRE(r.code == 0);
  CHECK(r.out == "Hello, World!Hello, World!Not Found\n");
  CHECK(count_of(r.err, "< HTTP/1.1 200 OK") == 2);
  CHECK(count_of(r.err, "< HTTP/1.1 404 Not Found") == 1);
  CHECK(count_of(r.err, "Re-using existing connection") == 2);  // one connection for all three
  CHECK(count_of(r.err, "< Content-Length: 13") == 2);

  auto head = run_program({"curl", "-s", "-I", "--max-time", "10", server.url("/")}, Ms(20'000));
  REQUIRE(head.code == 0);
  CHECK_THAT(head.out, Catch::Contains("HTTP/1.1 200 OK"));
  CHECK(post_status(server, "/") == "405");
  CHECK(server.stop() == 0);
}

TEST_CASE("curl: a 2 MiB body is answered 413 and a huge header 431", "[integration][http]") {
  need("curl");
  Server server(kHttp);
  TempFile body(std::string(2 << 20, 'b'));
  auto big = run_program({"curl", "-s", "--http1.1", "-o", "/dev/null", "-w", "%{http_code}",
                          "--max-time", "20", "--data-binary", "@" + body.path, server.url("/")},
                         Ms(30'000));
  CHECK(big.code == 0);
  CHECK(big.out == "413");
  // Without Expect: 100-continue the body is already on its way.
  auto sent =
      run_program({"curl", "-s", "--http1.1", "-o", "/dev/null", "-w", "%{http_code}", "--max-time",
                   "20", "-H", "Expect:", "--data-binary", "@" + body.path, server.url("/")},
                  Ms(30'000));
  CHECK(sent.out == "413");
  TempFile small(std::string(1000, 's'));
  auto fine =
      run_program({"curl", "-s", "--http1.1", "-o", "/dev/null", "-w", "%{http_code}", "--max-time",
                   "20", "--data-binary", "@" + small.path, server.url("/nope")},
                  Ms(30'000));
  CHECK(fine.out == "404");  // a body within the limit is read and the request answered
  auto header =
      run_program({"curl", "-s", "--http1.1", "-o", "/dev/null", "-w", "%{http_code}", "--max-time",
                   "20", "-H", "X-Big: " + std::string(9000, 'h'), server.url("/")},
                  Ms(30'000));
  CHECK(header.out == "431");
  CHECK(server.stop() == 0);
}

TEST_CASE("curl: garbage is answered 400 and the connection closed", "[integration][http]") {
  need("curl");
  Server server(kHttp);
  TempFile garbage("this is not HTTP\r\n\r\n");
  // curl's telnet:// sends its stdin as is and prints what comes back until
  // the server closes.
  auto r = run_program(
      {"curl", "-s", "--max-time", "10", "telnet://127.0.0.1:" + std::to_string(server.port())},
      Ms(20'000), garbage.path);
  CHECK(r.code == 0);  // the server closed the connection (no curl timeout)
  CHECK_THAT(r.out, Catch::StartsWith("HTTP/1.1 400 Bad Request\r\n"));
  CHECK_THAT(r.out, Catch::Contains("Connection: close\r\n"));
  // Only that connection was closed: the server still answers.
  Client after(server.port());
  REQUIRE(after.send_all(kGet));
  CHECK(count_of(after.recv_until("Hello, World!", 1), "Hello, World!") == 1);
  CHECK(server.stop() == 0);
}

TEST_CASE("curl: pipelined HTTP/1.1 requests are answered in order", "[integration][http]") {
  need("curl");
  Server server(kHttp);
  // curl dropped HTTP pipelining (7.65); its telnet:// mode sends the whole
  // batch at once on one connection and prints every byte of the answers.
  std::string batch;
  std::vector<std::string> expected;
  for (int i = 0; i < 12; ++i) {
    const bool missing = i % 4 == 3;
    batch += std::string("GET ") + (missing ? "/missing" : "/") + " HTTP/1.1\r\nHost: t\r\n";
    if (i == 11) batch += "Connection: close\r\n";  // the server closes after the last
    batch += "\r\n";
    expected.push_back(missing ? "HTTP/1.1 404 Not Found" : "HTTP/1.1 200 OK");
  }
  TempFile requests(batch);
  auto r = run_program(
      {"curl", "-s", "--max-time", "10", "telnet://127.0.0.1:" + std::to_string(server.port())},
      Ms(20'000), requests.path);
  CHECK(r.code == 0);  // the server closed after the last answer (no curl timeout)
  std::vector<std::string> statuses;
  for (std::size_t p = r.out.find("HTTP/1.1 "); p != std::string::npos;
       p = r.out.find("HTTP/1.1 ", p + 1))
    statuses.push_back(r.out.substr(p, r.out.find("\r\n", p) - p));
  CHECK(statuses == expected);
  CHECK(count_of(r.out, "Hello, World!") == 9);
  CHECK(count_of(r.out, "Connection: close") == 1);
  CHECK(server.stop() == 0);
}

TEST_CASE("raw pipelined requests are all answered in order", "[integration][http]") {
  Server server(kHttp);
  Client c(server.port());
  std::string batch;
  for (int i = 0; i < 20; ++i) batch += i % 5 == 4 ? "GET /x HTTP/1.1\r\nHost: t\r\n\r\n" : kGet;
  REQUIRE(c.send_all(batch));
  const std::string got = c.recv_until("\r\n\r\n", 20);
  CHECK(count_of(got, "HTTP/1.1 200 OK") == 16);
  CHECK(count_of(got, "HTTP/1.1 404 Not Found") == 4);
  CHECK(got.find("HTTP/1.1 404") > got.find("HTTP/1.1 200"));
  // HTTP/1.0 without keep-alive: one answer, then the server closes.
  Client old(server.port());
  REQUIRE(old.send_all("GET / HTTP/1.0\r\n\r\n"));
  bool eof = false;
  const std::string one = old.recv_all(&eof);
  CHECK(eof);
  CHECK(count_of(one, "Hello, World!") == 1);
  CHECK_THAT(one, Catch::Contains("Connection: close"));
  CHECK(server.stop() == 0);
}

TEST_CASE("idle connections are closed after --idle-timeout", "[integration][http]") {
  Server server(kHttp, {"--idle-timeout", "0.2"});
  Client c(server.port());
  REQUIRE(c.send_all(kGet));
  CHECK(count_of(c.recv_until("Hello, World!", 1), "Hello, World!") == 1);
  const auto t0 = std::chrono::steady_clock::now();
  bool eof = false;
  CHECK(c.recv_all(&eof).empty());
  CHECK(eof);
  CHECK(std::chrono::steady_clock::now() - t0 >= Ms(150));
  CHECK(server.stop() == 0);
}

TEST_CASE("a request trickled past --request-timeout closes the connection unanswered",
          "[integration][http]") {
  Server server(kHttp, {"--request-timeout", "1"});
  Client c(server.port());
  REQUIRE(c.send_all("GET / HTTP/1.1\r\nHost: x\r\n"));
  // One header byte every 100 ms, each well inside the 60 s idle timeout.
  const Trickle t = trickle(c.fd(), 'X', 100);
  INFO(t.sent << " header bytes sent");
  CHECK(t.closed);
  CHECK(t.sent < 100);
  CHECK(t.took >= Ms(900));
  // A prompt client on another connection is served.
  Client ok(server.port());
  REQUIRE(ok.send_all(kGet));
  CHECK(count_of(ok.recv_until("Hello, World!", 1), "Hello, World!") == 1);
  CHECK(server.stop() == 0);
}

TEST_CASE("SIGTERM lets the responses in flight finish then exits 0", "[integration][http]") {
  Server server(kHttp);
  // Both connections are served before the signal (one still waiting in the
  // listen backlog would be reset when the listener closes).
  Client idle(server.port());
  Client busy(server.port());
  for (Client* c : {&idle, &busy}) {
    REQUIRE(c->send_all(kGet));
    REQUIRE(count_of(c->recv_until("Hello, World!", 1), "Hello, World!") == 1);
  }
  std::string batch;
  for (int i = 0; i < 200; ++i) batch += kGet;
  REQUIRE(busy.send_all(batch));
  server.process().signal(SIGTERM);
  bool eof = false;
  const std::string got = busy.recv_all(&eof);
  CHECK(eof);
  CHECK(count_of(got, "Hello, World!") == 200);
  CHECK(count_of(got, "Connection: close") <= 1);
  CHECK(idle.recv_all(&eof).empty());
  CHECK(eof);
  CHECK(server.process().wait(Ms(15'000)) == 0);
}

TEST_CASE("spindle-http exits non-zero with a clear message when the port is taken",
          "[integration][http]") {
  Server first(kHttp);
  const auto second =
      run_program({kHttp, "--listen", "127.0.0.1:" + std::to_string(first.port())}, Ms(10'000));
  REQUIRE(second.code.has_value());
  CHECK(*second.code != 0);
  CHECK_THAT(second.err, Catch::Contains("Address already in use"));
  CHECK(first.stop(SIGINT) == 0);
}

TEST_CASE("wrk -t1 -c64 -d3s completes with no socket errors", "[integration][http]") {
  need("wrk");
  Server server(kHttp);
  check_wrk(server, "/", "-c64");
  CHECK(server.stop() == 0);
}

TEST_CASE("curl: GET /metrics answers the Prometheus text exposition", "[integration][http]") {
  need("curl");
  Server server(kHttp);
  // Two requests on one connection: the second sees the first counted.
  auto r = run_program(
      {"curl", "-sv", "--http1.1", "--max-time", "10", server.url("/"), server.url("/metrics")},
      Ms(20'000));
  REQUIRE(r.code == 0);
  CHECK(count_of(r.err, "< Content-Type: text/plain; version=0.0.4") == 1);
  REQUIRE(r.out.starts_with("Hello, World!"));
  const std::string text = r.out.substr(13);
  INFO(text);
  CHECK_THAT(text, Catch::Contains("# TYPE runtime_tasks_spawned_total counter"));
  CHECK_THAT(text, Catch::Contains("# TYPE runtime_tasks_running gauge"));
  const auto samples = spindle::test::parse_exposition(text);
  CHECK(spindle::test::metric_value(samples, "runtime_inbound_connections_total") >= 1);
  CHECK(spindle::test::metric_value(samples, "runtime_inbound_bandwidth_total") > 0);
  CHECK(spindle::test::metric_value(samples, "runtime_outbound_bandwidth_total") >= 13);
  CHECK(spindle::test::metric_value(samples, "runtime_tasks_running", {{"kind", "root"}}) == 1);
  CHECK(spindle::test::metric_value(samples, "runtime_pending_operations") >= 1);  // accept
  CHECK(spindle::test::metric_value(samples, "runtime_global_queue_depth").has_value());
  auto post = run_program({"curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time",
                           "10", "-d", "x=1", server.url("/metrics")},
                          Ms(20'000));
  CHECK(post.out == "405");
  CHECK(server.stop() == 0);
}

TEST_CASE("curl scrapes /metrics while wrk -t1 -c16 -d2s loads the server", "[integration][http]") {
  need("curl");
  need("wrk");
  Server server(kHttp);
  spindle::test::Process wrk({"wrk", "-t1", "-c16", "-d2s", server.url("/")});
  double last_connections = 0;
  double last_bytes = 0;
  for (int i = 0; i < 5; ++i) {
    auto r = run_program({"curl", "-s", "--max-time", "10", server.url("/metrics")}, Ms(20'000));
    REQUIRE(r.code == 0);
    INFO(r.out);
    const auto samples = spindle::test::parse_exposition(r.out);
    const auto connections =
        spindle::test::metric_value(samples, "runtime_inbound_connections_total");
    const auto bytes = spindle::test::metric_value(samples, "runtime_outbound_bandwidth_total");
    REQUIRE(connections.has_value());
    REQUIRE(bytes.has_value());
    CHECK(*connections >= last_connections);  // counters never go back
    CHECK(*bytes >= last_bytes);
    last_connections = *connections;
    last_bytes = *bytes;
    ::usleep(300'000);
  }
  const auto code = wrk.wait(Ms(60'000));
  INFO(wrk.out() << wrk.err());
  REQUIRE(code == 0);
  CHECK(wrk.out().find("Socket errors") == std::string::npos);
  // wrk's 16 connections and every scrape's, all counted.
  auto r = run_program({"curl", "-s", "--max-time", "10", server.url("/metrics")}, Ms(20'000));
  REQUIRE(r.code == 0);
  CHECK(spindle::test::metric_value(r.out, "runtime_inbound_connections_total") >= 16 + 5);
  CHECK(server.stop() == 0);
}

TEST_CASE("spindle-http holds 15,000 concurrent connections, each answered as it opens and again",
          "[integration][http][scale]") {
  using spindle::test::kManyConnections;
  spindle::test::require_fds_for_connections(kManyConnections);
  Server server(kHttp);
  const auto r =
      spindle::test::open_many(server.port(), kManyConnections, [](Client& c, std::size_t) {
        if (!c.send_all(kGet)) return false;
        const std::string reply = c.recv_until("Hello, World!", 1);
        return reply.starts_with("HTTP/1.1 200 OK\r\n") && reply.ends_with("\r\n\r\nHello, World!");
      });
  spindle::test::check_many_connections(r, kManyConnections);
  // The stop ends 15,000 fibers: seconds under the sanitizers.
  const auto code = server.stop(SIGTERM, Ms(60'000));
  INFO(server.process().err());
  CHECK(code == 0);
  CHECK_THAT(server.process().err(), !Catch::Contains("refused"));
}

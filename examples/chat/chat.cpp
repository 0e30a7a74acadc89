// spindle-example-chat: a line-based TCP chat server. Each connection has a
// reader fiber (its own) and a writer fiber; a single broadcaster fiber owns
// the list of members and copies every line to the others' outboxes, bounded
// channels. The readers tell the broadcaster of joins, lines and leaves on
// three channels, which it waits on at once with `select`. A member whose
// outbox is full (it reads slower than the others talk) is disconnected, so
// one slow client never holds up the rest.
// SIGINT or SIGTERM ends the root fiber, which aborts every other fiber.
//
// Try it: spindle-example-chat --listen 127.0.0.1:7000, then `nc 127.0.0.1 7000`
// in two terminals.

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <exception>
#include <memory>
#include <optional>
#include <spindle/spindle.hpp>
#include <string>
#include <vector>

#include "listen.hpp"
#include "stop_signal.hpp"

namespace {

namespace net = spindle::net;
using namespace std::chrono_literals;

constexpr std::string_view kProgram = "spindle-example-chat";
constexpr std::size_t kOutboxLines = 64;

// One connected client. Shared by its reader, its writer and the broadcaster;
// the socket closes when the last of them lets go.
struct Member {
  net::TcpStream stream;
  std::string name;  // the peer's address
  spindle::Channel<std::string> outbox{kOutboxLines};

  // Ends both fibers of the member: the writer sees the closed outbox (or a
  // failed write), the reader end of stream.
  void disconnect() {
    outbox.close();
    (void)stream.shutdown(net::Shutdown::kBoth);
  }
};

struct Said {
  std::shared_ptr<Member> member;
  std::string line;
};

// What connection fibers tell the broadcaster. Each message holds its member:
// the connection may end before the broadcaster gets to it. The channels are
// unbuffered, so a member's join, lines and leave reach the broadcaster in
// the order they happened although they travel on different channels.
struct Hub {
  spindle::Channel<std::shared_ptr<Member>> joined{0};
  spindle::Channel<Said> said{0};
  spindle::Channel<std::shared_ptr<Member>> left{0};
};

// The broadcaster: the only fiber that touches `members`. Ends when the
// hub's channels are closed or the fiber is aborted.
void broadcast(Hub& hub) {
  std::vector<std::shared_ptr<Member>> members;
  // Queues `text` for every member but `from`, without waiting: a member
  // whose outbox is full is disconnected and dropped.
  auto deliver = [&members](const Member* from, const std::string& text) {
    std::erase_if(members, [&](const std::shared_ptr<Member>& m) {
      // try_send hands the text back (a non-empty optional) if it was not sent.
      if (m.get() == from || !m->outbox.try_send(text)) return false;
      if (!m->outbox.closed()) {  // full, rather than already leaving
        fmt::print("{}: disconnecting {}: too slow\n", kProgram, m->name);
        m->disconnect();
      }
      return true;
    });
  };
  spindle::RecvCase joined(hub.joined);
  spindle::RecvCase said(hub.said);
  spindle::RecvCase left(hub.left);
  for (;;) {
    const auto which = spindle::select(joined, said, left);
    if (!which) return;  // aborted
    if (*which == 0) {
      auto member = joined.result();
      if (!member) return;  // closed
      Member* m = member->get();
      (void)m->outbox.try_send(
          fmt::format("* welcome {}, {} online\n", m->name, members.size() + 1));
      deliver(m, fmt::format("* {} joined\n", m->name));
      members.push_back(std::move(*member));
    } else if (*which == 1) {
      auto line = said.result();
      if (!line) return;
      deliver(line->member.get(), fmt::format("{}: {}\n", line->member->name, line->line));
    } else {
      auto member = left.result();
      if (!member) return;
      std::erase_if(members, [&](const auto& m) { return m == *member; });
      deliver(member->get(), fmt::format("* {} left\n", (*member)->name));
    }
  }
}

// The next line from the stream's read buffer, without its "\n"; nullopt at
// end of stream, on an error, or for a line longer than the read buffer.
std::optional<std::string> read_line(net::TcpStream& stream) {
  for (;;) {
    const auto buffered = stream.peek();
    const auto* begin = reinterpret_cast<const char*>(buffered.data());
    const std::string_view text(begin, buffered.size());
    if (const auto nl = text.find('\n'); nl != std::string_view::npos) {
      std::string line(text.substr(0, nl));
      stream.consume(nl + 1);
      if (line.ends_with('\r')) line.pop_back();
      return line;
    }
    // A chat client may stay silent for as long as it likes.
    auto n = stream.fill(net::Timeout::never());
    if (!n || *n == 0) return std::nullopt;
  }
}

// A connection's life: joins, forwards its lines to the broadcaster, leaves.
void serve_member(std::shared_ptr<Member> member, Hub& hub) {
  auto writer = spindle::spawn([member] {
    while (auto text = member->outbox.recv()) {
      if (!member->stream.write_all(*text)) break;
    }
    member->disconnect();
  });
  if (hub.joined.send(member)) {
    while (auto line = read_line(member->stream)) {
      if (!hub.said.send(Said{member, std::move(*line)})) break;
    }
    (void)hub.left.send(member);
  }
  member->disconnect();
  (void)writer.join();
}

// The root fiber: listens, runs the broadcaster and the accept loop until
// SIGINT or SIGTERM. Returns the exit code.
int serve(const std::string& listen, spindle::apps::StopSignal& stop, Hub& hub) {
  auto listener = spindle::apps::listen_or_explain(kProgram, listen);
  if (!listener) return 1;
  fmt::print("{}: listening on {}\n", kProgram, listener->local_addr().value().to_string());

  spindle::spawn([&hub] { broadcast(hub); });
  auto acceptor = spindle::spawn([&] {
    for (;;) {
      auto stream = listener->accept();
      if (!stream) {
        if (stream.error() == spindle::errc::aborted) return;
        // Out of descriptors or memory: the listener stays usable, try again soon.
        fmt::print(stderr, "{}: accept: {}\n", kProgram, stream.error().message());
        if (!spindle::this_fiber::sleep_for(10ms)) return;
        continue;
      }
      auto member = std::make_shared<Member>();
      member->name = stream->peer_addr().value().to_string();
      member->stream = std::move(*stream);
      spindle::spawn([member, &hub] { serve_member(member, hub); });
    }
  });

  const auto signal = stop.wait();
  fmt::print("{}: {}, stopping\n", kProgram,
             signal ? (*signal == SIGINT ? "SIGINT" : "SIGTERM") : "aborted");
  // The listener dies with this frame: no accept may outlive it.
  acceptor.abort();
  (void)acceptor.join();
  // Returning aborts the broadcaster and every connection.
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"spindle-example-chat: a line-based TCP chat server"};
  std::string listen = "127.0.0.1:7000";
  std::size_t workers = 2;
  app.add_option("-l,--listen", listen, "address to listen on (host:port; port 0 picks one)")
      ->capture_default_str();
  app.add_option("-w,--workers", workers, "worker threads")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each log line shows at once, even in a pipe
  try {
    spindle::apps::StopSignal stop;  // before the runtime starts any thread
    // Outlives every fiber: run() returns only after all of them have ended.
    Hub hub;
    spindle::Runtime runtime(spindle::Config{.workers = workers});
    return runtime.run([&] { return serve(listen, stop, hub); });
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: {}\n", kProgram, e.what());
    return 1;
  }
}

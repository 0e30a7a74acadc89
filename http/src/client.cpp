// The client's request loop: redirects, the pool, and the one retry of a
// request whose pooled connection the server had closed.
//
// A connection idle in the pool may have been closed by the server at any
// moment since (its keep-alive timeout). Nothing tells without a system call
// per reuse, so the request is sent, and a reused connection that fails
// before a byte of the reply arrives is taken as one the server had closed:
// an idempotent request is sent again, once, on a new connection. A
// non-idempotent one is not (the server may have acted on it); its error is
// returned.

#include "spindle/http/client.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <utility>

#include "ascii.hpp"
#include "connection.hpp"
#include "pool.hpp"
#include "spindle/http/url.hpp"
#include "spindle/sched/context.hpp"
#include "spindle/sched/once_cell.hpp"
#include "spindle/sched/runtime.hpp"

namespace spindle::http {
namespace {

bool idempotent(std::string_view method) {
  static constexpr std::array<std::string_view, 6> kIdempotent = {"GET",    "HEAD",    "PUT",
                                                                  "DELETE", "OPTIONS", "TRACE"};
  return std::ranges::find(kIdempotent, method) != kIdempotent.end();
}

bool is_redirect(int status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

bool has_header(const std::vector<Header>& headers, std::string_view name) {
  return std::ranges::any_of(headers,
                             [&](const Header& h) { return detail::iequals(h.name, name); });
}

// No CR or LF where they would end the line early; a method is a token.
bool well_formed(std::string_view method, const std::vector<Header>& headers) {
  auto clean = [](std::string_view s) { return s.find_first_of("\r\n") == std::string_view::npos; };
  if (method.empty() || method.find_first_of(" \t\r\n") != std::string_view::npos) return false;
  return std::ranges::all_of(headers, [&](const Header& h) {
    return !h.name.empty() && h.name.find_first_of(" \t:\r\n") == std::string::npos &&
           clean(h.value);
  });
}

// The request line and headers.
std::string request_head(const Url& url, std::string_view method,
                         const std::vector<Header>& headers, std::string_view body,
                         const ClientOptions& options, bool close) {
  std::string head;
  head.reserve(256);
  head.append(method).append(" ").append(url.target).append(" HTTP/1.1\r\n");
  auto add = [&](std::string_view name, std::string_view value) {
    if (!has_header(headers, name)) head.append(name).append(": ").append(value).append("\r\n");
  };
  add("Host", url.authority());
  add("User-Agent", options.user_agent);
  if (!body.empty() || method == "POST" || method == "PUT" || method == "PATCH") {
    if (!has_header(headers, "Transfer-Encoding"))
      add("Content-Length", std::to_string(body.size()));
  }
  if (close) add("Connection", "close");
  for (const Header& h : headers) head.append(h.name).append(": ").append(h.value).append("\r\n");
  head.append("\r\n");
  return head;
}

// The TLS context for `url`: the options', or for https:// the default one
// (null for http://, which needs none).
Result<const tls::Context*> tls_context(const ClientOptions& options, const Url& url) {
  if (options.tls) return &*options.tls;
  if (!url.https) return nullptr;
  try {
    return &default_tls_context();
  } catch (const std::system_error& e) {  // the blocking pool's join: aborted
    return failure(e.code());
  } catch (const std::invalid_argument&) {
    return failure(errc::no_ca_store);
  }
}

// One request and its reply, on a pooled connection if `pool` has one.
Result<Response> exchange(detail::Pool* pool, const ClientOptions& options, const Url& url,
                          std::string_view method, const std::vector<Header>& headers,
                          std::string_view body, std::size_t body_limit, Deadline deadline) {
  const std::string head = request_head(url, method, headers, body, options, pool == nullptr);
  const std::string origin = url.origin();
  for (bool first = true;; first = false) {
    std::optional<detail::Connection> conn;
    if (pool && first) conn = pool->take(origin);
    const bool reused = conn.has_value();
    if (!conn) {
      auto tls = tls_context(options, url);
      if (!tls) return failure(tls.error());
      auto opened = detail::Connection::open(url, *tls, deadline);
      if (!opened) return failure(opened.error());
      if (pool) pool->count_opened();
      conn.emplace(std::move(*opened));
    }
    detail::ReplyState state;
    auto sent = conn->send(head, body, deadline);
    auto reply = sent ? conn->receive(method == "HEAD", body_limit, deadline, state)
                      : Result<Response>(failure(sent.error()));
    if (!reply) {
      const bool cut_short =
          reply.error() == spindle::errc::timed_out || reply.error() == spindle::errc::aborted;
      if (reused && !state.received && !cut_short && idempotent(method)) continue;
      return reply;
    }
    if (pool && state.reusable) pool->give(origin, std::move(*conn));
    return reply;
  }
}

// request() of a Client (with its pool) or of the free functions (without).
Result<Response> run(detail::Pool* pool, const ClientOptions& options, const Request& request,
                     const RequestOptions& request_options) {
  const Deadline deadline = request_options.timeout.deadline(current_config().read_write_timeout);
  auto url = parse_url(request.url);
  if (!url) return failure(url.error());
  if (!well_formed(request.method, request.headers))
    return failure(std::make_error_code(std::errc::invalid_argument));
  std::string method = request.method;
  std::vector<Header> headers = request.headers;
  std::string_view body = request.body;
  for (int redirects = 0;; ++redirects) {
    auto reply =
        exchange(pool, options, *url, method, headers, body, request_options.body_limit, deadline);
    if (!reply) return reply;
    reply->url = url->to_string();
    if (request_options.max_redirects == 0 || !is_redirect(reply->status)) return reply;
    const auto location = reply->header("Location");
    if (!location) return reply;
    if (redirects == request_options.max_redirects) return failure(errc::too_many_redirects);
    auto next = resolve_location(*url, *location);
    if (!next) return failure(next.error());
    if (reply->status == 303 ||
        ((reply->status == 301 || reply->status == 302) && method == "POST")) {
      method = "GET";
      body = {};
      std::erase_if(headers, [](const Header& h) {
        return detail::iequals(h.name, "Content-Length") || detail::iequals(h.name, "Content-Type");
      });
    }
    // Credentials stay with the origin they were meant for.
    if (next->origin() != url->origin()) {
      std::erase_if(headers, [](const Header& h) {
        return detail::iequals(h.name, "Authorization") || detail::iequals(h.name, "Cookie");
      });
    }
    url = std::move(next);
  }
}

}  // namespace

namespace detail {

std::optional<Connection> Pool::take(const std::string& origin) {
  std::lock_guard guard(lock_);
  const auto it = idle_.find(origin);
  if (it == idle_.end()) return std::nullopt;
  auto& conns = it->second;
  const Deadline stale = Clock::now() - options_.idle_timeout;
  std::erase_if(conns, [&](const Connection& c) { return c.idle_since < stale; });
  if (conns.empty()) {
    idle_.erase(it);
    return std::nullopt;
  }
  Connection c = std::move(conns.back());
  conns.pop_back();
  return c;
}

void Pool::give(const std::string& origin, Connection connection) {
  if (options_.max_idle_per_origin == 0) return;  // closed
  connection.idle_since = Clock::now();
  std::lock_guard guard(lock_);
  auto& conns = idle_[origin];
  if (conns.size() >= options_.max_idle_per_origin) conns.erase(conns.begin());  // the oldest
  conns.push_back(std::move(connection));
}

std::size_t Pool::idle() const {
  std::lock_guard guard(lock_);
  std::size_t n = 0;
  for (const auto& [origin, conns] : idle_) n += conns.size();
  return n;
}

}  // namespace detail

Client::Client(ClientOptions options) : pool_(std::make_unique<detail::Pool>(std::move(options))) {}

Client::~Client() = default;

Result<Response> Client::request(const Request& request, const RequestOptions& options) {
  return run(pool_.get(), pool_->options(), request, options);
}

Result<Response> Client::get(std::string_view url, const RequestOptions& options) {
  return request(Request{.url = std::string(url)}, options);
}

std::size_t Client::connections_opened() const noexcept { return pool_->opened(); }

std::size_t Client::idle_connections() const { return pool_->idle(); }

Result<Response> request(const Request& request, const RequestOptions& options) {
  static const ClientOptions kDefaults;
  return run(nullptr, kDefaults, request, options);
}

Result<Response> get(std::string_view url, const RequestOptions& options) {
  return request(Request{.url = std::string(url)}, options);
}

const tls::Context& default_tls_context() {
  static OnceCell<tls::Context> context;
  return context.get_or_init([] {
    // Reading the CA store blocks: on the blocking pool, not on a worker.
    auto made = spawn_blocking([]() -> std::expected<tls::Context, std::string> {
                  try {
                    return tls::Context::client();
                  } catch (const std::invalid_argument& e) {
                    return std::unexpected(e.what());
                  }
                }).join();
    if (!made) throw std::system_error(made.error());
    if (!*made) throw std::invalid_argument(made->error());
    return std::move(**made);
  });
}

}  // namespace spindle::http

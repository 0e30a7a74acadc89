#include "spindle/net/resolve.hpp"

#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <utility>

#include "spindle/sched/context.hpp"

namespace spindle::net {
namespace {

class ResolveCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "getaddrinfo"; }
  std::string message(int value) const override { return ::gai_strerror(value); }
};

// On a blocking-pool thread: getaddrinfo and the conversion. errno is read
// on the same thread that set it.
Result<std::vector<SocketAddress>> lookup(const std::string& host, std::uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &list);
  if (rc == EAI_SYSTEM) return errno_failure(errno);
  if (rc != 0) return failure(std::error_code(rc, resolve_category()));
  std::vector<SocketAddress> out;
  for (const addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
    auto a = SocketAddress::from_sockaddr(ai->ai_addr, ai->ai_addrlen);
    if (!a) continue;
    a->set_port(port);
    if (std::find(out.begin(), out.end(), *a) == out.end()) out.push_back(*a);
  }
  ::freeaddrinfo(list);
  if (out.empty()) return failure(std::error_code(EAI_NONAME, resolve_category()));
  return out;
}

}  // namespace

const std::error_category& resolve_category() noexcept {
  static const ResolveCategory category;
  return category;
}

Result<std::vector<SocketAddress>> resolve(std::string_view host, std::uint16_t port) {
  // A literal needs no lookup (and no trip to the pool).
  if (auto literal = SocketAddress::parse_ip(host, port)) return std::vector{*literal};
  std::string name(host);
  auto lookup_task = spawn_blocking([name = std::move(name), port] { return lookup(name, port); });
  auto joined = lookup_task.join();
  if (!joined) return failure(joined.error());
  return std::move(*joined);
}

}  // namespace spindle::net

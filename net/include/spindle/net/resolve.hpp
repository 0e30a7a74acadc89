// resolve(): host names to socket addresses with getaddrinfo, run on the
// runtime's blocking pool so no worker thread waits on DNS.
// Thread-safe: any number of fibers may resolve at once (each lookup is its
// own blocking-pool task). resolve_category() never suspends.
#pragma once

#include <cstdint>
#include <string_view>
#include <system_error>
#include <vector>

#include "spindle/base/result.hpp"
#include "spindle/net/address.hpp"

namespace spindle::net {

// The category of getaddrinfo's EAI_* codes (messages from gai_strerror).
// EAI_SYSTEM is reported as its errno in std::system_category instead.
const std::error_category& resolve_category() noexcept;

// The addresses of `host` (a name, or an IPv4/IPv6 literal, brackets
// allowed), each with `port`, in getaddrinfo's order, without duplicates.
// Fiber-only. Errors: resolve_category() codes (EAI_NONAME for an unknown
// host, ...), errc::aborted (the lookup itself cannot be interrupted and
// finishes on its pool thread).
// Suspends: until getaddrinfo returns on the blocking pool.
Result<std::vector<SocketAddress>> resolve(std::string_view host, std::uint16_t port = 0);

}  // namespace spindle::net

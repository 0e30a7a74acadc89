// The --listen option of the servers: parse, resolve, bind, and on failure
// say why in one line.
#pragma once

#include <optional>
#include <string_view>

#include "spindle/net/listener.hpp"

namespace spindle::apps {

// Binds a listener on `text` ("127.0.0.1:8080", "[::1]:0", "localhost:7000";
// a host name is resolved and its first address used). On failure prints
// "<program>: ..." on stderr (naming the address and the reason, e.g. that
// the port is taken) and returns nullopt. Fiber-only (resolve).
// Suspends: while a host name is resolved.
std::optional<net::TcpListener> listen_or_explain(std::string_view program, std::string_view text);

}  // namespace spindle::apps

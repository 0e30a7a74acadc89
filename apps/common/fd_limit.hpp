// The servers' descriptor budget: every connection holds one descriptor, so
// RLIMIT_NOFILE bounds how many a server can hold. As Go does at start-up, the
// servers raise the soft limit to the hard one (a common soft default is 1024,
// the hard one 20,000 to a million), and by default accept as many
// connections as the raised limit leaves room for.
#pragma once

#include <cstddef>
#include <string_view>

namespace spindle::apps {

// Raises the soft RLIMIT_NOFILE to the hard one where it is lower; returns the
// soft limit in effect afterwards. Call before starting the runtime.
std::size_t raise_fd_limit() noexcept;

// Connections `fd_limit` descriptors leave room for beside a runtime of
// `workers` workers: all but a reserve for the rings and eventfds (two per
// worker), the listener, the signalfd, stdio and the files a server keeps open.
std::size_t connections_within(std::size_t fd_limit, std::size_t workers) noexcept;

// The connection limit a server runs with: `requested`, or if it is 0 the
// connections the raised descriptor limit leaves room for. Says on stderr,
// prefixed with `program`, when `requested` is more than that room (accepts
// beyond it fail with EMFILE, which the accept loop reports and retries).
std::size_t connection_limit(std::string_view program, std::size_t requested,
                             std::size_t workers) noexcept;

}  // namespace spindle::apps

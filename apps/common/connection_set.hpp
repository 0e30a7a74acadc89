// ConnectionSet: a server's open connections, so that stopping can end their
// idle reads and wait for the work in flight.
#pragma once

#include <cstddef>
#include <unordered_set>

#include "spindle/sched/mutex.hpp"
#include "spindle/sched/wait_group.hpp"

namespace spindle::apps {

// Thread-safe (fibers and plain threads). Each connection fiber calls add(fd)
// first and remove(fd) before it closes fd, so stop() never touches a reused
// descriptor number.
class ConnectionSet {
 public:
  // False once stopping: the caller closes the connection without serving it.
  // Suspends: only briefly, on the internal lock.
  bool add(int fd);
  // Suspends: only briefly, on the internal lock.
  void remove(int fd);

  // Refuses new connections, then shuts down the read side of every open one
  // (shutdown(SHUT_RD)): a read sees the bytes the kernel already holds and
  // then end of stream, so an idle connection's fiber ends at once and a busy
  // one answers what it already received. Waits until every connection is
  // removed or `deadline` passes; returns how many are still open.
  // Suspends: until the connections are gone, the deadline, or an abort.
  std::size_t stop(Deadline deadline);

 private:
  Mutex lock_;
  std::unordered_set<int> fds_;  // guarded by lock_
  bool stopping_ = false;        // guarded by lock_
  WaitGroup open_;               // one count per member of fds_
};

}  // namespace spindle::apps

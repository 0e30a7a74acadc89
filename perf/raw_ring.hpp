// RawRing: one io_uring set up as spindle sets up its own (1024 entries, CQ
// twice that, SUBMIT_ALL, SINGLE_ISSUER|DEFER_TASKRUN with the COOP_TASKRUN
// fallback), for the raw liburing baselines (raw_uring.cpp, raw_echo.cpp): the
// difference they measure is the fiber and scheduler layer, not ring flags.
#pragma once

#include <liburing.h>

#include <cerrno>
#include <stdexcept>
#include <system_error>

namespace spindle::perf {

// Owned and used by the thread that made it. Not thread-safe.
class RawRing {
 public:
  static constexpr unsigned kEntries = 1024;

  RawRing() {
    io_uring_params params{};
    params.cq_entries = 2 * kEntries;
    constexpr unsigned kCommon = IORING_SETUP_SUBMIT_ALL | IORING_SETUP_CQSIZE;
    params.flags = kCommon | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    int ret = io_uring_queue_init_params(kEntries, &ring_, &params);
    if (ret == -EINVAL) {
      params = io_uring_params{};
      params.cq_entries = 2 * kEntries;
      params.flags = kCommon | IORING_SETUP_COOP_TASKRUN;
      ret = io_uring_queue_init_params(kEntries, &ring_, &params);
    }
    if (ret < 0) throw std::system_error(-ret, std::system_category(), "io_uring_queue_init");
  }
  RawRing(const RawRing&) = delete;
  RawRing& operator=(const RawRing&) = delete;
  ~RawRing() { io_uring_queue_exit(&ring_); }

  io_uring* get() noexcept { return &ring_; }

  // A free SQE; a full submission queue is submitted first to make room.
  io_uring_sqe* sqe() {
    io_uring_sqe* s = io_uring_get_sqe(&ring_);
    if (s == nullptr) {
      const int ret = io_uring_submit(&ring_);
      if (ret < 0) throw std::system_error(-ret, std::system_category(), "io_uring_submit");
      s = io_uring_get_sqe(&ring_);
    }
    if (s == nullptr) throw std::runtime_error("raw ring: submission queue full");
    return s;
  }

  void submit_and_wait(unsigned n) {
    int ret;
    do {
      ret = io_uring_submit_and_wait(&ring_, n);
    } while (ret == -EINTR);
    if (ret < 0) throw std::system_error(-ret, std::system_category(), "io_uring_submit_and_wait");
  }

 private:
  io_uring ring_{};
};

}  // namespace spindle::perf

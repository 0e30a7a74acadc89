// Session: one TLS connection's state (the SSL, its transport, the
// TcpStream, the plaintext buffer) and the loop that drives OpenSSL's calls
// with the TcpStream's (session.cpp says how).
#pragma once

#include <openssl/ssl.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <system_error>
#include <vector>

#include "spindle/base/result.hpp"
#include "spindle/base/time.hpp"
#include "spindle/net/stream.hpp"
#include "spindle/sched/mutex.hpp"
#include "spindle/tls/context.hpp"
#include "transport.hpp"

namespace spindle::tls::detail {

// The largest record's plaintext: the size of a stream's plaintext buffer.
inline constexpr std::size_t kRecordPlaintext = 16 * 1024;

// Heap-allocated, so that the BIO's pointer to its transport stays valid
// while the TlsStream moves. Thread-safe as TcpStream is: one fiber may read
// while another writes.
//
// Who touches what:
// - ssl, transport: under ssl_lock, held only around an OpenSSL call (never
//   across a park);
// - the TcpStream's write half, write_poisoned, the outbox: under
//   send_lock, which a sender holds across the TcpStream's write_all, so
//   what OpenSSL wrote leaves in the order it wrote it, whichever half's
//   call wrote it;
// - the TcpStream's read half and the plaintext buffer: the reading fiber.
// Lock order: send_lock before ssl_lock.
struct Session {
  enum class Outcome : unsigned char { kDone, kClosed };
  // Which half an OpenSSL call belongs to: a reading call may consume the
  // TcpStream's input and wait for more; a writing call sees no input (it
  // needs none) and is made with send_lock held.
  enum class Half : unsigned char { kRead, kWrite };

  Session(const Context& c, net::TcpStream&& stream);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // The handshake (SSL_do_handshake), as the reading fiber.
  // Suspends: until it completes or fails.
  Result<void> handshake(Deadline deadline);
  // SSL_read_ex into [out, out + len): its byte count, or 0 after close_notify.
  // Suspends: until a record arrives.
  Result<std::size_t> read_record(std::byte* out, std::size_t len, Deadline deadline);
  // Encrypts and sends `data` (straight to the kernel once it holds the
  // send keys). Suspends: until the records are with the kernel.
  Result<void> write(std::span<const std::byte> data, Deadline deadline);
  // Sends close_notify; the write half is closed after it.
  // Suspends: while it is sent.
  Result<void> close_notify(Deadline deadline);

  bool read_closed() const noexcept {
    return read_poisoned || broken.load(std::memory_order_relaxed);
  }
  void ensure_buffer() {
    if (buf) return;
    buf = std::make_unique_for_overwrite<std::byte[]>(kRecordPlaintext);
    pos = end = 0;
  }

  Context context;  // keeps the SSL_CTX's ALPN list alive for the handshake
  net::TcpStream tcp;
  Transport transport;  // before ssl, which refers to it: destroyed after it
  SSL* ssl;
  Mutex ssl_lock;
  Mutex send_lock;
  // A TLS error ended the session: both halves are closed. Written under
  // ssl_lock; relaxed: each half reads it again under the lock before use.
  std::atomic<bool> broken{false};
  // The send keys are in the kernel: write_all hands it plaintext. Written
  // under send_lock; relaxed: read without it only by kernel_offload().
  std::atomic<bool> kernel_send{false};
  bool write_poisoned = false;  // under send_lock
  // What is being sent (capacity kept between sends). Under send_lock.
  std::string out_cipher;
  std::vector<KernelItem> out_kernel;
  // The reading fiber's: bytes [pos, end) of buf are buffered plaintext.
  // Invariant: pos <= end <= kRecordPlaintext; all zero until the first fill.
  std::unique_ptr<std::byte[]> buf;
  std::size_t pos = 0;
  std::size_t end = 0;
  bool read_poisoned = false;
  bool read_eof = false;  // the peer's close_notify has arrived

 private:
  // Runs `op` (an OpenSSL call on `ssl` returning its int result) until it
  // completes (session.cpp). `eof`: the error for a TCP end of stream
  // without close_notify. Poisons what a failure breaks.
  template <class Op>
  Result<Outcome> drive(Half half, Op op, Deadline deadline, std::error_code eof);
  // Sends what OpenSSL wrote; send_lock held. Poisons the write half on failure.
  Result<void> send_locked(Deadline deadline);
  // send_locked() for a reading call, which takes send_lock by its deadline
  // (or poisons the read half). Suspends: for the lock, then as send_locked.
  Result<void> send_for_reader(Deadline deadline);
};

}  // namespace spindle::tls::detail

// Session: OpenSSL's session state machine driven by the TcpStream's
// blocking calls (transport.hpp says how the bytes move).
//
// Every OpenSSL call goes through Session::drive, one step at a time:
//   1. Show OpenSSL the TcpStream's buffered bytes (peek) and make the call.
//      It reads from that view and writes into memory, so it never waits.
//   2. Read the outcome and the thread's error queue at once: the fiber may
//      resume on another thread after any later step, and OpenSSL's queue is
//      per thread.
//   3. consume() what OpenSSL took; send what it wrote (a handshake flight,
//      an alert, a KeyUpdate) with the TcpStream's write_all, also after a
//      failure, so the peer learns why. Steps 1 to 3's OpenSSL part runs
//      under ssl_lock; the sending, under send_lock only (session.hpp).
//   4. If OpenSSL wants more input, fill() the TcpStream (the only wait for
//      input) and go to 1; a TCP end of stream is shown to OpenSSL as end of
//      file.
// So a handshake, a read and a write each wait only in TcpStream calls, with
// their deadline and abort rules, and the worker runs other fibers meanwhile.
// A reading fiber and a writing one may drive the same session at once: each
// OpenSSL call is made under ssl_lock, the writer's without input, and all
// output leaves under send_lock in the order OpenSSL wrote it.
//
// Rejected: OpenSSL's socket BIO on a non-blocking socket (OpenSSL would do
// the socket I/O, outside the runtime's backends: no io_uring, no deadline
// wheel); a pair of memory BIOs (two copies of each ciphertext byte, where
// the TcpStream's buffer already holds the input); one lock over the whole
// session, held across the waits (a reader parked for minutes on an idle
// connection would hold up every write).

#include "session.hpp"

#include <openssl/err.h>

#include <algorithm>
#include <mutex>

#include "context_state.hpp"
#include "kernel_offload.hpp"
#include "openssl_error.hpp"
#include "output_cache.hpp"
#include "spindle/tls/error.hpp"

namespace spindle::tls::detail {
namespace {

// A write_all hands OpenSSL at most this much before its records go out, so a
// large write holds a few records' worth of ciphertext at a time.
constexpr std::size_t kWriteChunk = 4 * kRecordPlaintext;
// Ciphertext buffer capacity kept between writes; a larger one (after a large
// write) goes to the thread's cache (output_cache.hpp), so an idle connection
// holds little.
constexpr std::size_t kKeptOutput = 4 * 1024;
// The ciphertext of kWriteChunk plaintext: its records' headers, tags and
// content types besides the bytes.
constexpr std::size_t kChunkCiphertext = kWriteChunk + 4 * 64;

}  // namespace

Session::Session(const Context& c, net::TcpStream&& stream)
    : context(c), tcp(std::move(stream)), ssl(SSL_new(c.state().ctx)) {
  if (ssl == nullptr) throw std::bad_alloc();
  BIO* bio = transport.share_bio();
  SSL_set_bio(ssl, bio, bio);
}

Session::~Session() { SSL_free(ssl); }

template <class Op>
Result<Session::Outcome> Session::drive(Half half, Op op, Deadline deadline, std::error_code eof) {
  for (;;) {
    int err;
    std::error_code failed;
    bool output;
    {
      std::lock_guard guard(ssl_lock);
      if (broken.load(std::memory_order_relaxed)) return failure(spindle::errc::closed);
      if (half == Half::kRead) transport.set_input(tcp.peek());
      ERR_clear_error();
      const int ret = op();
      err = SSL_get_error(ssl, ret);
      if (err == SSL_ERROR_SSL || err == SSL_ERROR_SYSCALL) {
        failed = take_error(ssl, eof);
      } else if (err != SSL_ERROR_NONE && err != SSL_ERROR_ZERO_RETURN &&
                 (err != SSL_ERROR_WANT_READ || half == Half::kWrite)) {
        // Our BIO never asks to retry a write, and a write needs no input.
        ERR_clear_error();
        failed = make_error_code(std::errc::protocol_error);
      }
      if (half == Half::kRead) {
        tcp.consume(transport.taken());
        transport.clear_input();
      }
      if (failed) broken.store(true, std::memory_order_relaxed);
      output = transport.has_output();
    }
    if (output) {
      auto sent = half == Half::kWrite ? send_locked(deadline) : send_for_reader(deadline);
      if (!sent && !failed) return failure(sent.error());
    }
    if (failed) return failure(failed);
    if (err == SSL_ERROR_NONE) return Outcome::kDone;
    if (err == SSL_ERROR_ZERO_RETURN) return Outcome::kClosed;
    auto n = tcp.fill(net::Timeout::at(deadline));
    if (!n) {
      read_poisoned = true;
      return failure(n.error());
    }
    if (*n == 0) {
      std::lock_guard guard(ssl_lock);
      transport.set_input_eof();
    }
  }
}

Result<void> Session::send_locked(Deadline deadline) {
  {
    std::lock_guard guard(ssl_lock);
    transport.take_output(out_cipher, out_kernel);
  }
  Result<void> sent;
  if (write_poisoned) {  // the bytes before these are lost: sending these would garble the stream
    sent = failure(spindle::errc::closed);
  } else if (!out_cipher.empty()) {
    sent = tcp.write_all(out_cipher, net::Timeout::at(deadline));
  }
  KernelOffloadOps& kernel = kernel_offload_ops();
  for (KernelItem& item : out_kernel) {
    if (item.kind == KernelItem::Kind::kKeys) {
      if (sent) {
        sent = kernel.install(tcp, item.bytes);
        if (sent) kernel_send.store(true, std::memory_order_relaxed);
      }
      OPENSSL_cleanse(item.bytes.data(), item.bytes.size());
    } else if (sent) {
      sent = kernel.send(tcp, item.type, item.bytes, deadline);
    }
  }
  out_kernel.clear();
  if (out_cipher.capacity() > kKeptOutput) {
    keep_output_buffer(std::move(out_cipher));
    out_cipher = std::string();
  } else {
    out_cipher.clear();
  }
  if (!sent) write_poisoned = true;
  return sent;
}

Result<void> Session::send_for_reader(Deadline deadline) {
  // A writer may hold the lock while its records wait for the peer: wait for
  // it only as long as this read may take.
  auto locked = send_lock.try_lock_until(deadline);
  if (!locked || !*locked) {
    // The output stays queued for the next sender; this read's plaintext, if
    // any, is lost with its call.
    read_poisoned = true;
    return failure(locked ? make_error_code(spindle::errc::timed_out) : locked.error());
  }
  std::lock_guard guard(send_lock, std::adopt_lock);
  return send_locked(deadline);
}

Result<void> Session::handshake(Deadline deadline) {
  auto done = drive(
      Half::kRead, [this] { return SSL_do_handshake(ssl); }, deadline,
      make_error_code(errc::closed_in_handshake));
  if (!done) return failure(done.error());
  if (*done == Outcome::kClosed) return failure(errc::closed_in_handshake);
  return {};
}

Result<std::size_t> Session::read_record(std::byte* out, std::size_t len, Deadline deadline) {
  std::size_t n = 0;
  auto r = drive(
      Half::kRead, [&] { return SSL_read_ex(ssl, out, len, &n); }, deadline,
      make_error_code(errc::truncated));
  if (!r) return failure(r.error());
  if (*r == Outcome::kClosed) {
    read_eof = true;
    return 0;
  }
  return n;
}

Result<void> Session::write(std::span<const std::byte> data, Deadline deadline) {
  std::lock_guard guard(send_lock);
  if (write_poisoned || broken.load(std::memory_order_relaxed))
    return failure(spindle::errc::closed);
  if (kernel_send.load(std::memory_order_relaxed)) {
    // The kernel frames and encrypts: the caller's bytes go straight out.
    auto sent = kernel_offload_ops().send(
        tcp, kApplicationData, {reinterpret_cast<const char*>(data.data()), data.size()}, deadline);
    if (!sent) write_poisoned = true;
    return sent;
  }
  while (!data.empty()) {
    const std::size_t n = std::min(data.size(), kWriteChunk);
    if (n > kKeptOutput) {
      std::lock_guard ssl_guard(ssl_lock);
      transport.lend_output(take_output_buffer(kChunkCiphertext));
    }
    std::size_t written = 0;
    auto r = drive(
        Half::kWrite, [&] { return SSL_write_ex(ssl, data.data(), n, &written); }, deadline,
        make_error_code(errc::truncated));
    if (!r) {
      write_poisoned = true;
      return failure(r.error());
    }
    data = data.subspan(written);
  }
  return {};
}

Result<void> Session::close_notify(Deadline deadline) {
  std::lock_guard guard(send_lock);
  if (write_poisoned) return {};
  {
    std::lock_guard ssl_guard(ssl_lock);
    // Writes close_notify into the transport (0 or 1: written; it reads nothing here).
    ERR_clear_error();
    const int r = SSL_shutdown(ssl);
    ERR_clear_error();
    if (r < 0) {
      write_poisoned = true;
      return {};
    }
  }
  auto sent = send_locked(deadline);
  write_poisoned = true;  // nothing may follow close_notify
  return sent;
}

}  // namespace spindle::tls::detail

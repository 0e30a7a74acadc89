// Transport: the only way OpenSSL's bytes come and go. A BIO of our own type
// reads ciphertext from a view of the TcpStream's read buffer and writes what
// OpenSSL sends into memory; the stream moves both with TcpStream's calls
// (after the OpenSSL call has returned), so OpenSSL never sees the socket and
// never waits.
//
// Kernel offload (send side): where the socket has the kernel's tls ULP, the
// BIO accepts the send keys OpenSSL offers when its write state changes to
// the application keys (BIO_CTRL_SET_KTLS, which OpenSSL's own socket BIO
// answers with setsockopt(TLS_TX) at once). From then on OpenSSL writes each
// record as plaintext, with its type. The BIO cannot install the keys then:
// records encrypted before the switch may still wait in `cipher`. It queues
// the keys behind them instead, and the stream installs them when the bytes
// before them are sent (Outbox order: cipher first, then `kernel` in order).
// The receive side always stays in user space: OpenSSL 3.0 offers no receive
// keys for TLS 1.3, and a kernel-decrypted socket delivers alerts and
// post-handshake messages only as control messages of recvmsg, which the
// runtime's I/O calls do not carry.
#pragma once

#include <openssl/bio.h>

#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace spindle::tls::detail {

// The TLS record type of application data.
inline constexpr unsigned char kApplicationData = 23;

// One step for the kernel, in order.
struct KernelItem {
  enum class Kind : unsigned char {
    kKeys,    // install `bytes` (a struct tls12_crypto_info_*) as the send keys
    kRecord,  // send `bytes` as one record of `type`
  };
  Kind kind;
  unsigned char type;
  std::string bytes;
};

// Not thread-safe: the stream's OpenSSL lock guards it (Session::ssl_lock).
class Transport {
 public:
  Transport();
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  // A new reference to the BIO, for SSL_set_bio (both directions). Its data
  // is this object, which must outlive the SSL.
  BIO* share_bio() const noexcept {
    BIO_up_ref(bio_);
    return bio_;
  }

  // Before an OpenSSL call: the ciphertext it may read. After it: how much
  // it took, then clear_input().
  void set_input(std::span<const std::byte> input) noexcept {
    input_ = input;
    taken_ = 0;
  }
  std::size_t taken() const noexcept { return taken_; }
  void clear_input() noexcept { input_ = {}; }
  // The TCP stream ended: OpenSSL's next read past the input sees end of file.
  void set_input_eof() noexcept { input_eof_ = true; }

  // What OpenSSL wrote: user-space records, then (kernel offload) the steps
  // for the kernel.
  bool has_output() const noexcept { return !cipher_.empty() || !kernel_.empty(); }
  // Moves what OpenSSL wrote into `cipher` and `kernel` (both empty), leaving
  // their capacity here for OpenSSL's next writes.
  void take_output(std::string& cipher, std::vector<KernelItem>& kernel) noexcept {
    cipher_.swap(cipher);
    kernel_.swap(kernel);
  }
  // Before an OpenSSL write of many records: its ciphertext goes into
  // `buffer` if that holds more than the empty output buffer now does (the
  // one it replaces is freed).
  void lend_output(std::string&& buffer) noexcept {
    if (cipher_.empty() && buffer.capacity() > cipher_.capacity()) cipher_.swap(buffer);
  }

  // Accept the send keys when OpenSSL offers them: the socket has the tls ULP.
  void allow_kernel_send() noexcept { kernel_allowed_ = true; }
  // OpenSSL writes plaintext records now (its keys went to `kernel`).
  bool kernel_send() const noexcept { return kernel_send_; }

 private:
  // Our BIO type, made once per process (thread-safe).
  static BIO_METHOD* method();
  static int read(BIO* b, char* out, int len);
  static int write(BIO* b, const char* in, int len);
  static long control(BIO* b, int cmd, long larg, void* parg);
  // BIO_CTRL_SET_KTLS: the keys in `crypto_info` (what OpenSSL filled: the
  // kernel's struct for the cipher, then fields of its own), for sending
  // when `send`. True if queued.
  bool offer_keys(long send, const void* crypto_info);

  BIO* bio_;  // our reference
  // Input: the unread part of the view, and how much of it this call took.
  std::span<const std::byte> input_;
  std::size_t taken_ = 0;
  bool input_eof_ = false;
  // Output. Invariant: once kernel_send_, cipher_ only shrinks (OpenSSL
  // writes plaintext records, which go to kernel_).
  std::string cipher_;
  std::vector<KernelItem> kernel_;
  bool kernel_allowed_ = false;
  bool kernel_send_ = false;
  // The type of the next record OpenSSL writes in kernel mode (its
  // BIO_CTRL_SET_KTLS_TX_SEND_CTRL_MSG), 0 for application data.
  unsigned char next_type_ = 0;
};

}  // namespace spindle::tls::detail

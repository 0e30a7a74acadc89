// EmulatedKernel: a stand-in for a kernel with the tls ULP, for machines
// without one. It takes the send keys TlsStream installs (the crypto info
// OpenSSL handed over) and frames and encrypts each record the way the
// kernel's TLS_TX does (AES-GCM and ChaCha20-Poly1305, TLS 1.2 and 1.3), so
// a user-space peer reading them checks that the keys, IVs and record
// numbers were handed over right and that records went out in order.
#pragma once

#include <linux/tls.h>
#include <openssl/evp.h>

#include <array>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "kernel_offload.hpp"
#include "runtime_harness.hpp"

namespace spindle::test {

class EmulatedKernel final : public tls::detail::KernelOffloadOps {
 public:
  // Makes this the ops in use for its lifetime: make it before the runtime.
  EmulatedKernel() { tls::detail::set_kernel_offload_ops(this); }
  ~EmulatedKernel() override { tls::detail::set_kernel_offload_ops(nullptr); }

  std::size_t keys_installed() const { return installed_.load(); }
  std::size_t records_sent() const { return records_.load(); }
  std::size_t control_records() const { return control_.load(); }

  bool available() const noexcept override { return true; }
  bool attach(int) noexcept override { return true; }

  Result<void> install(net::TcpStream& tcp, std::span<const char> info) override {
    tls_crypto_info header;
    std::memcpy(&header, info.data(), sizeof header);
    Keys k;
    k.tls13 = header.version == TLS_1_3_VERSION;
    switch (header.cipher_type) {
      case TLS_CIPHER_AES_GCM_128:
        k = from<tls12_crypto_info_aes_gcm_128>(info, k, EVP_aes_128_gcm());
        break;
      case TLS_CIPHER_AES_GCM_256:
        k = from<tls12_crypto_info_aes_gcm_256>(info, k, EVP_aes_256_gcm());
        break;
      case TLS_CIPHER_CHACHA20_POLY1305:
        k = from<tls12_crypto_info_chacha20_poly1305>(info, k, EVP_chacha20_poly1305());
        k.chacha = true;
        break;
      default:
        return failure(tls::errc::kernel_offload_refused);
    }
    std::lock_guard guard(lock_);
    keys_[tcp.native_handle()] = k;
    ++installed_;
    return {};
  }

  Result<void> send(net::TcpStream& tcp, unsigned char type, std::string_view bytes,
                    Deadline deadline) override {
    std::string wire;
    {
      std::lock_guard guard(lock_);
      Keys& k = keys_.at(tcp.native_handle());
      for (std::size_t off = 0; off < bytes.size() || off == 0; off += kMaxRecord) {
        seal(k, type, bytes.substr(off, kMaxRecord), wire);
        ++records_;
        if (type != 23) ++control_;
        if (bytes.size() <= off + kMaxRecord) break;
      }
    }
    return tcp.write_all(wire, net::Timeout::at(deadline));
  }

 private:
  static constexpr std::size_t kMaxRecord = 16 * 1024;

  struct Keys {
    bool tls13 = false;
    bool chacha = false;
    const EVP_CIPHER* cipher = nullptr;
    std::vector<unsigned char> key;
    std::array<unsigned char, 12> iv{};  // the static IV (salt, then the IV field)
    std::uint64_t seq = 0;
  };

  template <class Info>
  static Keys from(std::span<const char> bytes, Keys k, const EVP_CIPHER* cipher) {
    Info info;
    std::memcpy(&info, bytes.data(), sizeof info);
    k.cipher = cipher;
    k.key.assign(info.key, info.key + sizeof info.key);
    std::memcpy(k.iv.data(), info.salt, sizeof info.salt);
    std::memcpy(k.iv.data() + sizeof info.salt, info.iv, sizeof info.iv);
    for (unsigned char b : info.rec_seq) k.seq = k.seq << 8 | b;
    return k;
  }

  static void put_be(unsigned char* out, std::uint64_t v, int n) {
    for (int i = n - 1; i >= 0; --i, v >>= 8) out[i] = static_cast<unsigned char>(v);
  }

  // One record of `type` holding `plain`, appended to `wire`, as TLS_TX frames it.
  static void seal(Keys& k, unsigned char type, std::string_view plain, std::string& wire) {
    std::string inner(plain);
    if (k.tls13) inner += static_cast<char>(type);  // TLS 1.3: the type inside
    // TLS 1.2 AES-GCM: an 8-byte explicit nonce on the wire (the IV field,
    // counted up per record); otherwise the record number XORed into the IV.
    const bool explicit_nonce = !k.tls13 && !k.chacha;
    std::array<unsigned char, 12> nonce = k.iv;
    std::array<unsigned char, 8> seq_be;
    put_be(seq_be.data(), k.seq, 8);
    if (!explicit_nonce) {
      for (int i = 0; i < 8; ++i) nonce[4 + i] ^= seq_be[i];
    }
    const std::size_t body = (explicit_nonce ? 8 : 0) + inner.size() + 16;
    unsigned char header[5] = {k.tls13 ? static_cast<unsigned char>(23) : type, 3, 3, 0, 0};
    put_be(header + 3, body, 2);
    std::vector<unsigned char> aad;
    if (k.tls13) {
      aad.assign(header, header + 5);
    } else {
      aad.assign(seq_be.begin(), seq_be.end());
      aad.insert(aad.end(), {type, 3, 3, 0, 0});
      put_be(aad.data() + 11, inner.size(), 2);
    }
    std::vector<unsigned char> out(inner.size() + 16);
    EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
    int len = 0;
    EVP_EncryptInit_ex(ctx, k.cipher, nullptr, nullptr, nullptr);
    EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_IVLEN, 12, nullptr);
    EVP_EncryptInit_ex(ctx, nullptr, nullptr, k.key.data(), nonce.data());
    EVP_EncryptUpdate(ctx, nullptr, &len, aad.data(), static_cast<int>(aad.size()));
    EVP_EncryptUpdate(ctx, out.data(), &len, reinterpret_cast<const unsigned char*>(inner.data()),
                      static_cast<int>(inner.size()));
    EVP_EncryptFinal_ex(ctx, out.data() + len, &len);
    EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, 16, out.data() + inner.size());
    EVP_CIPHER_CTX_free(ctx);
    wire.append(reinterpret_cast<const char*>(header), 5);
    if (explicit_nonce) {
      wire.append(reinterpret_cast<const char*>(nonce.data() + 4), 8);
      // The kernel counts the explicit nonce up per record.
      std::uint64_t n = 0;
      for (int i = 4; i < 12; ++i) n = n << 8 | k.iv[i];
      put_be(k.iv.data() + 4, n + 1, 8);
    }
    wire.append(reinterpret_cast<const char*>(out.data()), out.size());
    ++k.seq;
  }

  std::mutex lock_;  // held for a few microseconds, never across a park
  std::map<int, Keys> keys_;
  std::atomic<std::size_t> installed_{0};
  std::atomic<std::size_t> records_{0};
  std::atomic<std::size_t> control_{0};
};

}  // namespace spindle::test

#include "transport.hpp"

#include <linux/tls.h>

#include <algorithm>
#include <cstring>
#include <new>

namespace spindle::tls::detail {
namespace {

// OpenSSL's internal BIO controls for kernel TLS (its include/internal/bio.h;
// the numbers its public bio.h reserves for them).
constexpr int kSetKtls = 72;
constexpr int kSetKtlsSendCtrlMsg = 74;
constexpr int kClearKtlsCtrlMsg = 75;

// The kernel's size of the crypto info for `cipher_type`, 0 if it is none
// the kernel takes from OpenSSL.
std::size_t crypto_info_size(unsigned cipher_type) noexcept {
  switch (cipher_type) {
    case TLS_CIPHER_AES_GCM_128:
      return sizeof(tls12_crypto_info_aes_gcm_128);
    case TLS_CIPHER_AES_GCM_256:
      return sizeof(tls12_crypto_info_aes_gcm_256);
    case TLS_CIPHER_AES_CCM_128:
      return sizeof(tls12_crypto_info_aes_ccm_128);
    case TLS_CIPHER_CHACHA20_POLY1305:
      return sizeof(tls12_crypto_info_chacha20_poly1305);
    default:
      return 0;
  }
}

}  // namespace

BIO_METHOD* Transport::method() {
  static BIO_METHOD* const method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "spindle transport");
    if (m == nullptr || BIO_meth_set_read(m, &Transport::read) != 1 ||
        BIO_meth_set_write(m, &Transport::write) != 1 ||
        BIO_meth_set_ctrl(m, &Transport::control) != 1)
      throw std::bad_alloc();
    return m;
  }();
  return method;
}

Transport::Transport() : bio_(BIO_new(method())) {
  if (bio_ == nullptr) throw std::bad_alloc();
  BIO_set_data(bio_, this);
  BIO_set_init(bio_, 1);
}

Transport::~Transport() { BIO_free(bio_); }

int Transport::read(BIO* b, char* out, int len) {
  auto* t = static_cast<Transport*>(BIO_get_data(b));
  BIO_clear_retry_flags(b);
  if (t->input_.empty()) {
    if (t->input_eof_) return 0;
    BIO_set_retry_read(b);
    return -1;
  }
  const std::size_t n = std::min(static_cast<std::size_t>(len), t->input_.size());
  std::memcpy(out, t->input_.data(), n);
  t->input_ = t->input_.subspan(n);
  t->taken_ += n;
  return static_cast<int>(n);
}

int Transport::write(BIO* b, const char* in, int len) {
  auto* t = static_cast<Transport*>(BIO_get_data(b));
  BIO_clear_retry_flags(b);
  if (!t->kernel_send_) {
    t->cipher_.append(in, static_cast<std::size_t>(len));
  } else {
    // One plaintext record; a control message's type holds for one write,
    // as with OpenSSL's socket BIO.
    const unsigned char type = t->next_type_ != 0 ? t->next_type_ : kApplicationData;
    t->next_type_ = 0;
    t->kernel_.push_back(
        {KernelItem::Kind::kRecord, type, std::string(in, static_cast<std::size_t>(len))});
  }
  return len;
}

long Transport::control(BIO* b, int cmd, long larg, void* parg) {
  auto* t = static_cast<Transport*>(BIO_get_data(b));
  switch (cmd) {
    case BIO_CTRL_FLUSH:  // the stream sends everything after the call
    case BIO_CTRL_DUP:
      return 1;
    case BIO_CTRL_PENDING:
      return static_cast<long>(t->input_.size());
    case BIO_CTRL_WPENDING:
      return static_cast<long>(t->cipher_.size());
    case BIO_CTRL_EOF:
      return t->input_eof_ && t->input_.empty() ? 1 : 0;
    case kSetKtls:
      return t->offer_keys(larg, parg) ? 1 : 0;
    case BIO_CTRL_GET_KTLS_SEND:
      return t->kernel_send_ ? 1 : 0;
    case BIO_CTRL_GET_KTLS_RECV:
      return 0;
    case kSetKtlsSendCtrlMsg:
      t->next_type_ = static_cast<unsigned char>(larg);
      return 1;
    case kClearKtlsCtrlMsg:
      t->next_type_ = 0;
      return 1;
    default:
      return 0;
  }
}

bool Transport::offer_keys(long send, const void* crypto_info) {
  if (send == 0 || !kernel_allowed_ || crypto_info == nullptr) return false;
  tls_crypto_info info;
  std::memcpy(&info, crypto_info, sizeof info);
  if (info.version != TLS_1_2_VERSION && info.version != TLS_1_3_VERSION) return false;
  const std::size_t size = crypto_info_size(info.cipher_type);
  if (size == 0) return false;
  kernel_.push_back(
      {KernelItem::Kind::kKeys, 0, std::string(static_cast<const char*>(crypto_info), size)});
  kernel_send_ = true;
  return true;
}

}  // namespace spindle::tls::detail

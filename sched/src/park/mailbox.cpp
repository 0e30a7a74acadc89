#include "park/mailbox.hpp"

#include "spindle/base/assert.hpp"

namespace spindle::detail {

void Mailbox::send(const MailMessage& m) noexcept {
  lock_.lock();
  const bool was_empty = inbox_.empty();
  inbox_.push_back(m);
  nonempty_.store(true, std::memory_order_release);
  lock_.unlock();
  if (was_empty) parker_.unpark();
}

void Mailbox::take(std::vector<MailMessage>& out) noexcept {
  SPINDLE_DCHECK(out.empty());
  if (empty()) return;
  lock_.lock();
  inbox_.swap(out);
  nonempty_.store(false, std::memory_order_release);
  lock_.unlock();
}

}  // namespace spindle::detail

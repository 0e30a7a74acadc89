#include "spindle/sched/join_set.hpp"

#include "spindle/base/lock_guard.hpp"

namespace spindle::detail {

void JoinSetMember::task_completed() noexcept { set->push_ready(this); }

void JoinSetCore::push_ready(JoinSetMember* m) noexcept {
  LockGuard guard(lock_);
  ready_.push_back(m);
  waiter_.notify_one();
}

JoinSetMember* JoinSetCore::add() {
  auto* m = new JoinSetMember(*this);
  members_.push_back(m);
  ++size_;
  all_aborted_ = false;
  cut_short_ = false;
  return m;
}

void JoinSetCore::cancel(JoinSetMember* m) noexcept {
  members_.remove(m);
  --size_;
  delete m;
}

void JoinSetCore::attach(JoinSetMember* m, Task* task, void* cell) noexcept {
  // Read by the owner only, once it took m: a completion before these
  // stores (a refused launch) only queued m.
  m->task = task;
  m->cell = cell;
  task->release_handle();
}

void JoinSetCore::unlink(JoinSetMember* m) noexcept {
  members_.remove(m);
  --size_;
}

JoinSetMember* JoinSetCore::try_take() noexcept {
  lock_.lock();
  JoinSetMember* m = ready_.pop_front();
  lock_.unlock();
  if (m) unlink(m);
  return m;
}

JoinSetMember* JoinSetCore::take() noexcept {
  for (;;) {
    const bool aborted = current_aborted() || cut_short_;
    if (aborted && !all_aborted_) abort_all();
    lock_.lock();
    if (JoinSetMember* m = ready_.pop_front()) {
      lock_.unlock();
      unlink(m);
      return m;
    }
    if (size_ == 0) {
      lock_.unlock();
      return nullptr;
    }
    // A notify hands over a ready member; an abort of the caller, or its
    // deadline scope (only while neither happened yet), goes round to abort
    // the set.
    WaitNode node;
    if (wait_in(waiter_, node, lock_, kNoDeadline,
                aborted ? ParkKind::kUninterruptible : ParkKind::kInterruptible,
                "join_set") == WakeReason::kScopeExpired) {
      cut_short_ = true;
    }
  }
}

void JoinSetCore::release(JoinSetMember* m) noexcept {
  m->task->unref();
  delete m;
}

void JoinSetCore::abort_all() noexcept {
  for (JoinSetMember* m = members_.front(); m; m = decltype(members_)::next(m)) {
    m->task->abort_tree();
  }
  all_aborted_ = true;
}

}  // namespace spindle::detail

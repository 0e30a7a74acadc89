#include "spindle/sched/task_group.hpp"

#include "spindle/base/lock_guard.hpp"

namespace spindle {
namespace detail {

GroupNode* GroupNode::open(Node& parent) {
  auto* node = new GroupNode();
  if (!parent.adopt(node)) node->abort_tree();
  return node;
}

void GroupNode::close() noexcept {
  detach();
  unref();
}

}  // namespace detail

TaskGroup::TaskGroup() : TaskGroup(detail::current_spawner()) {}

TaskGroup::TaskGroup(detail::Fiber& owner)
    : node_(detail::GroupNode::open(owner)),
      set_(Context(owner.scheduler(), *node_, owner.identity)) {}

TaskGroup::~TaskGroup() {
  node_->abort_tree();
  drain();
  node_->close();
}

void TaskGroup::drain() {
  while (set_.join_next()) {
  }
}

Result<void> TaskGroup::wait() {
  drain();
  if (detail::current_aborted()) return failure(errc::aborted);
  LockGuard guard(lock_);
  if (first_) return failure(first_);
  if (set_.cut_short()) return failure(errc::timed_out);
  return {};
}

void TaskGroup::wait_or_throw() {
  auto r = wait();
  if (r) return;
  if (std::exception_ptr e = exception(); e && r.error() == errc::exited) std::rethrow_exception(e);
  throw std::system_error(r.error());
}

std::exception_ptr TaskGroup::exception() const noexcept {
  LockGuard guard(lock_);
  return exception_;
}

void TaskGroup::fail(std::error_code ec, std::exception_ptr error) noexcept {
  // A fiber the group has aborted (after a failure, the owner's abort or its
  // deadline scope) fails because of that: not the group's answer.
  if (detail::current_aborted()) return;
  {
    LockGuard guard(lock_);
    if (first_) return;
    first_ = ec;
    exception_ = std::move(error);
  }
  node_->abort_tree();
}

}  // namespace spindle

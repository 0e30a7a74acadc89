#include "spindle/sched/detail/node.hpp"

#include "spindle/base/assert.hpp"

namespace spindle::detail {

Node::~Node() { SPINDLE_DCHECK(!ChildList::linked(this) && child_list_.empty() && children_ == 0); }

bool Node::adopt(Node* child) noexcept {
  SPINDLE_DCHECK(child->parent_ == nullptr);
  lock_.lock();
  // aborted_ is only set under lock_, so a child linked here is either seen by
  // the abort's walk or refused.
  if (aborted_.load(std::memory_order_relaxed)) {
    lock_.unlock();
    return false;
  }
  if (children_++ == 0) ref();  // the children's one reference on this node
  child->parent_ = this;
  child_list_.push_front(child);
  lock_.unlock();
  return true;
}

void Node::detach() noexcept {
  Node* self = this;
  detach_all(&self, 1);
}

void Node::detach_all(Node* const* nodes, std::size_t n) noexcept {
  std::size_t i = 0;
  while (i < n) {
    Node* const parent = nodes[i]->parent_;
    if (!parent) {
      ++i;
      continue;
    }
    bool last = false;
    std::size_t end = i;
    parent->lock_.lock();
    // parent_ is written only by adopt(), before the child runs, and below,
    // by the child's owner: reading it outside the lock is safe.
    for (; end < n && nodes[end]->parent_ == parent; ++end) {
      Node* const c = nodes[end];
      if (!ChildList::linked(c)) continue;
      parent->child_list_.remove(c);
      last = --parent->children_ == 0;
    }
    parent->lock_.unlock();
    for (; i < end; ++i) nodes[i]->parent_ = nullptr;
    // After the unlock: an adopt() in between took a reference of its own.
    if (last) parent->unref();
  }
}

void Node::collect_children(std::vector<Node*>& out) {
  lock_.lock();
  try {
    for (Node* c = child_list_.front(); c; c = ChildList::next(c)) {
      out.push_back(c);
      c->ref();
    }
  } catch (...) {
    lock_.unlock();
    throw;
  }
  lock_.unlock();
}

bool Node::mark_aborted(Node*& worklist) noexcept {
  lock_.lock();
  const bool marked = mark_aborted_locked(worklist);
  lock_.unlock();
  return marked;
}

bool Node::mark_aborted_locked(Node*& worklist) noexcept {
  if (aborted_.load(std::memory_order_relaxed)) return false;
  // release; see aborted().
  aborted_.store(true, std::memory_order_release);
  for (Node* c = child_list_.front(); c; c = ChildList::next(c)) {
    // An aborted child has aborted its own subtree (abort is sticky), as has
    // an ended one still waiting for its worker to detach it.
    if (c->aborted_.load(std::memory_order_relaxed)) continue;
    c->ref();
    c->work_next_ = worklist;
    worklist = c;
  }
  return true;
}

void Node::abort_tree() noexcept {
  Node* worklist = nullptr;
  if (!mark_aborted(worklist)) return;
  // on_abort() may wake this node's fiber; the fiber finding itself aborted is
  // fine, since every child was already collected above.
  on_abort();
  abort_all(worklist);
}

void Node::abort_all(Node* worklist) noexcept {
  while (worklist) {
    Node* n = worklist;
    worklist = n->work_next_;
    n->work_next_ = nullptr;
    if (n->mark_aborted(worklist)) n->on_abort();
    n->unref();
  }
}

}  // namespace spindle::detail

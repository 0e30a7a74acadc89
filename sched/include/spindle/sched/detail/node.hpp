// Node: one vertex of the supervision tree. Every task is a node; a task's
// children are the tasks spawned under it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "spindle/base/intrusive_list.hpp"
#include "spindle/base/thread_annotations.hpp"
#include "spindle/sched/detail/spinlock.hpp"

namespace spindle::detail {

// Thread-safe, intrusively reference counted.
//
// A node is aborted once: by an explicit abort, by an ancestor's abort, or when
// its own task ends (a finished task's descendants are aborted: the cascade).
// Abort is sticky. An aborted node adopts no children, so a spawn under it never
// runs its body.
//
// Invariant: while a node has children, they hold one reference on it
// together (taken by the adopt() that links the first, dropped by the detach()
// that unlinks the last: two atomic updates per family instead of two per
// child); a parent lists its children without references, and a child unlinks
// itself (detach()) before its share of that reference can go.
class Node {
 public:
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  void ref() noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
  // ref() for a node that no other thread can reach yet: a plain increment.
  void ref_unshared() noexcept {
    refs_.store(refs_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  // True when the caller holds the only reference. acquire: pairs with the
  // release of every other holder's unref(), so their reads are done.
  bool sole_reference() const noexcept { return refs_.load(std::memory_order_acquire) == 1; }
  void unref() noexcept {
    // A count of one is the caller's alone, since a node leaves the tree (the
    // other way to reach it) before its last reference goes: no other thread
    // can change it, so the common last unref needs no read-modify-write.
    // acquire, and acq_rel below: every release pairs with the acquire of the
    // destroying thread.
    if (refs_.load(std::memory_order_acquire) == 1 ||
        refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      destroy();
    }
  }

  // acquire; pairs with the release in mark_aborted. An I/O park arms its park
  // word, then reads this; an abort sets this, then flags the park word. Both
  // writes to the word are seq_cst read-modify-writes, so one reads the other:
  // the abort sees the park armed, or the arming reads the abort's flag and
  // with it this store.
  bool aborted() const noexcept { return aborted_.load(std::memory_order_acquire); }

  // Links `child` (not yet linked anywhere) under this node, which stays alive
  // while it has children. Returns false, linking nothing, if this node is
  // aborted. The caller holds a reference on this node.
  bool adopt(Node* child) noexcept;

  // Marks this node and all its descendants aborted, calling on_abort() once on
  // every node that was not aborted before. Iterative: safe on deep chains.
  void abort_tree() noexcept;

  // Unlinks this node from its parent, and drops the children's reference on
  // the parent if it was the last child. Called once, when the node's task
  // ends.
  void detach() noexcept;
  // detach() for each of nodes[0, n), taking a parent's lock once for each
  // run of consecutive nodes with that parent.
  static void detach_all(Node* const* nodes, std::size_t n) noexcept;

  // Appends this node's children to `out`, each with a new reference (the
  // caller unrefs them). For dumps.
  void collect_children(std::vector<Node*>& out);

 protected:
  Node() noexcept = default;
  virtual ~Node();
  // Runs once, right after the node is marked aborted, on the aborting thread.
  virtual void on_abort() noexcept {}
  virtual void destroy() noexcept { delete this; }

  // For a node whose task has ended: marks it and its descendants aborted, as
  // abort_tree() does except for this node's own on_abort() (there is nothing
  // left to interrupt), then runs `then` under lock(). With no children to
  // abort, the common case, that is one critical section; otherwise the
  // children are aborted first, outside it, so that whoever sees what `then`
  // publishes sees them aborted.
  template <class F>
  void close_then(F&& then) noexcept {
    Node* worklist = nullptr;
    lock_.lock();
    mark_aborted_locked(worklist);
    if (worklist) {
      lock_.unlock();
      abort_all(worklist);
      lock_.lock();
    }
    then();
    lock_.unlock();
  }
  // Guards the child list, and whatever a derived class adds (a task's joiners).
  SpinLock& lock() noexcept SPINDLE_RETURN_CAPABILITY(lock_) { return lock_; }

 private:
  // Marks this node aborted and appends its children (each with a new
  // reference) to the caller's work list. Returns false if it was aborted.
  bool mark_aborted(Node*& worklist) noexcept;
  // The same with lock_ held.
  bool mark_aborted_locked(Node*& worklist) noexcept SPINDLE_REQUIRES(lock_);
  // Aborts the nodes on `worklist` (from mark_aborted) and their descendants.
  static void abort_all(Node* worklist) noexcept;

  // The fields a parent's adopt() and its children's detach() write sit
  // together, away from refs_; the layout keeps a Task's first fields in the
  // node's tail padding. The sibling links are guarded by the parent's lock
  // as a comment only: the analysis cannot tell that the lock held where they
  // change (the adopting node's, detach_all()'s `parent`'s) is parent_->lock_.
  std::uint32_t children_ SPINDLE_GUARDED_BY(lock_) = 0;  // linked children
  std::atomic<bool> aborted_{false};                      // written under lock_; read anywhere
  SpinLock lock_;             // guards the child list below (see lock())
  Node* parent_ = nullptr;    // set by adopt(); kept alive while this node is linked
  ListLinks<Node> siblings_;  // in parent_->child_list_; guarded by parent_->lock_
  using ChildList = IntrusiveList<Node, &Node::siblings_>;
  ChildList child_list_ SPINDLE_GUARDED_BY(lock_);
  Node* work_next_ = nullptr;  // abort_tree's work list; owned by the aborting thread
  std::atomic<std::uint32_t> refs_{1};
};

}  // namespace spindle::detail

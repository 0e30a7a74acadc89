// IntrusiveList: a doubly linked list threaded through its elements, which
// embed its links. The one list of the runtime's queues of waiters, ready
// fibers and children: no allocation, O(1) push, pop and removal,
// and one pointer per list.
#pragma once

#include <utility>

namespace spindle {

// The links of an element in one IntrusiveList.
// Invariant: both null while unlinked. While linked, `prev` is never null: it
// is the previous element, or for the first element the last one (itself when
// alone); `next` is the following element, null for the last.
template <class T>
struct ListLinks {
  T* prev = nullptr;
  T* next = nullptr;
};

// A list of T linked through the member `Links` of each element. An element
// is in at most one list per ListLinks member, and stays at its address while
// linked. Move-only (a moved-from list is empty). Not thread-safe: the owner
// guards it.
template <class T, ListLinks<T> T::* Links>
class IntrusiveList {
 public:
  IntrusiveList() noexcept = default;
  IntrusiveList(IntrusiveList&& o) noexcept : head_(std::exchange(o.head_, nullptr)) {}
  // This list must be empty.
  IntrusiveList& operator=(IntrusiveList&& o) noexcept {
    if (this != &o) head_ = std::exchange(o.head_, nullptr);
    return *this;
  }

  bool empty() const noexcept { return head_ == nullptr; }
  T* front() const noexcept { return head_; }
  T* back() const noexcept { return head_ ? (head_->*Links).prev : nullptr; }
  // The element after `x` in its list, or null.
  static T* next(const T* x) noexcept { return (x->*Links).next; }
  // Whether `x` is in a list of this kind (not which one).
  static bool linked(const T* x) noexcept { return (x->*Links).prev != nullptr; }

  void push_back(T* x) noexcept {
    ListLinks<T>& l = x->*Links;
    l.next = nullptr;
    if (!head_) {
      l.prev = x;
      head_ = x;
      return;
    }
    T* const last = (head_->*Links).prev;
    l.prev = last;
    (last->*Links).next = x;
    (head_->*Links).prev = x;
  }

  void push_front(T* x) noexcept {
    ListLinks<T>& l = x->*Links;
    if (!head_) {
      l.prev = x;
      l.next = nullptr;
    } else {
      l.prev = (head_->*Links).prev;
      l.next = head_;
      (head_->*Links).prev = x;
    }
    head_ = x;
  }

  // Unlinks and returns the first element, or null.
  T* pop_front() noexcept {
    T* x = head_;
    if (x) remove(x);
    return x;
  }

  // Unlinks `x`, which must be in this list.
  void remove(T* x) noexcept {
    ListLinks<T>& l = x->*Links;
    if (x == head_) {
      head_ = l.next;
      if (head_) (head_->*Links).prev = l.prev;
    } else {
      (l.prev->*Links).next = l.next;
      // The last element's successor is the first's `prev`.
      ((l.next ? l.next : head_)->*Links).prev = l.prev;
    }
    l.prev = nullptr;
    l.next = nullptr;
  }

 private:
  T* head_ = nullptr;
};

}  // namespace spindle

// IntrusiveList: a doubly linked list threaded through its elements, which
// embed its links. The one list of the runtime's queues of waiters, ready
// fibers and children: no allocation, O(1) push, pop and removal.
#pragma once

namespace spindle {

// The links of an element in one IntrusiveList. Both null while unlinked.
template <class T>
struct ListLinks {
  T* prev = nullptr;
  T* next = nullptr;
};

// A FIFO of T linked through the member `Links` of each element. An element
// is in at most one list per ListLinks member, and stays at its address while
// linked. Not thread-safe: the owner guards it.
template <class T, ListLinks<T> T::* Links>
class IntrusiveList {
 public:
  bool empty() const noexcept { return head_ == nullptr; }
  T* front() const noexcept { return head_; }
  // The element after `x` in this list, or null.
  static T* next(const T* x) noexcept { return (x->*Links).next; }

  void push_back(T* x) noexcept {
    (x->*Links).prev = tail_;
    (x->*Links).next = nullptr;
    if (tail_) {
      (tail_->*Links).next = x;
    } else {
      head_ = x;
    }
    tail_ = x;
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
    if (l.prev) {
      (l.prev->*Links).next = l.next;
    } else {
      head_ = l.next;
    }
    if (l.next) {
      (l.next->*Links).prev = l.prev;
    } else {
      tail_ = l.prev;
    }
    l.prev = nullptr;
    l.next = nullptr;
  }

 private:
  T* head_ = nullptr;
  T* tail_ = nullptr;
};

}  // namespace spindle

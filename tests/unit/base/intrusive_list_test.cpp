#include "spindle/base/intrusive_list.hpp"

#include <catch2/catch.hpp>
#include <random>
#include <vector>

namespace {

struct Item {
  explicit Item(int v = 0) : value(v) {}
  int value;
  spindle::ListLinks<Item> links;
};
using List = spindle::IntrusiveList<Item, &Item::links>;

std::vector<int> contents(const List& list) {
  std::vector<int> out;
  for (Item* i = list.front(); i; i = List::next(i)) out.push_back(i->value);
  return out;
}

}  // namespace

TEST_CASE("IntrusiveList keeps order through pushes at both ends and removals", "[base]") {
  Item a{1}, b{2}, c{3}, d{4};
  List list;
  CHECK(list.empty());
  CHECK(list.back() == nullptr);
  list.push_back(&b);
  list.push_back(&c);
  list.push_front(&a);
  list.push_back(&d);
  CHECK(contents(list) == std::vector{1, 2, 3, 4});
  CHECK(list.back() == &d);
  CHECK(List::linked(&a));

  list.remove(&d);  // the last
  CHECK_FALSE(List::linked(&d));
  CHECK(list.back() == &c);
  list.remove(&b);  // a middle one
  CHECK(contents(list) == std::vector{1, 3});
  list.remove(&a);  // the first
  CHECK(list.front() == &c);
  CHECK(list.back() == &c);
  CHECK(list.pop_front() == &c);
  CHECK(list.empty());
  CHECK(list.pop_front() == nullptr);
  CHECK_FALSE(List::linked(&c));
}

TEST_CASE("IntrusiveList moves its elements with it", "[base]") {
  Item a{1}, b{2};
  List list;
  list.push_back(&a);
  list.push_back(&b);
  List taken = std::move(list);
  CHECK(list.empty());
  CHECK(contents(taken) == std::vector{1, 2});
  taken.remove(&b);
  CHECK(taken.back() == &a);
}

TEST_CASE("IntrusiveList matches a vector under random operations", "[base]") {
  std::mt19937 rng(12345);
  std::vector<Item> items;
  items.reserve(64);
  for (int i = 0; i < 64; ++i) items.emplace_back(i);
  List list;
  std::vector<int> model;
  for (int step = 0; step < 20000; ++step) {
    Item& x = items[rng() % items.size()];
    if (List::linked(&x)) {
      list.remove(&x);
      std::erase(model, x.value);
    } else if (rng() % 2) {
      list.push_back(&x);
      model.push_back(x.value);
    } else {
      list.push_front(&x);
      model.insert(model.begin(), x.value);
    }
    REQUIRE(contents(list) == model);
    REQUIRE(list.back() == (model.empty() ? nullptr : &items[model.back()]));
  }
}

// Node: the supervision tree's links, references and abort walk.
#include "spindle/sched/detail/node.hpp"

#include <catch2/catch.hpp>
#include <functional>
#include <vector>

namespace {

using spindle::detail::Node;

// Counts its aborts and its destruction.
struct TestNode final : Node {
  explicit TestNode(int& destroyed) : destroyed_(destroyed) {}
  int aborts = 0;
  // Closes the node as a task that ends does, running `then` as its outcome.
  void close(const std::function<void()>& then) { close_then(then); }

 protected:
  void on_abort() noexcept override { ++aborts; }
  void destroy() noexcept override {
    ++destroyed_;
    delete this;
  }

 private:
  int& destroyed_;
};

std::vector<TestNode*> make_nodes(int& destroyed, int n) {
  std::vector<TestNode*> out;
  for (int i = 0; i < n; ++i) out.push_back(new TestNode(destroyed));
  return out;
}

std::size_t children_of(Node& n) {
  std::vector<Node*> out;
  n.collect_children(out);
  for (Node* c : out) c->unref();
  return out.size();
}

}  // namespace

TEST_CASE("node: detach_all unlinks runs of siblings and drops each parent's reference once") {
  int destroyed = 0;
  auto* p1 = new TestNode(destroyed);
  auto* p2 = new TestNode(destroyed);
  const std::vector<TestNode*> kids = make_nodes(destroyed, 5);
  // a, b, c under p1; d, e under p2.
  for (int i : {0, 1, 2}) REQUIRE(p1->adopt(kids[i]));
  for (int i : {3, 4}) REQUIRE(p2->adopt(kids[i]));
  CHECK(children_of(*p1) == 3);
  CHECK(children_of(*p2) == 2);

  // Runs: [a, b] of p1, [d] of p2, [c] of p1, [e] of p2.
  const std::vector<Node*> batch{kids[0], kids[1], kids[3], kids[2], kids[4]};
  Node::detach_all(batch.data(), batch.size());
  CHECK(children_of(*p1) == 0);
  CHECK(children_of(*p2) == 0);
  CHECK(destroyed == 0);

  // The children's reference on each parent is gone: ours is the last one.
  p1->unref();
  p2->unref();
  CHECK(destroyed == 2);
  // A detached node detaches no further.
  kids[0]->detach();
  for (TestNode* k : kids) k->unref();
  CHECK(destroyed == 7);
}

TEST_CASE("node: detach_all keeps the other children linked") {
  int destroyed = 0;
  const std::vector<TestNode*> n = make_nodes(destroyed, 4);
  TestNode *parent = n[0], *a = n[1], *b = n[2], *c = n[3];
  for (Node* k : {a, b, c}) REQUIRE(parent->adopt(k));

  Node* const middle[] = {b};
  Node::detach_all(middle, 1);
  CHECK(children_of(*parent) == 2);
  // The parent's abort still reaches the linked ones, and only them.
  parent->abort_tree();
  CHECK(parent->aborts == 1);
  CHECK(a->aborts == 1);
  CHECK(b->aborts == 0);
  CHECK(c->aborts == 1);

  Node* const rest[] = {a, c};
  Node::detach_all(rest, 2);
  CHECK(children_of(*parent) == 0);
  for (TestNode* node : n) node->unref();
  CHECK(destroyed == 4);
}

TEST_CASE("node: an abort skips children that are aborted already") {
  int destroyed = 0;
  const std::vector<TestNode*> n = make_nodes(destroyed, 4);
  TestNode *parent = n[0], *ended = n[1], *live = n[2], *grandchild = n[3];
  REQUIRE(parent->adopt(ended));
  REQUIRE(parent->adopt(live));
  REQUIRE(ended->adopt(grandchild));
  // A task that ends closes its node: its subtree is aborted, it is not, and
  // the children are aborted before the outcome is published.
  int aborts_seen = -1;
  ended->close([&] { aborts_seen = grandchild->aborts; });
  CHECK(aborts_seen == 1);
  CHECK(ended->aborts == 0);
  CHECK(grandchild->aborts == 1);
  // A closed node adopts no children.
  int destroyed_extra = 0;
  auto* late = new TestNode(destroyed_extra);
  CHECK_FALSE(ended->adopt(late));
  late->unref();
  CHECK(destroyed_extra == 1);

  parent->abort_tree();
  CHECK(parent->aborts == 1);
  CHECK(live->aborts == 1);
  CHECK(ended->aborts == 0);
  CHECK(grandchild->aborts == 1);

  Node* const all[] = {grandchild, ended, live};
  Node::detach_all(all, 3);
  for (TestNode* node : n) node->unref();
  CHECK(destroyed == 4);
}

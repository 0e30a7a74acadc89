// scripts/gdb/spindle.py in a real gdb: runs spindle-gdb-fixture under
// `gdb -batch` until its SIGTRAP, lists its fibers, backtraces the parked
// "recv" fiber by id, then continues it to a normal exit (which also shows
// that `spindle bt` put the thread's registers back). Skips without gdb, where
// ptrace is not permitted, or in a build without debug information.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>
#include <vector>

#include "process.hpp"
#include "skip.hpp"

using spindle::test::Ms;
using spindle::test::run_program;

namespace {

const std::string kFixture = SPINDLE_GDB_FIXTURE_BIN;
const std::string kScript = SPINDLE_GDB_SCRIPT;

spindle::test::Finished run_gdb(const std::vector<std::string>& commands) {
  std::vector<std::string> argv{"gdb", "-batch", "-nx", "-ex", "source " + kScript};
#if defined(SPINDLE_ASAN)
  // LeakSanitizer cannot run under ptrace: its exit-time check would abort
  // the fixture. The later detect_leaks wins over one in ASAN_OPTIONS.
  const char* asan = std::getenv("ASAN_OPTIONS");
  argv.insert(argv.end(), {"-ex", "set environment ASAN_OPTIONS=" + std::string(asan ? asan : "") +
                                      ":detect_leaks=0"});
#endif
  argv.insert(argv.end(), {"-ex", "run"});
  for (const auto& c : commands) {
    argv.push_back("-ex");
    argv.push_back(c);
  }
  argv.push_back("--args");
  argv.push_back(kFixture);
  auto f = run_program(argv, Ms(90'000));
  const std::string all = f.out + f.err;
  if (all.find("SIGTRAP") == std::string::npos &&
      (all.find("ptrace") != std::string::npos || all.find("not permitted") != std::string::npos))
    SPINDLE_SKIP("gdb cannot trace the fixture (ptrace not permitted here): %s", all.c_str());
  // scripts/gdb/spindle.py reads the runtime's structures through DWARF: a
  // build without debug information (a plain Release) has nothing to read.
  if (all.find("built with debug info") != std::string::npos)
    SPINDLE_SKIP("the fixture has no debug information (build with -g, e.g. the release preset)");
  return f;
}

// The line of `text` that contains `needle`, or "".
std::string line_with(const std::string& text, const std::string& needle) {
  const auto at = text.find(needle);
  if (at == std::string::npos) return {};
  const auto begin = text.rfind('\n', at);
  const auto end = text.find('\n', at);
  return text.substr(begin == std::string::npos ? 0 : begin + 1,
                     end == std::string::npos ? std::string::npos : end - begin - 1);
}

}  // namespace

TEST_CASE("gdb spindle fibers lists parked fibers and spindle bt unwinds one", "[gdb]") {
  if (!spindle::test::have_program("gdb")) SPINDLE_SKIP("gdb is not installed");

  const auto f =
      run_gdb({"spindle fibers", "eval \"spindle bt %d\", spindle_gdb_recv_id", "continue"});
  INFO("gdb stdout:\n" << f.out << "\ngdb stderr:\n" << f.err);
  REQUIRE(f.code == 0);
  REQUIRE(f.out.find("received signal SIGTRAP") != std::string::npos);

  // The fixture's own report: "fiber recv <id>".
  const std::string recv_line = line_with(f.out, "fiber recv ");
  REQUIRE_FALSE(recv_line.empty());
  const std::string recv_id = recv_line.substr(std::string("fiber recv ").size());

  // spindle fibers: one runtime, the tree and the states.
  CHECK(f.out.find("2 workers: ") != std::string::npos);
  CHECK(line_with(f.out, "'root': ").find("running on worker 0") != std::string::npos);
  CHECK(line_with(f.out, "'recv': ").find("parked (channel recv)") != std::string::npos);
  CHECK(line_with(f.out, "'event': ").find("parked (event)") != std::string::npos);
  CHECK(line_with(f.out, "'sleeper': ").find("parked (sleep)") != std::string::npos);
  CHECK(line_with(f.out, "'reader': ").find("parked (io read)") != std::string::npos);
  CHECK(line_with(f.out, "blocking task").find("  blocking task (spawn_blocking)") == 0);
  // Indentation follows the supervision tree: event-child is under event.
  CHECK(line_with(f.out, "'event-child': ").find("    fiber ") == 0);
  CHECK(line_with(f.out, "'recv': ").find("  fiber " + recv_id + " 'recv'") == 0);

  // spindle bt <id of recv>: its header, then a backtrace through the marker.
  const auto header = f.out.find("fiber " + recv_id + " 'recv': parked (channel recv)\n#");
  REQUIRE(header != std::string::npos);
  const auto bt = f.out.substr(header);
  CHECK(bt.find("park_in_gdb_marker") != std::string::npos);
  CHECK(bt.find("spindle::Channel<int>::recv") != std::string::npos);

  // Registers restored: the fixture resumes, wakes its fibers and exits 0.
  CHECK(f.out.find("fixture: done (0)") != std::string::npos);
  CHECK(f.out.find("exited normally") != std::string::npos);
  CHECK(f.err.find("Python Exception") == std::string::npos);
}

TEST_CASE("gdb spindle bt refuses a running fiber and an unknown one", "[gdb]") {
  if (!spindle::test::have_program("gdb")) SPINDLE_SKIP("gdb is not installed");

  const auto f =
      run_gdb({"spindle bt root", "spindle bt no-such-fiber", "spindle bt -fp recv", "continue"});
  const std::string all = f.out + f.err;
  INFO("gdb output:\n" << all);
  REQUIRE(f.code == 0);
  CHECK(all.find("'root' is running on worker 0") != std::string::npos);
  CHECK(all.find("no live fiber with id or name 'no-such-fiber'") != std::string::npos);
  // -fp: the frame-pointer walk (what a core file gets) also finds the marker.
  CHECK(line_with(all, "park_in_gdb_marker").find("#") == 0);
  CHECK(all.find("exited normally") != std::string::npos);
}

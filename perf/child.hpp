// Running one measurement in a child process of its own.
//
// Why a process per measurement: Boost.Fiber's work_stealing keeps
// process-wide state (its thread count is fixed by the first constructor and
// its start-up barrier is a function-local static), so it can run only once
// per process; and park_memory reads the process's RSS, which a previous
// workload's freed-but-cached memory would distort. A fresh child gives every
// implementation and every repeat the same clean process, and lets the parent
// notice a hang (--timeout) or a crash and report it instead of dying with it.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "row.hpp"

namespace spindle::perf {

struct ChildResult {
  std::optional<Row> row;  // set on success
  std::string error;       // why not: the child's exit status, signal, or a timeout
};

// Forks; the child runs `measure` and sends its Row back through a pipe. A
// child that throws prints the message on stderr and exits 1. After a second
// the parent shows a progress line on stderr naming `label`. Call only from
// a single-threaded process.
ChildResult run_in_child(const std::function<Row()>& measure, std::string_view label,
                         std::chrono::seconds timeout);

// The pipe format: one "key<TAB>value" line per field and extra.
std::string serialize(const Row& row);
std::optional<Row> deserialize(std::string_view text);

}  // namespace spindle::perf

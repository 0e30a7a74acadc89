// Symbolize: return addresses to readable backtrace lines.
#pragma once

#include <cstddef>
#include <string>

namespace spindle::detail {

// Appends one line per frame, "<indent>#<n> <function> at <file>:<line>"
// (or the address where debug information is missing). Thread-safe; slow
// (reads debug information, on a thread of its own): never call it while
// workers are held.
void append_backtrace(std::string& out, void* const* frames, std::size_t count, const char* indent);

}  // namespace spindle::detail

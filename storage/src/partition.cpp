// Partition names and blob file names.
#include "spindle/storage/partition.hpp"

namespace spindle::storage {

bool valid_partition_name(std::string_view name) noexcept {
  if (name.empty()) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::string blob_file_name(std::string_view name) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(name.size() * 2);
  for (char c : name) {
    const auto b = static_cast<unsigned char>(c);
    out += kDigits[b >> 4];
    out += kDigits[b & 0xF];
  }
  return out;
}

std::optional<std::string> blob_name_from_file(std::string_view file) {
  if (file.empty() || file.size() % 2 != 0) return std::nullopt;
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;  // uppercase is not canonical
  };
  std::string out;
  out.reserve(file.size() / 2);
  for (std::size_t i = 0; i < file.size(); i += 2) {
    const int hi = digit(file[i]), lo = digit(file[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi << 4 | lo);
  }
  return out;
}

}  // namespace spindle::storage

// Pure functions of storage/: partition names, blob file names, the header
// layout and its torn-creation rule, CRC-32C. No runtime needed.
#include <catch2/catch.hpp>
#include <string>

#include "spindle/storage/crc32c.hpp"
#include "spindle/storage/header.hpp"
#include "spindle/storage/partition.hpp"
#include "storage_support.hpp"

using namespace spindle::storage;

TEST_CASE("partition names are letters digits underscores and dashes", "[storage][names]") {
  for (const char* ok : {"a", "Z", "0", "_", "-", "az_AZ-09", "log"}) {
    INFO(ok);
    CHECK(valid_partition_name(ok));
  }
  for (const char* bad : {"", ".", "..", "a/b", "/a", "a b", "a.b", "\xc3\xa9", "a\n", "a\\b"}) {
    INFO(bad);
    CHECK_FALSE(valid_partition_name(bad));
  }
  CHECK_FALSE(valid_partition_name(std::string("a\0b", 3)));
}

TEST_CASE("blob names are bytes stored as lowercase hex", "[storage][names]") {
  CHECK(blob_file_name("log") == "6c6f67");
  const std::string binary("\x00\xff\x10", 3);
  CHECK(blob_file_name(binary) == "00ff10");
  CHECK(blob_name_from_file("00ff10") == binary);
  CHECK(blob_name_from_file("6c6f67") == std::string("log"));
  for (const char* bad : {"", "0", "abc", "6C6F67", "0x00", " 00", "00 ", "zz", "g0"}) {
    INFO(bad);
    CHECK_FALSE(blob_name_from_file(bad).has_value());
  }
}

TEST_CASE("crc32c matches the standard check value", "[storage][crc]") {
  CHECK(crc32c("123456789") == 0xE3069283u);
  CHECK(crc32c("") == 0u);
  // Incremental equals one-shot, across the 8-byte stride.
  const std::string s = "the quick brown fox jumps over the lazy dog, twice over";
  for (std::size_t cut = 0; cut <= s.size(); ++cut) {
    CHECK(crc32c(std::string_view(s).substr(cut), crc32c(std::string_view(s).substr(0, cut))) ==
          crc32c(s));
  }
}

TEST_CASE("the header encodes magic runtime version blob version CRC and zero padding",
          "[storage][header]") {
  const HeaderBytes h = encode_header(0x0102);
  CHECK(spindle::test::str(std::span(h).first(4)) == "SPNB");
  CHECK(std::to_integer<int>(h[4]) == 0);
  CHECK(std::to_integer<int>(h[5]) == 1);
  CHECK(std::to_integer<int>(h[6]) == 1);
  CHECK(std::to_integer<int>(h[7]) == 2);
  const std::uint32_t crc = crc32c(std::span(h).first(8));
  CHECK(std::to_integer<std::uint32_t>(h[8]) == (crc >> 24));
  CHECK(std::to_integer<std::uint32_t>(h[11]) == (crc & 0xFF));
  for (std::size_t i = 12; i < kHeaderSize; ++i) REQUIRE(h[i] == std::byte{0});
  CHECK(parse_header(h).value() == 0x0102);
  CHECK(parse_header(encode_header(0)).value() == 0);
  CHECK(parse_header(encode_header(65535)).value() == 65535);
}

TEST_CASE("header defects are told apart", "[storage][header]") {
  auto defect = [](HeaderBytes h) { return parse_header(h).error(); };
  HeaderBytes h = encode_header(7);
  CHECK(parse_header(std::span(h).first(100)).error() == HeaderDefect::kTooShort);

  auto bad_magic = h;
  bad_magic[0] = std::byte{'X'};
  CHECK(defect(bad_magic) == HeaderDefect::kBadMagic);

  auto bad_runtime = h;
  bad_runtime[5] = std::byte{2};
  CHECK(defect(bad_runtime) == HeaderDefect::kBadRuntimeVersion);

  auto bad_crc = h;
  bad_crc[7] = std::byte{8};  // the version changed, the CRC did not
  CHECK(defect(bad_crc) == HeaderDefect::kBadChecksum);

  auto bad_padding = h;
  bad_padding[4095] = std::byte{1};
  CHECK(defect(bad_padding) == HeaderDefect::kBadPadding);
  for (auto d : {HeaderDefect::kTooShort, HeaderDefect::kBadMagic, HeaderDefect::kBadRuntimeVersion,
                 HeaderDefect::kBadChecksum, HeaderDefect::kBadPadding}) {
    CHECK_FALSE(describe(d).empty());
  }
}

TEST_CASE("a torn creation is a canonical prefix followed by zeros", "[storage][header]") {
  const HeaderBytes h = encode_header(0xABCD);
  // Every prefix, alone or padded with zeros to 4096 bytes, is torn.
  for (std::size_t k = 0; k <= 12; ++k) {
    INFO("prefix " << k);
    CHECK(is_torn_creation(std::span(h).first(k)));
    HeaderBytes padded{};
    std::copy_n(h.begin(), k, padded.begin());
    CHECK(is_torn_creation(padded));
  }
  CHECK(is_torn_creation(h));  // the complete header too (it parses, so never asked)
  // Anything else is not.
  HeaderBytes garbage{};
  garbage[3] = std::byte{0x55};
  CHECK_FALSE(is_torn_creation(garbage));
  HeaderBytes late{};
  late[2000] = std::byte{1};
  CHECK_FALSE(is_torn_creation(late));
  HeaderBytes wrong_crc = h;
  wrong_crc[9] = std::byte(std::to_integer<int>(wrong_crc[9]) ^ 0xFF);
  CHECK_FALSE(is_torn_creation(wrong_crc));
  std::string other_magic = "XPNB";
  CHECK_FALSE(is_torn_creation(spindle::test::bytes(other_magic)));
  CHECK_FALSE(is_torn_creation(std::vector<std::byte>(kHeaderSize + 1)));
}

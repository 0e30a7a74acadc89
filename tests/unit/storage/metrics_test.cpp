// The storage counters of the runtime metrics (runtime_storage_*,
// runtime_open_blobs) after a known sequence of blob calls.
#include <catch2/catch.hpp>
#include <optional>
#include <string>

#include "exposition.hpp"
#include "spindle/storage/storage.hpp"
#include "storage_support.hpp"

using spindle::storage::Storage;
using spindle::test::bytes;
using spindle::test::TempDir;

namespace {
double stat(std::string_view name) {
  return spindle::test::metric_value(spindle::current_runtime().metrics_text(), name).value();
}
}  // namespace

TEST_CASE("storage counters follow a known write read sync and resize", "[storage][metrics]") {
  TempDir tmp;
  spindle::test::on_workers([&tmp] {
    auto st = Storage::open_directory(tmp.fresh()).value();
    CHECK(stat("runtime_open_blobs") == 0);
    {
      auto blob = st.open("p", "metered").value().blob;
      CHECK(stat("runtime_open_blobs") == 1);
      auto copy = blob;  // a copy of the handle is the same open
      CHECK(stat("runtime_open_blobs") == 1);
      REQUIRE(blob.write_at(0, bytes("0123456789")));
      REQUIRE(blob.write_at(10, bytes("abcde")));
      REQUIRE(blob.read(2, 6).value().size() == 6);
      REQUIRE(blob.sync());
      REQUIRE(blob.resize(4));
      CHECK(stat("runtime_storage_writes_total") == 2);
      CHECK(stat("runtime_storage_write_bytes_total") == 15);
      CHECK(stat("runtime_storage_reads_total") == 1);
      CHECK(stat("runtime_storage_read_bytes_total") == 6);
      CHECK(stat("runtime_storage_syncs_total") == 1);
      CHECK(stat("runtime_storage_resizes_total") == 1);
    }
    CHECK(stat("runtime_open_blobs") == 0);
  });
}

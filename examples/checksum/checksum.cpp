// spindle-example-checksum: the CRC-32C of every blob of a storage partition,
// one fiber per blob, at most --jobs of them reading at once (a Semaphore).
// Prints "<name> <crc>" per blob in name order, then a total line.
// --create N first writes N blobs of random bytes and syncs them, so
//
//   spindle-example-checksum --dir /tmp/blobs --create 5
//
// works on an empty directory.

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <random>
#include <span>
#include <spindle/spindle.hpp>
#include <string>
#include <type_traits>
#include <vector>

namespace {

namespace storage = spindle::storage;

constexpr std::size_t kChunk = 64 * 1024;

// Writes blob `name` as `size` random bytes and makes it durable.
// Suspends: for the open, the write and the sync.
spindle::Result<void> create_blob(const storage::Storage& store, const std::string& partition,
                                  const std::string& name, std::size_t size) {
  std::vector<std::byte> data(size);
  std::independent_bits_engine<std::mt19937, 8, unsigned> random(std::random_device{}());
  std::ranges::generate(data, [&] { return static_cast<std::byte>(random()); });

  auto opened = store.open(partition, name);
  if (!opened) return spindle::failure(opened.error());
  const storage::Blob& blob = opened->blob;
  if (auto r = blob.write_at(0, data); !r) return r;
  if (auto r = blob.resize(size); !r) return r;  // an older, longer blob of this name
  return blob.sync();
}

struct Checksum {
  std::uint64_t bytes = 0;
  std::uint32_t crc = 0;
};

// The CRC-32C of blob `name`'s data, read kChunk bytes at a time.
// Suspends: for the open and the reads.
spindle::Result<Checksum> checksum_blob(const storage::Storage& store, const std::string& partition,
                                        const std::string& name) {
  auto opened = store.open(partition, name);
  if (!opened) return spindle::failure(opened.error());
  std::vector<std::byte> buf(kChunk);
  Checksum sum{.bytes = opened->len};
  for (std::uint64_t offset = 0; offset < opened->len; offset += kChunk) {
    const auto chunk = std::span(buf).first(std::min<std::uint64_t>(kChunk, opened->len - offset));
    if (auto r = opened->blob.read_at(offset, chunk); !r) return spindle::failure(r.error());
    sum.crc = storage::crc32c(chunk, sum.crc);
  }
  return sum;
}

struct Flags {
  std::string dir;
  std::string partition = "blobs";
  std::size_t create = 0;
  std::size_t size = 256 * 1024;
  std::size_t jobs = 4;
  std::size_t workers = 2;
};

// Runs `work(i)` for i in [0, n), each on its own fiber with at most `jobs`
// running at once, and returns the results in order of i.
template <class Work>
auto run_bounded(std::size_t n, std::size_t jobs, Work work) {
  using R = std::invoke_result_t<Work&, std::size_t>;
  spindle::Semaphore slots(jobs);
  std::vector<spindle::JoinHandle<R>> fibers;
  for (std::size_t i = 0; i < n; ++i) {
    fibers.push_back(spindle::spawn([&slots, &work, i] {
      slots.acquire().value();
      auto result = work(i);
      slots.release();
      return result;
    }));
  }
  std::vector<R> results;
  for (auto& f : fibers) results.push_back(f.join().value());
  return results;
}

// The root fiber. Returns the exit code: 0, or 1 if any blob failed.
int run(const Flags& flags) {
  auto store = storage::Storage::open_directory(flags.dir);
  if (!store) {
    fmt::print(stderr, "cannot open {}: {}\n", flags.dir, store.error().message());
    return 1;
  }
  int status = 0;

  if (flags.create > 0) {
    std::vector<std::string> names;
    for (std::size_t i = 0; i < flags.create; ++i) names.push_back(fmt::format("blob-{:04}", i));
    const auto created = run_bounded(names.size(), flags.jobs, [&](std::size_t i) {
      return create_blob(*store, flags.partition, names[i], flags.size);
    });
    for (std::size_t i = 0; i < created.size(); ++i) {
      if (!created[i]) {
        fmt::print(stderr, "cannot create {}: {}\n", names[i], created[i].error().message());
        status = 1;
      }
    }
  }

  auto names = store->scan(flags.partition);
  if (!names) {
    fmt::print(stderr, "cannot scan {}: {}\n", flags.partition, names.error().message());
    return 1;
  }
  std::ranges::sort(*names);
  const auto sums = run_bounded(names->size(), flags.jobs, [&](std::size_t i) {
    return checksum_blob(*store, flags.partition, (*names)[i]);
  });

  std::uint64_t total = 0;
  for (std::size_t i = 0; i < sums.size(); ++i) {
    if (sums[i]) {
      fmt::print("{} {:08x}\n", (*names)[i], sums[i]->crc);
      total += sums[i]->bytes;
    } else {
      fmt::print(stderr, "{}: {}\n", (*names)[i], sums[i].error().message());
      status = 1;
    }
  }
  fmt::print("total: {} blobs, {} bytes\n", names->size(), total);
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"spindle-example-checksum: CRC-32C of every blob of a storage partition"};
  Flags flags;
  app.add_option("-d,--dir", flags.dir, "storage directory (created if missing)")->required();
  app.add_option("-p,--partition", flags.partition, "partition to checksum")->capture_default_str();
  app.add_option("--create", flags.create, "first write this many blobs of random bytes")
      ->capture_default_str();
  app.add_option("--size", flags.size, "bytes per created blob")->capture_default_str();
  app.add_option("-j,--jobs", flags.jobs, "blobs read at once")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app.add_option("-w,--workers", flags.workers, "worker threads")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  try {
    spindle::Runtime runtime(spindle::Config{.workers = flags.workers});
    return runtime.run([&] { return run(flags); });
  } catch (const std::exception& e) {
    fmt::print(stderr, "spindle-example-checksum: {}\n", e.what());
    return 1;
  }
}

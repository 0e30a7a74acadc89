// The workloads of spindle-perf: their sizes, and one function per workload
// and implementation. Each function builds its own runtime or thread pool,
// times the workload, checks its result and returns one Row; a wrong result
// throws PerfError. main.cpp runs each call in a child process of its own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "row.hpp"
#include "spindle/sched/config.hpp"

namespace spindle::perf {

// The sizes of one run. Both implementations of a workload get the same ones.
struct Sizes {
  std::uint64_t spawn_many = 1'000'000;  // fibers spawned by one fiber
  std::uint64_t yield_fibers = 200;
  std::uint64_t yields = 10'000;  // per fiber
  std::uint64_t ping_pong_pairs = 1'000;
  std::uint64_t ping_pong_rounds = 1'000;   // round trips per pair
  std::uint64_t chain = 1'000'000;          // fibers in the chain
  std::uint64_t skynet_leaves = 1'000'000;  // a power of 10
  std::uint64_t park_fibers = 100'000;
  std::uint64_t wake_samples = 1'000;
  std::uint64_t wake_gap_us = 2'000;  // the waker sleeps this long before each wake
  std::uint64_t nop_ops = 1'000'000;  // total, split evenly across the fibers
  std::uint64_t pipe_rounds = 100'000;
  std::uint64_t echo_warmup_ms = 200;  // echo: load before the measured window
  std::uint64_t echo_window_ms = 2'000;
  std::uint64_t randread_bytes = std::uint64_t{1} << 30;  // file_randread's file; a power of 2
  std::uint64_t randread_reads = 1'000'000;               // total; a multiple of 32
  std::uint64_t copy_bytes = std::uint64_t{1} << 30;      // file_copy's file; a multiple of 1 MiB
  std::uint64_t http_window_ms = 2'000;                   // http_static: the load's length

  // --quick: every workload in well under a second per implementation.
  static Sizes quick() {
    return Sizes{.spawn_many = 10'000,
                 .yield_fibers = 20,
                 .yields = 1'000,
                 .ping_pong_pairs = 100,
                 .ping_pong_rounds = 100,
                 .chain = 10'000,
                 .skynet_leaves = 10'000,
                 .park_fibers = 10'000,
                 .wake_samples = 50,
                 .wake_gap_us = 2'000,
                 .nop_ops = 32'000,
                 .pipe_rounds = 2'000,
                 .echo_warmup_ms = 50,
                 .echo_window_ms = 200,
                 .randread_bytes = std::uint64_t{64} << 20,
                 .randread_reads = 64'000,
                 .copy_bytes = std::uint64_t{64} << 20,
                 .http_window_ms = 300};
  }
};

struct Params {
  std::size_t workers = 2;
  std::size_t stack_size = 256 * 1024;  // bytes; spindle's default
  Sizes sizes;
  // file_randread: the Storage directory holding the file, made in the parent
  // by prepare_randread before the workload's first measurement.
  std::filesystem::path randread_dir;
  // file_copy: the file to copy, made in the parent by prepare_file_copy.
  std::filesystem::path copy_source;
  // http_static: the directory both servers serve, with the file and wrk's
  // report script, made in the parent by prepare_http_static.
  std::filesystem::path static_root;
  // https: beside static_root, made in the parent by prepare_https: the
  // OpenSSL configuration file every program of the rows runs with, and the
  // servers' certificate and key.
  std::filesystem::path openssl_conf;
  std::filesystem::path tls_certificate;
  std::filesystem::path tls_key;
};

// How wrk loads the server in a row of http_static's frame.
struct HttpLoad {
  std::string_view name = "http_static";  // the row
  // https://, with OPENSSL_CONF = Params::openssl_conf in the environment of
  // both servers and of wrk.
  bool tls = false;
  // "Connection: close" on every request: each on a new connection (over
  // TLS with a full handshake), which the server closes after the response.
  bool close = false;
};

// Scheduler workloads on spindle (spindle_sched.cpp).
Row spindle_spawn_many(const Params& p);
Row spindle_yield_many(const Params& p);
Row spindle_ping_pong(const Params& p);
// ping_pong with each receive a select over its channel and a never-ready one.
Row spindle_select_pingpong(const Params& p);
// ping_pong's exchange as a simulation (spindle::sim), in fiber turns per
// second; its baseline, the same on a real one-worker runtime.
Row spindle_sim_steps(const Params& p);
Row spindle_one_worker_steps(const Params& p);
Row spindle_chained_spawn(const Params& p);
Row spindle_skynet(const Params& p);
Row spindle_park_memory(const Params& p);
Row spindle_wake_latency(const Params& p);

// The same on Boost.Fiber (boost_sched.cpp).
Row boost_spawn_many(const Params& p);
Row boost_yield_many(const Params& p);
Row boost_ping_pong(const Params& p);
Row boost_chained_spawn(const Params& p);
Row boost_skynet(const Params& p);
Row boost_park_memory(const Params& p);
Row boost_wake_latency(const Params& p);

// I/O workloads on spindle's io_op (spindle_io.cpp): `fibers` fibers share
// Sizes::nop_ops ring NOPs.
Row spindle_nop(const Params& p, std::size_t fibers);
Row spindle_pipe_pingpong(const Params& p);

// The raw liburing loops, no fibers (raw_uring.cpp): `depth` NOPs in flight.
Row raw_nop(const Params& p, std::size_t depth);
Row raw_pipe_pingpong(const Params& p);

// echo: a server on one worker pinned to CPU 0, driven by the closed-loop
// client (echo_client.hpp) pinned to CPU 1 over `connections` connections.
// spindle on net/ (spindle_net.cpp); a raw liburing loop (raw_echo.cpp).
Row spindle_echo(const Params& p, std::size_t connections, IoBackendKind backend);
Row raw_echo(const Params& p, std::size_t connections);
// The same on spindle's epoll backend, against a raw single-threaded epoll
// loop (raw_epoll_echo.cpp).
Row raw_epoll_echo(const Params& p, std::size_t connections);

// file_randread: reads in flight: spindle's fibers, fio's iodepth over all its jobs.
inline constexpr std::size_t kRandReadInFlight = 32;

// file_randread (file_randread.cpp): 32 fibers read random 4 KiB blocks of a
// blob in the page cache. prepare_randread writes the blob (Sizes::randread_bytes)
// into a new temporary directory, reads it once and sets p.randread_dir; the
// directory is removed when the returned handle is released.
std::shared_ptr<void> prepare_randread(Params& p);
Row spindle_file_randread(const Params& p);
// The path of the blob file under p.randread_dir, for readers outside Storage.
std::filesystem::path randread_file(const Params& p);

// The same reads by fio (fio.cpp). fio_missing: empty when fio is on PATH,
// else why the baseline is skipped.
std::string fio_missing();
Row fio_file_randread(const Params& p);

// file_copy (file_copy.cpp): Sizes::copy_bytes copied within one directory by
// fs::copy_file, and by `cp --reflink=never`, each to a new file that is
// checked and removed after the run. prepare_file_copy writes the source
// (stamped blocks, synced, read back once so both copies read it from the
// page cache) into a new temporary directory and sets p.copy_source; the
// directory is removed when the returned handle is released. cp_missing:
// empty when cp takes --reflink=never, else why the baseline is skipped.
std::shared_ptr<void> prepare_file_copy(Params& p);
Row spindle_file_copy(const Params& p);
std::string cp_missing();
Row cp_file_copy(const Params& p);

// http_static and https (http_static.cpp, nginx.cpp): a server pinned to CPU
// 0 serving one 64 KiB file to wrk (-t1, 64 connections) pinned to CPU 1, for
// Sizes::http_window_ms, as `load` says; the headline is the server's CPU
// time per request. spindle-http --workers 1 against nginx (one process,
// sendfile). prepare_http_static writes the file into a new temporary
// directory and sets p.static_root; prepare_https does that and writes the
// OpenSSL configuration file and the certificate beside it. The *_missing
// calls are empty when the side can run `load`, else why it is skipped: wrk
// (or for https openssl) not installed, spindle-http not built, nginx not
// installed or without its SSL module.
std::shared_ptr<void> prepare_http_static(Params& p);
std::shared_ptr<void> prepare_https(Params& p);
Row spindle_http(const Params& p, const HttpLoad& load);
std::string spindle_http_missing(const HttpLoad& load);
Row nginx_http(const Params& p, const HttpLoad& load);
std::string nginx_missing(const HttpLoad& load);

}  // namespace spindle::perf

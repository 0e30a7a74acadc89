// Copying between descriptors without the bytes entering user space:
// splice(2) through a pipe (io_uring has neither sendfile nor
// copy_file_range). copy() and copy_file() between files, send_file() from
// a file to a socket, as a static-file server answers.
//
// copy() between two files runs as one task on the blocking pool, whose
// thread makes every splice itself, on both backends. send_file()'s splices
// are io::splice calls (spindle/sched/io.hpp): on io_uring they run on the
// kernel's io-wq threads; on the epoll backend the one from the file runs
// on the blocking pool, and the ones into the socket are tried at once and
// wait for the socket's room. Fiber-only; errors are fs::Error naming the
// file(s).
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>

#include "spindle/base/timeout.hpp"
#include "spindle/fs/error.hpp"
#include "spindle/fs/file.hpp"
#include "spindle/fs/splice_pipe.hpp"

namespace spindle::fs {

// A length that means "up to the end of the source".
inline constexpr std::uint64_t kToEnd = ~std::uint64_t{0};

// Copies up to `length` bytes from `from`'s position to `to`'s position;
// both positions advance. Returns the bytes copied, fewer than `length`
// only where `from` ends. Between regular files (or block devices) it
// splices through a pipe of up to 256 KiB, a pipeful at a time, in one
// blocking-pool task; a `to` opened with Open::kAppend (splice refuses
// append mode), or a pipe or socket at either end, gets the bytes through a
// buffer instead, by File's reads and writes. Errors name both paths.
// Writes into `to` are never cancelled: an abort (or the end of a deadline
// scope) ends the copy between pipefuls, or buffers, with errc::aborted
// (errc::timed_out); the bytes copied so far stay copied and both positions
// have advanced by them. The call returns only once the pool task has
// ended, so neither File is in use after it.
// Suspends: until done, an error, or an abort and the end of the pipeful
// under way.
Result<std::uint64_t> copy(File& from, File& to, std::uint64_t length = kToEnd);

// Copies the file `from` to `to`, which is created with `from`'s permission
// bits (less the umask) or truncated: the bytes copied. Nothing is synced
// (File::fsync, or write_file_atomic for a replacement that survives a
// crash).
// Suspends: as copy().
Result<std::uint64_t> copy_file(const std::filesystem::path& from, const std::filesystem::path& to);

struct SendFileOptions {
  // The whole call's limit, after which it ends with errc::timed_out (what
  // was sent stays sent). Default: Config::read_write_timeout, as for
  // TcpStream::write_all.
  Timeout timeout = {};
  // The pipe to splice through; null: one made for the call.
  SplicePipe* pipe = nullptr;
  // Bytes sent before the file's, such as a response's headers: sent
  // with MSG_MORE, so that they leave in one packet with the first of the
  // file's rather than in one of their own. Counted in no result.
  std::span<const std::byte> header = {};
};

// Sends bytes [offset, offset + length) of `file` (kToEnd: to its end) to
// the connected stream socket `socket` (net::TcpStream::native_handle()):
// the bytes sent, fewer than `length` only where the file ends. The file's
// position stays. A peer gone is EPIPE or ECONNRESET; errors name the
// file. A header goes in options.header, or before the call by the
// stream's own calls, which have returned by then.
// Suspends: until every byte (the header's too) is in the socket's send
// buffer, an error, the deadline or an abort.
Result<std::uint64_t> send_file(const File& file, std::uint64_t offset, std::uint64_t length,
                                int socket, const SendFileOptions& options = {});

}  // namespace spindle::fs

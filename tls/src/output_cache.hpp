// The ciphertext buffers of large writes, kept per thread between them.
//
// A write of kWriteChunk plaintext fills about 64 KiB of ciphertext before it
// is sent. A connection does not keep a buffer that large between writes (an
// idle one holds little), and allocating one anew for every write costs its
// pages each time: the allocator gives the pages of a large freed block back
// to the kernel, and the next write faults them in again, zeroed. A thread
// keeps a few such buffers instead, handed from write to write.
//
// Thread-safety: each thread has its own cache. Both calls are out of line
// and never suspend, so no caller holds a thread's cache across a fiber's
// suspension; a buffer taken on one thread may be kept on another.
#pragma once

#include <cstddef>
#include <string>

namespace spindle::tls::detail {

// An empty string with at least `capacity` bytes reserved: one this thread
// kept, else a new one.
std::string take_output_buffer(std::size_t capacity);

// Keeps `buffer`'s memory on this thread for a later take_output_buffer, up
// to a few buffers; frees it beyond that.
void keep_output_buffer(std::string&& buffer) noexcept;

}  // namespace spindle::tls::detail

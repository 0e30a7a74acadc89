// The runtime counters storage/ owns: blob reads, writes, syncs and resizes
// with their bytes, and the blobs open. All are defined in counters.cpp, so a
// program that links one of them (any blob) exposes all seven. Bumped and
// held from fibers only.
#pragma once

#include "spindle/sched/runtime_counter.hpp"

namespace spindle::storage::detail {

extern const RuntimeCounter kReads;       // runtime_storage_reads_total
extern const RuntimeCounter kReadBytes;   // runtime_storage_read_bytes_total
extern const RuntimeCounter kWrites;      // runtime_storage_writes_total
extern const RuntimeCounter kWriteBytes;  // runtime_storage_write_bytes_total
extern const RuntimeCounter kSyncs;       // runtime_storage_syncs_total
extern const RuntimeCounter kResizes;     // runtime_storage_resizes_total
extern const RuntimeGauge kOpenBlobs;     // runtime_open_blobs: one Hold per BlobState

}  // namespace spindle::storage::detail

#include "counters.hpp"

namespace spindle::storage::detail {

const RuntimeCounter kReads{"runtime_storage_reads_total", "Blob reads."};
const RuntimeCounter kReadBytes{"runtime_storage_read_bytes_total", "Bytes read from blobs."};
const RuntimeCounter kWrites{"runtime_storage_writes_total", "Blob writes."};
const RuntimeCounter kWriteBytes{"runtime_storage_write_bytes_total", "Bytes written to blobs."};
const RuntimeCounter kSyncs{"runtime_storage_syncs_total", "Blob syncs."};
const RuntimeCounter kResizes{"runtime_storage_resizes_total", "Blob resizes."};
const RuntimeGauge kOpenBlobs{"runtime_open_blobs", "Blobs open."};

}  // namespace spindle::storage::detail

// The whole of spindle's public API.
//
// Conventions of every header below: each class says whether it is
// thread-safe, worker-affine or fiber-only; each call that can park the
// calling fiber says `Suspends:` and until when (overloads beside it share
// it), and calls without it never park. Rules for code on fibers: docs/pitfalls.md.
#pragma once

#include "spindle/base/errc.hpp"
#include "spindle/base/log.hpp"
#include "spindle/base/result.hpp"
#include "spindle/base/time.hpp"
#include "spindle/net/address.hpp"
#include "spindle/net/listener.hpp"
#include "spindle/net/resolve.hpp"
#include "spindle/net/stream.hpp"
#include "spindle/net/timeout.hpp"
#include "spindle/sched/channel.hpp"
#include "spindle/sched/condvar.hpp"
#include "spindle/sched/config.hpp"
#include "spindle/sched/context.hpp"
#include "spindle/sched/event.hpp"
#include "spindle/sched/fiber_local.hpp"
#include "spindle/sched/io.hpp"
#include "spindle/sched/join_handle.hpp"
#include "spindle/sched/log.hpp"
#include "spindle/sched/mutex.hpp"
#include "spindle/sched/pin.hpp"
#include "spindle/sched/runtime.hpp"
#include "spindle/sched/runtime_counter.hpp"
#include "spindle/sched/select.hpp"
#include "spindle/sched/semaphore.hpp"
#include "spindle/sched/stop.hpp"
#include "spindle/sched/this_fiber.hpp"
#include "spindle/sched/wait_group.hpp"
#include "spindle/storage/blob.hpp"
#include "spindle/storage/crc32c.hpp"
#include "spindle/storage/header.hpp"
#include "spindle/storage/partition.hpp"
#include "spindle/storage/storage.hpp"

// The whole of spindle's public API.
#pragma once

#include "spindle/base/errc.hpp"
#include "spindle/base/result.hpp"
#include "spindle/sched/channel.hpp"
#include "spindle/sched/condvar.hpp"
#include "spindle/sched/config.hpp"
#include "spindle/sched/context.hpp"
#include "spindle/sched/event.hpp"
#include "spindle/sched/fiber_local.hpp"
#include "spindle/sched/io.hpp"
#include "spindle/sched/join_handle.hpp"
#include "spindle/sched/mutex.hpp"
#include "spindle/sched/pin.hpp"
#include "spindle/sched/runtime.hpp"
#include "spindle/sched/semaphore.hpp"
#include "spindle/sched/this_fiber.hpp"
#include "spindle/sched/wait_group.hpp"

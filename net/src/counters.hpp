// The runtime counters net/ owns: stream connections (TCP and Unix) made and
// accepted, bytes sent and received over them (datagrams are not counted).
// All are defined in counters.cpp, so a program that links one of them (any
// listener or stream) exposes all four. Bumped from fibers only.
#pragma once

#include "spindle/sched/runtime_counter.hpp"

namespace spindle::net::detail {

extern const RuntimeCounter kInboundConnections;   // runtime_inbound_connections_total
extern const RuntimeCounter kOutboundConnections;  // runtime_outbound_connections_total
extern const RuntimeCounter kInboundBandwidth;     // runtime_inbound_bandwidth_total
extern const RuntimeCounter kOutboundBandwidth;    // runtime_outbound_bandwidth_total

}  // namespace spindle::net::detail

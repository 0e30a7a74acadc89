#include "counters.hpp"

namespace spindle::net::detail {

const RuntimeCounter kInboundConnections{"runtime_inbound_connections_total",
                                         "TCP connections accepted."};
const RuntimeCounter kOutboundConnections{"runtime_outbound_connections_total",
                                          "TCP connections made."};
const RuntimeCounter kInboundBandwidth{"runtime_inbound_bandwidth_total",
                                       "Bytes received over TCP."};
const RuntimeCounter kOutboundBandwidth{"runtime_outbound_bandwidth_total", "Bytes sent over TCP."};

}  // namespace spindle::net::detail

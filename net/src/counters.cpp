#include "counters.hpp"

namespace spindle::net::detail {

const RuntimeCounter kInboundConnections{"runtime_inbound_connections_total",
                                         "Stream connections accepted (TCP and Unix)."};
const RuntimeCounter kOutboundConnections{"runtime_outbound_connections_total",
                                          "Stream connections made (TCP and Unix)."};
const RuntimeCounter kInboundBandwidth{"runtime_inbound_bandwidth_total",
                                       "Bytes received over stream connections (TCP and Unix)."};
const RuntimeCounter kOutboundBandwidth{"runtime_outbound_bandwidth_total",
                                        "Bytes sent over stream connections (TCP and Unix)."};

}  // namespace spindle::net::detail

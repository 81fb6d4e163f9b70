#!/usr/bin/env python3
"""bench.py's standard scenario in ns-3, for ``bench.py --ns3 PYTHON``: run by an interpreter
that has the PyPI ``ns3`` package (its own environment: ``python3 -m venv ENV && ENV/bin/pip
install ns3``), prints one JSON object.

The scenario is ``cubic_100m``: two CUBIC senders, each to its own receiver, through a
100 Mbit/s bottleneck with a byte FIFO of 2 x BDP (250 kB), 10 ms base RTT (1 Gbit/s access
links of 1.25 ms, bottleneck 2.5 ms), bulk transfers for the whole run, 1448-byte segments,
SACK, socket buffers large enough not to limit. Only ``Simulator.Run()`` is timed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=60.0, help="simulated seconds (default 60)")
    args = ap.parse_args(argv)
    try:
        from ns import ns
    except ImportError as e:
        print(f"error: no ns-3 Python package here ({e}): pip install ns3", file=sys.stderr)
        return 2

    ns.Config.SetDefault("ns3::TcpL4Protocol::SocketType", ns.StringValue("ns3::TcpCubic"))
    ns.Config.SetDefault("ns3::TcpSocket::SegmentSize", ns.UintegerValue(1448))
    ns.Config.SetDefault("ns3::TcpSocket::SndBufSize", ns.UintegerValue(8 << 20))
    ns.Config.SetDefault("ns3::TcpSocket::RcvBufSize", ns.UintegerValue(8 << 20))
    ns.Config.SetDefault("ns3::TcpSocketBase::Sack", ns.BooleanValue(True))

    senders, routers, receivers = ns.NodeContainer(), ns.NodeContainer(), ns.NodeContainer()
    senders.Create(2)
    routers.Create(2)
    receivers.Create(2)
    stack = ns.InternetStackHelper()
    for c in (senders, routers, receivers):
        stack.Install(c)

    def link(rate: str, delay: str) -> ns.PointToPointHelper:
        h = ns.PointToPointHelper()
        h.SetDeviceAttribute("DataRate", ns.StringValue(rate))
        h.SetChannelAttribute("Delay", ns.StringValue(delay))
        return h

    access = link("1Gbps", "1.25ms")
    addr = ns.Ipv4AddressHelper()
    sinks_at = []
    for i in range(2):
        addr.SetBase(ns.Ipv4Address(f"10.1.{i}.0"), ns.Ipv4Mask("255.255.255.0"))
        addr.Assign(access.Install(senders.Get(i), routers.Get(0)))
        addr.SetBase(ns.Ipv4Address(f"10.2.{i}.0"), ns.Ipv4Mask("255.255.255.0"))
        sinks_at.append(addr.Assign(access.Install(routers.Get(1), receivers.Get(i))).GetAddress(1))
    narrow = link("100Mbps", "2.5ms")
    narrow.SetQueue("ns3::DropTailQueue", "MaxSize", ns.StringValue("1p"))  # the qdisc queues, not the device
    bottleneck = narrow.Install(routers.Get(0), routers.Get(1))
    fifo = ns.TrafficControlHelper()
    fifo.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", ns.StringValue("250000B"))
    qdisc = fifo.Install(bottleneck).Get(0)  # both directions; the data direction's counts
    addr.SetBase(ns.Ipv4Address("10.3.0.0"), ns.Ipv4Mask("255.255.255.0"))
    addr.Assign(bottleneck)
    ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()

    stop = ns.Seconds(args.duration)
    sinks = []
    for i in range(2):
        sink_addr = ns.InetSocketAddress(sinks_at[i], 5000 + i).ConvertTo()
        bulk = ns.BulkSendHelper("ns3::TcpSocketFactory", sink_addr)
        bulk.SetAttribute("MaxBytes", ns.UintegerValue(0))
        bulk.Install(senders.Get(i)).Stop(stop)
        any_addr = ns.InetSocketAddress(ns.Ipv4Address.GetAny(), 5000 + i).ConvertTo()
        sink = ns.PacketSinkHelper("ns3::TcpSocketFactory", any_addr).Install(receivers.Get(i))
        sinks.append(sink.Get(0))
    ns.Simulator.Stop(stop)

    t0 = time.perf_counter()
    ns.Simulator.Run()
    wall = time.perf_counter() - t0
    pkts = int(qdisc.GetStats().nTotalDequeuedPackets)
    goodput = [ns.DynamicCast[ns.PacketSink](s).GetTotalRx() * 8 / args.duration / 1e6 for s in sinks]
    ns.Simulator.Destroy()
    print(
        json.dumps(
            {
                "ns3": str(getattr(ns, "__version__", "")),
                "sim_seconds": args.duration,
                "wall_seconds": wall,
                "bottleneck_pkts": pkts,
                "pkts_per_wall_s": pkts / wall,
                "goodput_mbps": goodput,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

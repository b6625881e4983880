#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Writes the synthetic hwloc XML fixtures of tests/topo/.

The shapes follow real machines, shrunk where the size adds nothing (few
cores per package): the PCI trees, device classes, vendors and OpenFabrics
port states are what weft reads. Run it from anywhere; it rewrites
dgx8.xml, cpu2s.xml and workstation.xml beside itself. this-vm.xml is
lstopo's own output on the build machine and is not generated.

Check a file with: lstopo --if xml -i FILE --of console
"""
import os
import sys

NVIDIA, MELLANOX, INTEL, PLX = 0x10DE, 0x15B3, 0x8086, 0x10B5
# osdev_type values of hwloc 2.x XML
OS_BLOCK, OS_GPU, OS_NET, OS_OPENFABRICS, OS_COPROC = 0, 1, 2, 3, 5
ACTIVE, DOWN = 4, 1   # /sys/class/infiniband/*/ports/*/state numbers


class Gp:
    """gp_index counter: unique per object in one file."""

    def __init__(self):
        self.n = 0

    def __call__(self):
        self.n += 1
        return self.n


def mask(bits):
    v = 0
    for b in bits:
        v |= 1 << b
    return "0x%08x" % v if v < (1 << 32) else hex(v)


def sets(cpus, nodes):
    c, n = mask(cpus), mask(nodes)
    return ('cpuset="%s" complete_cpuset="%s" nodeset="%s" complete_nodeset="%s"'
            % (c, c, n, n))


def osdev(gp, ind, name, kind, infos=(), subtype=None):
    st = ' subtype="%s"' % subtype if subtype else ""
    lines = ['%s<object type="OSDev" gp_index="%d" name="%s"%s osdev_type="%d">'
             % (ind, gp(), name, st, kind)]
    for k, v in infos:
        lines.append('%s  <info name="%s" value="%s"/>' % (ind, k, v))
    lines.append("%s</object>" % ind)
    return lines


def pcidev(gp, ind, busid, cls, vendor, device, children=()):
    lines = ['%s<object type="PCIDev" gp_index="%d" pci_busid="%s" pci_type="%04x [%04x:%04x] '
             '[%04x:%04x] a1" pci_link_speed="15.753846">'
             % (ind, gp(), busid, cls, vendor, device, vendor, device)]
    for ch in children:
        lines += ch(ind + "  ")
    lines.append("%s</object>" % ind)
    return lines


def bridge(gp, ind, domain_bus, sec, sub, host, children, busid=None, depth=0):
    if host:
        head = ('%s<object type="Bridge" gp_index="%d" bridge_type="0-1" depth="%d" '
                'bridge_pci="%04x:[%02x-%02x]">' % (ind, gp(), depth, 0, sec, sub))
    else:
        head = ('%s<object type="Bridge" gp_index="%d" bridge_type="1-1" depth="%d" '
                'bridge_pci="%04x:[%02x-%02x]" pci_busid="%s" pci_type="0604 [%04x:8764] '
                '[0000:0000] ca" pci_link_speed="15.753846">'
                % (ind, gp(), depth, 0, sec, sub, busid, PLX))
    lines = [head]
    for ch in children:
        lines += ch(ind + "  ")
    lines.append("%s</object>" % ind)
    return lines


def gpu(gp, busid, index):
    def make(ind):
        return pcidev(gp, ind, busid, 0x0302, NVIDIA, 0x20b0, [
            lambda i: osdev(gp, i, "cuda%d" % index, OS_COPROC, [("CoProcType", "CUDA"),
                            ("GPUVendor", "NVIDIA Corporation")], "CUDA"),
            lambda i: osdev(gp, i, "nvml%d" % index, OS_GPU, [("GPUVendor", "NVIDIA Corporation")],
                            "NVML")])
    return make


def ib_nic(gp, busid, index, state, netdev):
    def make(ind):
        return pcidev(gp, ind, busid, 0x0207, MELLANOX, 0x101b, [
            lambda i: osdev(gp, i, netdev, OS_NET, [("Address", "00:00:10:49:fe:80:00:00:00:00:"
                                                    "00:00:b8:ce:f6:03:00:%02x:%02x:%02x"
                                                    % (index, index, index))]),
            lambda i: osdev(gp, i, "mlx5_%d" % index, OS_OPENFABRICS, [
                ("NodeGUID", "b8ce:f603:00%02x:%04x" % (index, index)),
                ("SysImageGUID", "b8ce:f603:00%02x:%04x" % (index, index)),
                ("Port1State", str(state)), ("Port1LID", "0x%x" % (index + 1)),
                ("Port1LMC", "0"), ("Port1GID0", "fe80:0000:0000:0000:b8ce:f603:00%02x:%04x"
                                    % (index, index))])])
    return make


def eth_nic(gp, busid, name):
    def make(ind):
        return pcidev(gp, ind, busid, 0x0200, INTEL, 0x1521, [
            lambda i: osdev(gp, i, name, OS_NET, [("Address", "3c:ec:ef:00:00:01")])])
    return make


def nvme(gp, busid, name):
    def make(ind):
        return pcidev(gp, ind, busid, 0x0108, 0x144D, 0xA824, [
            lambda i: osdev(gp, i, name, OS_BLOCK, [("Size", "3750738264")])])
    return make


def package(gp, ind, index, cpus, node, l3_size, io):
    s = sets(cpus, [node])
    lines = ['%s<object type="Package" os_index="%d" %s gp_index="%d">' % (ind, index, s, gp()),
             '%s  <info name="CPUVendor" value="AuthenticAMD"/>' % ind,
             '%s  <object type="NUMANode" os_index="%d" %s gp_index="%d" local_memory="%d"/>'
             % (ind, node, s, gp(), 256 << 30),
             '%s  <object type="L3Cache" os_index="%d" %s gp_index="%d" cache_size="%d" '
             'depth="3" cache_linesize="64" cache_associativity="16" cache_type="0">'
             % (ind, index, s, gp(), l3_size)]
    for c in cpus:
        one = sets([c], [node])
        lines += ['%s    <object type="Core" os_index="%d" %s gp_index="%d">' % (ind, c, one, gp()),
                  '%s      <object type="PU" os_index="%d" %s gp_index="%d"/>'
                  % (ind, c, one, gp()),
                  "%s    </object>" % ind]
    lines.append("%s  </object>" % ind)
    for ch in io:
        lines += ch(ind + "  ")
    lines.append("%s</object>" % ind)
    return lines


def document(gp, cpus, nodes, hostname, body):
    s = sets(cpus, nodes)
    a = 'allowed_cpuset="%s" allowed_nodeset="%s"' % (mask(cpus), mask(nodes))
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             '<!DOCTYPE topology SYSTEM "hwloc2.dtd">',
             '<!-- generated by tests/topo/gen_fixtures.py: edit that, not this -->',
             '<topology version="2.0">',
             '  <object type="Machine" os_index="0" %s %s gp_index="%d">' % (s, a, gp()),
             '    <info name="Backend" value="Linux"/>',
             '    <info name="OSName" value="Linux"/>',
             '    <info name="HostName" value="%s"/>' % hostname,
             '    <info name="Architecture" value="x86_64"/>']
    for part in body:
        lines += part("    ")
    lines += ["  </object>", "</topology>", ""]
    return "\n".join(lines)


def dgx8():
    """Two sockets, four PCIe switches, each with two GPUs and one
    InfiniBand NIC (like a DGX A100 with its compute NICs), plus an
    onboard Ethernet port and an NVMe drive on socket 0's root complex."""
    gp = Gp()
    cpus = [list(range(0, 8)), list(range(8, 16))]

    def switch_unit(u):
        bus = 0x10 * (u + 1)
        return lambda ind: bridge(gp, ind, 0, bus, bus + 0xf, True, [
            lambda i: bridge(gp, i, 0, bus + 1, bus + 0xf, False, [
                lambda j: bridge(gp, j, 0, bus + 2, bus + 0xf, False, [
                    gpu(gp, "0000:%02x:00.0" % (bus + 3), 2 * u),
                    gpu(gp, "0000:%02x:00.0" % (bus + 4), 2 * u + 1),
                    ib_nic(gp, "0000:%02x:00.0" % (bus + 5), u, ACTIVE, "ibp%ds0" % (bus + 5)),
                ], "0000:%02x:00.0" % (bus + 1), depth=1)
            ], "0000:%02x:01.0" % bus, depth=0)
        ])

    onboard = lambda ind: bridge(gp, ind, 0, 0x00, 0x0f, True, [
        lambda i: bridge(gp, i, 0, 0x01, 0x01, False, [eth_nic(gp, "0000:01:00.0", "eno1")],
                         "0000:00:01.1"),
        lambda i: bridge(gp, i, 0, 0x02, 0x02, False, [nvme(gp, "0000:02:00.0", "nvme0n1")],
                         "0000:00:01.2")])
    body = [lambda ind: package(gp, ind, 0, cpus[0], 0, 256 << 20,
                                [onboard, switch_unit(0), switch_unit(1)]),
            lambda ind: package(gp, ind, 1, cpus[1], 1, 256 << 20,
                                [switch_unit(2), switch_unit(3)])]
    return document(gp, cpus[0] + cpus[1], [0, 1], "dgx-like", body)


def cpu2s():
    """Two sockets, no accelerator, one Ethernet NIC on socket 0."""
    gp = Gp()
    cpus = [list(range(0, 12)), list(range(12, 24))]
    io0 = [lambda ind: bridge(gp, ind, 0, 0x00, 0x0f, True, [
        lambda i: bridge(gp, i, 0, 0x03, 0x03, False, [eth_nic(gp, "0000:03:00.0", "enp3s0f0")],
                         "0000:00:02.0")])]
    io1 = [lambda ind: bridge(gp, ind, 0, 0x80, 0x8f, True, [
        lambda i: bridge(gp, i, 0, 0x81, 0x81, False, [nvme(gp, "0000:81:00.0", "nvme0n1")],
                         "0000:80:01.0")])]
    body = [lambda ind: package(gp, ind, 0, cpus[0], 0, 32 << 20, io0),
            lambda ind: package(gp, ind, 1, cpus[1], 1, 32 << 20, io1)]
    return document(gp, cpus[0] + cpus[1], [0, 1], "cpu-2s", body)


def workstation():
    """One socket, one GPU on its own root port, a ConnectX card whose
    port is down (no cable), and an onboard Ethernet port."""
    gp = Gp()
    cpus = list(range(0, 8))
    io = [lambda ind: bridge(gp, ind, 0, 0x00, 0x0f, True, [
        lambda i: bridge(gp, i, 0, 0x01, 0x01, False, [gpu(gp, "0000:01:00.0", 0)],
                         "0000:00:01.0"),
        lambda i: bridge(gp, i, 0, 0x02, 0x02, False,
                         [ib_nic(gp, "0000:02:00.0", 0, DOWN, "ibp2s0")], "0000:00:01.1"),
        lambda i: bridge(gp, i, 0, 0x03, 0x03, False, [eth_nic(gp, "0000:03:00.0", "eno1")],
                         "0000:00:1c.0")])]
    body = [lambda ind: package(gp, ind, 0, cpus, 0, 32 << 20, io)]
    return document(gp, cpus, [0], "workstation", body)


def main():
    here = os.path.dirname(os.path.abspath(sys.argv[0]))
    for name, make in (("dgx8.xml", dgx8), ("cpu2s.xml", cpu2s),
                       ("workstation.xml", workstation)):
        with open(os.path.join(here, name), "w") as f:
            f.write(make())


if __name__ == "__main__":
    main()

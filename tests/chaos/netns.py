"""A network namespace for one worker, joined to this machine by two veth pairs: one
link to reach Redis, one to reach Postgres, each a /30 in 10.x that exists only
between this namespace and the host. Taking a link's host end down partitions the
worker from that service silently (its packets are dropped, nothing is refused);
bringing it up heals it. Traffic never leaves the machine.
"""

from __future__ import annotations

import random
import subprocess
from dataclasses import dataclass, field


def ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)} failed ({done.returncode}): {done.stderr}")


@dataclass
class Link:
    host_if: str
    ns_if: str
    host_ip: str
    ns_ip: str


@dataclass
class NetNs:
    name: str
    links: dict[str, Link] = field(default_factory=dict)

    @classmethod
    def create(cls, services: tuple[str, ...] = ("redis", "postgres")) -> NetNs:
        tag = f"{random.randrange(1 << 24):06x}"
        ns = cls(f"tkchaos-{tag}")
        ip("netns", "add", ns.name)
        try:
            ip("netns", "exec", ns.name, "ip", "link", "set", "lo", "up")
            second = random.randrange(1, 250)
            for i, service in enumerate(services):
                base = f"10.{200 + i}.{second}"
                link = Link(f"tk{tag}{i}h", f"tk{tag}{i}n", f"{base}.1", f"{base}.2")
                ip("link", "add", link.host_if, "type", "veth", "peer", "name", link.ns_if)
                ns.links[service] = link
                ip("link", "set", link.ns_if, "netns", ns.name)
                ip("addr", "add", f"{link.host_ip}/30", "dev", link.host_if)
                ip("link", "set", link.host_if, "up")
                ip(
                    "netns",
                    "exec",
                    ns.name,
                    "ip",
                    "addr",
                    "add",
                    f"{link.ns_ip}/30",
                    "dev",
                    link.ns_if,
                )
                ip("netns", "exec", ns.name, "ip", "link", "set", link.ns_if, "up")
        except BaseException:
            ns.destroy()
            raise
        return ns

    @property
    def wrap(self) -> list[str]:
        """The argv prefix that runs a command inside the namespace."""
        return ["ip", "netns", "exec", self.name]

    def host_ip(self, service: str) -> str:
        return self.links[service].host_ip

    def partition(self, service: str) -> None:
        ip("link", "set", self.links[service].host_if, "down")

    def heal(self, service: str) -> None:
        ip("link", "set", self.links[service].host_if, "up")

    def destroy(self) -> None:
        """Remove the links and the namespace; safe to call twice, after a failure."""
        for link in self.links.values():
            subprocess.run(["ip", "link", "del", link.host_if], capture_output=True, timeout=30)
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True, timeout=30)

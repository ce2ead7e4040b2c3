"""Who serves each host of a page: the addresses DNS gives, the certificate's names, the
origins an ORIGIN frame announces and whether HTTP/3 is advertised; a seeded default
(``default_topology``) that ``--dns`` / ``--cert`` files replace host by host."""

from __future__ import annotations

import ipaddress
import json
import random
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

from ...engine import derive_seed
from ...errors import InputError

__all__ = ["HostServer", "Topology", "cert_covers", "host_of", "default_topology", "read_topology"]


def cert_covers(san: tuple[str, ...], host: str) -> bool:
    """Is ``host`` one of the certificate's dNSNames (RFC 6125 section 6.4.3: a ``*`` only
    as the complete left-most label, matching exactly one label)?"""
    host = host.lower().rstrip(".")
    for name in san:
        name = name.lower().rstrip(".")
        if name == host:
            return True
        if name.startswith("*.") and "." in host:
            label, rest = host.split(".", 1)
            if label and rest == name[2:]:
                return True
    return False


@dataclass(frozen=True)
class HostServer:
    """What a client meets when it connects to ``host``: the addresses DNS gives, the
    certificate presented for that SNI, the origins an ORIGIN frame announces (None: the
    server sends none) and whether it advertises HTTP/3 (``Alt-Svc: h3``)."""

    host: str
    addresses: tuple[str, ...]
    san: tuple[str, ...]
    announces: tuple[str, ...] | None = None  # hosts (ORIGIN carries https://host)
    h3: bool = True
    provider: str = ""


@dataclass
class Topology:
    """Every host's server: DNS addresses, certificate names, ORIGIN announcements, HTTP/3 support."""

    servers: dict[str, HostServer]
    sources: dict[str, str] = field(default_factory=dict)  # "dns" / "cert": file or "default"

    def __getitem__(self, host: str) -> HostServer:
        return self.servers[host]

    def to_dict(self) -> dict:
        """The DNS and certificate tables as plain JSON values."""
        return {
            "dns": {h: list(s.addresses) for h, s in self.servers.items()},
            "cert": {
                h: {
                    "san": list(s.san),
                    "origin": None if s.announces is None else list(s.announces),
                    "h3": s.h3,
                    "provider": s.provider,
                }
                for h, s in self.servers.items()
            },
        }

    def digest(self) -> str:
        """16 hex digits of the SHA-256 of ``to_dict()``: names the topology in results."""
        import hashlib

        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()[:16]


def host_of(origin: str) -> str:
    """The host of an origin or URL (brackets kept for IPv6), without the port."""
    authority = origin.split("://", 1)[-1].split("/", 1)[0]
    if authority.startswith("["):
        return authority.split("]", 1)[0] + "]"
    return authority.rsplit(":", 1)[0] if authority.count(":") == 1 else authority


def _site(host: str) -> str:
    return ".".join(host.split(".")[-2:])


# (name, share of third-party sites, DNS answers per "site" or per "host", sends ORIGIN)
CDNS = (("cdn-1", 0.35, "site", True), ("cdn-2", 0.25, "host", True), ("cdn-3", 0.15, "site", True))
CDN_POOL_ADDRESSES = 12  # addresses a CDN hands out (its customers share them)
SHARED_CERT_P = 0.3  # a CDN customer on the CDN's shared multi-site certificate
SELF_HOSTED_H3_P = 0.3


def default_topology(hosts: list[str], document_host: str, seed: int) -> Topology:
    """A realistic, seeded default for the page's hosts (see the module docstring).

    The first party: its ``api.`` host self-hosted, the others on ``cdn-1``.  Each
    third-party site: on a CDN with the shares of ``CDNS``, else self-hosted.  Every site
    has a wildcard certificate ``*.site`` + ``site``; a CDN customer is on the CDN's
    shared certificate (all such customers' names) with probability ``SHARED_CERT_P``.
    A CDN answers DNS with two of its ``CDN_POOL_ADDRESSES`` addresses, the same for every
    host of a site (``site``) or drawn per host name (``host``); customers on the shared
    certificate get the CDN's first two addresses.  A self-hosted site has one address of
    its own.  CDNs announce in ORIGIN every page host they serve under the same
    certificate; self-hosted servers send no ORIGIN."""
    rng = random.Random(derive_seed(seed, "coalescing-topology"))
    first_party = _site(document_host)
    sites = list(dict.fromkeys(_site(h) for h in hosts))
    provider: dict[str, str] = {}
    shared: dict[str, bool] = {}
    for site in sites:  # one draw pair per site, in page order
        u, v = rng.random(), rng.random()
        if site == first_party:
            provider[site], shared[site] = "cdn-1", False
            continue
        acc, chosen = 0.0, "self"
        for name, share, _, _ in CDNS:
            acc += share
            if u < acc:
                chosen = name
                break
        provider[site] = chosen
        shared[site] = chosen != "self" and v < SHARED_CERT_P
    cdn = {name: (mode, origin) for name, _, mode, origin in CDNS}
    pool = {name: [f"198.51.{100 + i}.{k + 1}" for k in range(CDN_POOL_ADDRESSES)] for i, (name, *_) in enumerate(CDNS)}
    shared_san = {
        name: tuple(n for s in sites if provider[s] == name and shared[s] for n in (f"*.{s}", s)) for name in cdn
    }
    site_addr: dict[str, tuple[str, ...]] = {}
    self_index = 0
    servers: dict[str, HostServer] = {}
    where: dict[str, str] = {}  # host -> provider
    for host in hosts:
        site = _site(host)
        prov = provider[site]
        if site == first_party and host.startswith("api."):
            prov = "self"
        where[host] = prov
    for host in hosts:
        site, prov = _site(host), where[host]
        if prov == "self":
            if (site, "self") not in site_addr:
                self_index += 1
                site_addr[(site, "self")] = (
                    (f"192.0.2.{self_index}",) if self_index < 255 else (f"203.0.113.{self_index - 254}",)
                )
            addresses = site_addr[(site, "self")]
            san = (f"*.{site}", site)
            h3 = random.Random(derive_seed(seed, f"h3:{site}")).random() < SELF_HOSTED_H3_P
        else:
            mode, _ = cdn[prov]
            if shared[site]:
                addresses = tuple(pool[prov][:2])
                san = shared_san[prov]
            else:
                key = site if mode == "site" else host
                r = random.Random(derive_seed(seed, f"dns:{prov}:{key}"))
                addresses = tuple(r.sample(pool[prov], 2))
                san = (f"*.{site}", site)
            h3 = True
        servers[host] = HostServer(host=host, addresses=addresses, san=san, h3=h3, provider=prov)
    # ORIGIN: a CDN names every page host on the same CDN that its certificate covers.
    for host, s in list(servers.items()):
        if s.provider == "self" or not cdn[s.provider][1]:
            continue
        announced = tuple(h for h in hosts if where[h] == s.provider and cert_covers(s.san, h))
        servers[host] = replace(s, announces=announced)
    return Topology(servers=servers, sources={"dns": "default", "cert": "default"})


# -- files -------------------------------------------------------------------------------


def _load_table(path: str, kind: str) -> dict:
    from ...traces._io import read_input

    p = Path(path)
    try:
        if not p.exists() and not p.is_symlink():
            raise FileNotFoundError
        # a regular file of at most 16 MiB: a FIFO or /dev/zero is refused, not read forever
        text = read_input(path, limit=16 << 20, what=f"{kind} file").decode("utf-8")
    except FileNotFoundError:
        raise InputError(f"no such {kind} file.", path=path) from None
    except UnicodeDecodeError:
        raise InputError(f"the {kind} file is not UTF-8 text.", path=path) from None
    if p.suffix.lower() == ".toml":
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise InputError(f"not valid TOML ({str(exc).splitlines()[0]}).", path=path) from None
        except RecursionError:
            raise InputError(f"the {kind} file is nested deeper than the parser goes.", path=path) from None
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}).", path=path
            ) from None
        except RecursionError:
            raise InputError(f"the {kind} file is nested deeper than the parser goes.", path=path) from None
        except ValueError as exc:  # an integer past sys.get_int_max_str_digits()
            raise InputError(
                f"the {kind} file holds a number the parser refuses ({str(exc).split(';')[0]}).", path=path
            ) from None
    if not isinstance(data, dict):
        raise InputError(f"the {kind} file must hold a table (host -> value), not {type(data).__name__}.", path=path)
    if kind in data and isinstance(data[kind], dict):  # {"dns": {...}} or the table itself
        data = data[kind]
    return data


def _host_key(host, path: str, kind: str) -> str:
    h = str(host).strip().lower().rstrip(".")
    if not h or " " in h or "/" in h:
        raise InputError(f"{kind}: {host!r} is not a host name.", path=path)
    return h


def _dns_file(path: str) -> dict[str, tuple[str, ...]]:
    out = {}
    for host, value in _load_table(path, "dns").items():
        h = _host_key(host, path, "dns")
        values = [value] if isinstance(value, str) else value
        if not isinstance(values, list) or not values:
            raise InputError(
                f"dns: {host!r}: expected an address or a non-empty list of addresses, got {value!r}.", path=path
            )
        addrs = []
        for a in values:
            try:
                addrs.append(str(ipaddress.ip_address(str(a))))
            except ValueError:
                raise InputError(f"dns: {host!r}: {a!r} is not an IP address.", path=path) from None
        out[h] = tuple(addrs)
    return out


def _check_names(names, path: str, where: str, what: str) -> tuple[str, ...]:
    if not isinstance(names, list) or not all(isinstance(n, str) and n.strip() for n in names):
        raise InputError(f"cert: {where}: {what} must be a list of host names, got {names!r}.", path=path)
    out = []
    for n in names:
        n = n.strip().lower().rstrip(".")
        if "*" in n and not (n.startswith("*.") and "*" not in n[2:] and "." in n[2:]):
            # RFC 6125 section 6.4.3 (as browsers apply it): only a whole left-most label.
            raise InputError(
                f"cert: {where}: {n!r} is not a valid name (a wildcard is only '*.' in front of two or more labels).",
                path=path,
            )
        out.append(n)
    return tuple(out)


def _cert_file(path: str) -> dict[str, dict]:
    out = {}
    for host, value in _load_table(path, "cert").items():
        h = _host_key(host, path, "cert")
        where = repr(host)
        if isinstance(value, list):
            out[h] = {"san": _check_names(value, path, where, "the SAN list")}
            continue
        if not isinstance(value, dict) or "san" not in value:
            raise InputError(f"cert: {where}: expected a SAN list or a table with 'san', got {value!r}.", path=path)
        unknown = set(value) - {"san", "origin", "h3", "provider"}
        if unknown:
            raise InputError(
                f"cert: {where}: unknown key(s) {', '.join(sorted(map(str, unknown)))} "
                f"(keys: san, origin, h3, provider).",
                path=path,
            )
        entry = {"san": _check_names(value["san"], path, where, "'san'")}
        if "origin" in value:
            entry["announces"] = (
                None
                if value["origin"] is None
                else tuple(host_of(o) for o in _check_names(value["origin"], path, where, "'origin'"))
            )
        if "h3" in value:
            if not isinstance(value["h3"], bool):
                raise InputError(f"cert: {where}: 'h3' must be true or false, got {value['h3']!r}.", path=path)
            entry["h3"] = value["h3"]
        if "provider" in value:
            entry["provider"] = str(value["provider"])
        out[h] = entry
    return out


def read_topology(
    hosts: list[str], document_host: str, seed: int, dns_path: str | None = None, cert_path: str | None = None
) -> Topology:
    """The default topology, with what ``dns_path`` / ``cert_path`` say replacing it host by
    host.  A host given a certificate by the file but no ``origin`` key announces, in
    ORIGIN, the page hosts its certificate covers."""
    topo = default_topology(hosts, document_host, seed)
    dns = _dns_file(dns_path) if dns_path else {}
    certs = _cert_file(cert_path) if cert_path else {}
    servers = dict(topo.servers)
    for host in hosts:
        s = servers[host]
        if host in dns:
            s = replace(s, addresses=dns[host])
        if host in certs:
            c = certs[host]
            announces = c.get("announces", tuple(h for h in hosts if cert_covers(c["san"], h)))
            s = replace(s, san=c["san"], announces=announces, h3=c.get("h3", s.h3), provider=c.get("provider", "file"))
        servers[host] = s
    sources = {"dns": dns_path or "default", "cert": cert_path or "default"}
    return Topology(servers=servers, sources=sources)

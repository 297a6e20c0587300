"""The SSRF guard: a corpus of tricky URLs, the address classifier, DNS answers, redirects and pinning.

Real aiohttp against the local fake; the only stand-in is a stub DNS function handed to the guard's
constructor (it is the guard's injectable resolver), because a test cannot make real DNS answer with a
public address one moment and a private one the next.
"""

from __future__ import annotations

import ipaddress

import pytest

from core.evidence.errors import BlockedURL, HostNotFound
from core.evidence.fetch import PageFetcher, guarded_session
from core.evidence.ssrf import GuardedResolver, SSRFGuard, classify_address, legacy_ipv4
from tests.fakes.search_api import FakeSearchAPI

REFUSED = [
    # loopback, private, link-local, CGNAT, multicast, reserved, unspecified
    "http://127.0.0.1/", "http://127.255.255.254:8080/x", "http://10.0.0.1/", "http://172.16.5.4/",
    "http://192.168.1.1/admin", "http://169.254.10.10/", "http://100.64.0.1/", "http://224.0.0.1/",
    "http://240.0.0.1/", "http://0.0.0.0/", "http://255.255.255.255/", "http://192.0.2.10/",
    "http://198.18.0.1/",
    # cloud metadata
    "http://169.254.169.254/latest/meta-data/", "http://[fd00:ec2::254]/latest/", "http://100.100.100.200/",
    "http://metadata.google.internal/computeMetadata/v1/", "http://metadata/",
    # IPv6 forms
    "http://[::1]/", "http://[::]/", "http://[fe80::1]/", "http://[fe80::1%25eth0]/", "http://[fc00::1]/",
    "http://[fd12:3456::1]/", "http://[ff02::1]/",
    "http://[::ffff:127.0.0.1]/", "http://[::ffff:7f00:1]/", "http://[::ffff:10.0.0.1]/",
    "http://[::ffff:169.254.169.254]/", "http://[::127.0.0.1]/", "http://[64:ff9b::7f00:1]/",
    "http://[2002:7f00:0001::]/", "http://[2002:a9fe:a9fe::]/",
    # integer / octal / hex / short IPv4 spellings
    "http://2130706433/", "http://0x7f000001/", "http://0177.0.0.1/", "http://0x7f.0.0.1/", "http://127.1/",
    "http://127.0.1/", "http://017700000001/", "http://0/", "http://3232235521/", "http://0xa9fea9fe/",
    "http://134744072/",  # 8.8.8.8 written as an integer: disguised forms are refused whatever they point to
    # names that are local by convention, with and without the trailing dot, any case
    "http://localhost/", "http://localhost./", "http://LOCALHOST/", "http://api.localhost/", "http://printer.local/",
    "http://db.internal/", "http://router.home.arpa/", "http://intranet/", "http://ip6-localhost/",
    # userinfo tricks: the host is what counts
    "http://example.com@127.0.0.1/", "http://user:pass@10.1.2.3:8080/",
    # parser-confusion tricks (backslash vs userinfo, broken brackets, impossible ports)
    "http://example.com\\@127.0.0.1/", "http://127.0.0.1\\@example.com/", "http://[::1", "http://example.com:99999/",
    "http://a..b.example/",
    # full-width digits normalise to 127.0.0.1
    "http://\uff11\uff12\uff17.\uff10.\uff10.\uff11/",
    # not http(s) / not a host
    "file:///etc/passwd", "ftp://example.com/", "gopher://127.0.0.1:6379/_INFO", "javascript:alert(1)",
    "http:///nohost", "http://%31%32%37.0.0.1/", "http://exa mple.com/", "dict://127.0.0.1:11211/",
]


@pytest.mark.parametrize("url", REFUSED)
async def test_corpus_is_refused_without_touching_dns(url: str):
    # The resolver raises if called: everything here must be decided from the URL alone.
    async def no_dns(host: str, port: int) -> list[str]:
        raise AssertionError(f"asked DNS about {host}")

    with pytest.raises(BlockedURL) as err:
        await SSRFGuard(resolve=no_dns).check(url)
    assert err.value.sentence.startswith("The link was not opened")
    assert "Traceback" not in err.value.sentence


@pytest.mark.parametrize("url", ["https://example.com/a?b=c", "http://93.184.216.34/", "http://[2606:4700::1111]/",
                                 "https://xn--80ak6aa92e.com/", "http://news.example.org:8080/path"])
async def test_public_urls_pass(url: str):
    async def public_dns(host: str, port: int) -> list[str]:
        return ["93.184.216.34"]

    checked = await SSRFGuard(resolve=public_dns).check(url)
    assert checked.addresses and all(classify_address(a) is None for a in checked.addresses)


@pytest.mark.parametrize(("address", "reason"), [
    ("127.0.0.1", "a loopback address"), ("10.9.8.7", "a private network address"),
    ("169.254.169.254", "a cloud metadata address"), ("fd00:ec2::254", "a cloud metadata address"),
    ("100.127.255.255", "a carrier-grade NAT address"), ("::ffff:192.168.0.1", "a private network address"),
    ("::ffff:169.254.169.254", "a cloud metadata address"), ("239.255.255.250", "a multicast address"),
    ("fe80::abcd", "a link-local address"), ("0.1.2.3", "an unspecified address"), ("::", "an unspecified address"),
    ("2001:db8::1", "a reserved address"), ("203.0.113.9", "a reserved address"),
])
def test_classify_address_names_the_reason(address: str, reason: str):
    assert classify_address(address) == reason


@pytest.mark.parametrize("address", ["8.8.8.8", "93.184.216.34", "2606:4700::1111", "::ffff:8.8.8.8",
                                     "1.1.1.1", "100.128.0.1"])
def test_classify_address_public(address: str):
    assert classify_address(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize(("host", "expected"), [
    ("2130706433", "127.0.0.1"), ("0x7f000001", "127.0.0.1"), ("0177.0.0.1", "127.0.0.1"),
    ("127.1", "127.0.0.1"), ("10.1", "10.0.0.1"), ("192.168.257", "192.168.1.1"), ("0", "0.0.0.0"),
    ("1.2.3.4", "1.2.3.4"),
])
def test_legacy_ipv4_reads_like_inet_aton(host: str, expected: str):
    assert legacy_ipv4(host) == ipaddress.IPv4Address(expected)


@pytest.mark.parametrize("host", ["example.com", "1.2.3.4.5", "08.1.1.1", "4294967296", "256.1.1.1", "0x"])
def test_legacy_ipv4_ignores_names_and_impossible_numbers(host: str):
    assert legacy_ipv4(host) is None


async def test_real_resolver_refuses_a_name_that_resolves_to_loopback():
    # `localhost` is refused by name in check(); resolve_checked is the address check on its own, with
    # the operating system's resolver (/etc/hosts), as used for every other name.
    with pytest.raises(BlockedURL, match="loopback"):
        await SSRFGuard().resolve_checked("localhost", 80)


async def test_one_private_answer_refuses_the_whole_name():
    async def mixed(host: str, port: int) -> list[str]:
        return ["93.184.216.34", "10.0.0.7"]

    with pytest.raises(BlockedURL, match="private network address .after looking up its name"):
        await SSRFGuard(resolve=mixed).check("https://innocent.example.com/")


async def test_dns_failure_is_host_not_found():
    async def nxdomain(host: str, port: int) -> list[str]:
        raise OSError(-2, "Name or service not known")

    with pytest.raises(HostNotFound):
        await SSRFGuard(resolve=nxdomain).check("https://no-such-site.example/")


async def test_allow_list_is_by_exact_host_and_does_not_open_other_spellings():
    guard = SSRFGuard(["127.0.0.1", "Wiki.Corp.Example."])
    assert (await guard.check("http://127.0.0.1:9999/x")).allow_listed
    assert (await guard.check("http://wiki.corp.example/")).allow_listed
    for url in ("http://2130706433:9999/", "http://[::ffff:127.0.0.1]:9999/", "http://localhost:9999/",
                "http://127.0.0.2:9999/"):
        with pytest.raises(BlockedURL):
            await guard.check(url)


async def test_default_settings_refuse_loopback(settings):
    assert settings.fetch_allow_hosts == []
    with pytest.raises(BlockedURL):
        await SSRFGuard(settings.fetch_allow_hosts).check("http://127.0.0.1:8080/")


@pytest.fixture
async def fake():
    server = await FakeSearchAPI().start()
    yield server
    await server.stop()


@pytest.mark.parametrize("target", ["http://10.0.0.1/", "http://169.254.169.254/latest/meta-data/",
                                    "http://localhost:{port}/ok", "http://2130706433:{port}/ok",
                                    "http://[::1]:{port}/ok", "http://127.0.0.2:{port}/ok", "file:///etc/passwd"])
async def test_redirect_to_a_private_address_is_refused_before_connecting(fake: FakeSearchAPI, target: str):
    fake.page("/ok", "<p>secret intranet page</p>")
    guard = SSRFGuard(["127.0.0.1"])  # the fake itself is allowed; where it redirects to is not
    async with guarded_session(guard) as session:
        fetcher = PageFetcher(session, guard, timeout_s=5)
        with pytest.raises(BlockedURL):
            await fetcher.fetch(fake.url("/redirect?to=") + target.format(port=fake.port))
    # Only the redirecting page was requested; the intranet page never was.
    assert [p for _r, p, _q, _h in fake.requests] == ["/redirect"]


async def test_redirect_chain_is_checked_at_every_hop(fake: FakeSearchAPI):
    fake.page("/final", "<p>ok</p>")
    hop2 = fake.url("/redirect?to=http://10.1.1.1/")
    guard = SSRFGuard(["127.0.0.1"])
    async with guarded_session(guard) as session:
        with pytest.raises(BlockedURL):
            await PageFetcher(session, guard).fetch(fake.url("/redirect?to=") + hop2.replace("?", "%3F").replace("=", "%3D"))
    assert [p for _r, p, _q, _h in fake.requests] == ["/redirect", "/redirect"]


async def test_connector_rechecks_dns_at_connect_time_so_rebinding_fails():
    """A name that is public when checked and private when the connector resolves it (DNS rebinding):
    the connector only dials what the guard accepts, so the second answer is refused, no socket opened."""
    answers = [["93.184.216.34"], ["127.0.0.1"]]
    asked: list[str] = []

    async def rebinding(host: str, port: int) -> list[str]:
        asked.append(host)
        return answers[min(len(asked), len(answers)) - 1]

    guard = SSRFGuard(resolve=rebinding)
    async with guarded_session(guard) as session:
        with pytest.raises(BlockedURL, match="loopback"):
            await PageFetcher(session, guard, timeout_s=5).fetch("http://rebind.example.net/")
    assert asked == ["rebind.example.net", "rebind.example.net"]


async def test_guarded_resolver_returns_only_checked_numeric_addresses():
    async def public(host: str, port: int) -> list[str]:
        return ["93.184.216.34", "2606:2800:220:1::248"]

    results = await GuardedResolver(SSRFGuard(resolve=public)).resolve("example.com", 443)
    assert [r["host"] for r in results] == ["93.184.216.34", "2606:2800:220:1::248"]
    assert all(r["hostname"] == "example.com" and r["port"] == 443 for r in results)

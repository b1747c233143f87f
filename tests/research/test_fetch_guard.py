"""The page fetcher: SSRF refusals (before any connection), the operator's allow list, DNS pinning,
and pages that are fetched but unusable.

Two fakes: `allowed` on 127.0.0.2 (the one network the fetcher is told to allow) and `forbidden`
on 127.0.0.1 (never allowed: its `connections` count staying at 0 proves a refusal happened
before connecting).
"""

from __future__ import annotations

import asyncio
import datetime
import socket
import ssl
import time
from urllib.parse import quote

import pytest

from debates.search.addresses import vet
from debates.search.errors import FetchFailed, FetchRefused
from debates.search.fetch import PageFetcher
from testkit.fake_search import FakeSearchServer

ALLOWED = ("127.0.0.2/32",)
ARTICLE = (
    "Shade from street trees lowers pavement temperatures on summer afternoons.\n\n"
    "Trees also cool the air by evaporating water through their leaves."
)


@pytest.fixture(scope="module")
def allowed():
    with FakeSearchServer(host="127.0.0.2") as fake:
        fake.add_page("trees", "How street trees cool a city", ARTICLE)
        yield fake


@pytest.fixture(scope="module")
def forbidden():
    with FakeSearchServer(host="127.0.0.1") as fake:
        fake.add_page("secret", "Internal admin", "Nothing here may leave the server.")
        yield fake


@pytest.fixture(autouse=True)
def clean(allowed, forbidden):
    allowed.reset()
    forbidden.reset()


def fetcher(**kwargs) -> PageFetcher:
    return PageFetcher(ALLOWED, **kwargs)


# -- refused before connecting ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://10.1.2.3/", "10.1.2.3 is a private address"),
        ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local address"),
        ("http://[::1]/", "::1 is a loopback address"),
        ("http://[::ffff:127.0.0.1]/", "is a loopback address"),
        ("http://0.0.0.0/", "is an unspecified address"),
        ("http://224.0.0.1/", "is a multicast address"),
        ("http://100.64.0.1/", "is not a public address"),
        ("ftp://example.com/file.txt", "only http and https"),
        ("file:///etc/passwd", "only http and https"),
        ("http:///no-host", "names no host"),
    ],
)
async def test_refused_urls(url, why):
    with pytest.raises(FetchRefused, match=why.replace(".", r"\.").replace("[", r"\[")):
        await fetcher().fetch(url)


async def test_metadata_refusal_message_names_host_reason_and_remedy():
    with pytest.raises(FetchRefused) as caught:
        await PageFetcher().fetch("http://169.254.169.254/latest/meta-data/")
    assert str(caught.value) == (
        "http://169.254.169.254/latest/meta-data/ was not fetched: 169.254.169.254 is a link-local address; "
        "the server fetches only public addresses (AGORA_FETCH_ALLOWED_NETWORKS lets an operator allow a network)"
    )
    assert not caught.value.retryable


async def test_loopback_ip_refused_without_connecting(forbidden):
    with pytest.raises(FetchRefused, match="127.0.0.1 is a loopback address"):
        await fetcher().fetch(forbidden.page_url("secret"))
    assert forbidden.connections == 0


async def test_a_name_resolving_to_loopback_is_refused_without_connecting(forbidden):
    url = f"http://localhost:{forbidden.port}/pages/secret"
    with pytest.raises(FetchRefused, match=r"localhost resolves to (127\.0\.0\.1|::1), which is a loopback address"):
        await fetcher().fetch(url)
    assert forbidden.connections == 0


async def test_redirect_to_loopback_is_refused_without_connecting(allowed, forbidden):
    url = allowed.redirect_url(forbidden.page_url("secret"))
    with pytest.raises(FetchRefused, match="redirected to a refused address.*127.0.0.1 is a loopback address"):
        await fetcher().fetch(url)
    assert [r.path for r in allowed.requests] == [url.removeprefix(allowed.base_url)]  # the first hop went
    assert forbidden.connections == 0


async def test_redirect_to_metadata_service_is_refused(allowed):
    url = allowed.redirect_url("http://169.254.169.254/latest/meta-data/iam/")
    with pytest.raises(FetchRefused, match="169.254.169.254 is a link-local address"):
        await fetcher().fetch(url)
    assert len(allowed.requests) == 1


async def test_redirect_loop_is_refused_after_max_redirects(allowed):
    with pytest.raises(FetchRefused, match="more than 3 times"):
        await fetcher(max_redirects=3).fetch(allowed.url("/loop"))
    assert len(allowed.requests) == 4  # the first request and three redirects, then it stopped


async def test_any_private_address_of_a_name_refuses_it(monkeypatch):
    """A name with one public and one private address is refused: the connection could go to either."""
    loop = asyncio.get_running_loop()

    async def getaddrinfo(host, port, **kwargs):
        return [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.215.14", port)),
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.5", port)),
        ]

    monkeypatch.setattr(loop, "getaddrinfo", getaddrinfo)
    with pytest.raises(FetchRefused, match="mixed.example resolves to 10.0.0.5, which is a private address"):
        await vet("https://mixed.example/a")
    parts, address = await vet("https://mixed.example/a", ["10.0.0.0/8"])
    assert (parts.hostname, address) == ("mixed.example", "93.184.215.14")


async def test_vet_passes_a_public_literal_and_rejects_a_bad_allow_list():
    parts, address = await vet("https://93.184.215.14:8443/x?y=1")
    assert (parts.scheme, parts.port, address) == ("https", 8443, "93.184.215.14")
    with pytest.raises(ValueError, match="not a CIDR network"):
        PageFetcher(["10.0.0.0/33"])


# -- allowed ------------------------------------------------------------------------------------


async def test_allowed_network_lets_a_page_through(allowed):
    page = await fetcher().fetch(allowed.page_url("trees"))
    assert page.title == "How street trees cool a city"
    assert "Shade from street trees lowers pavement temperatures" in page.text
    assert page.final_url == page.url == allowed.page_url("trees")
    assert allowed.connections == 1


async def test_redirects_within_the_allowed_network_are_followed(allowed):
    # relative Location (/pages/trees) inside an absolute one: both resolve against the current URL
    url = allowed.redirect_url(allowed.redirect_url("/pages/trees"))
    page = await fetcher().fetch(url)
    assert page.url == url
    assert page.final_url == allowed.page_url("trees")
    assert "evaporating water" in page.text
    assert len(allowed.requests) == 3


async def test_connection_is_pinned_to_the_vetted_address(allowed, monkeypatch):
    """DNS rebinding: the name resolves to the allowed address for the check and to 127.0.0.1
    afterwards. The fetch must connect to the address it vetted and send the name as Host."""
    loop = asyncio.get_running_loop()
    answers = ["127.0.0.2", "127.0.0.1"]
    asked = []

    async def getaddrinfo(host, port, **kwargs):
        asked.append(host)
        ip = answers.pop(0) if len(answers) > 1 else answers[0]
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, port))]

    monkeypatch.setattr(loop, "getaddrinfo", getaddrinfo)
    page = await fetcher().fetch(f"http://rebind.test:{allowed.port}/pages/trees")
    assert "Shade from street trees" in page.text
    assert asked == ["rebind.test"]  # resolved once, by the guard
    assert allowed.connections == 1


async def test_host_header_names_the_host_not_the_address(allowed, monkeypatch):
    loop = asyncio.get_running_loop()

    async def getaddrinfo(host, port, **kwargs):
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.2", port))]

    monkeypatch.setattr(loop, "getaddrinfo", getaddrinfo)
    await fetcher().fetch(f"http://user:pw@pages.test:{allowed.port}/pages/trees")
    [seen] = allowed.requests
    assert seen.path == "/pages/trees"
    assert seen.headers["host"] == f"pages.test:{allowed.port}"  # what a virtual host routes on
    assert "authorization" not in seen.headers  # user:pw in a result URL is not sent


# -- fetched but unusable -----------------------------------------------------------------------


async def test_junk_html_has_no_readable_text(allowed):
    with pytest.raises(FetchFailed, match="no readable text"):
        await fetcher().fetch(allowed.url("/junk"))


async def test_big_page_is_cut_off(allowed):
    started = time.monotonic()
    with pytest.raises(FetchFailed, match="larger than 2,000,000 bytes"):
        await fetcher().fetch(allowed.url("/big"))
    assert time.monotonic() - started < 5


async def test_slow_page_times_out(allowed):
    started = time.monotonic()
    with pytest.raises(FetchFailed, match="longer than 0.5 s"):
        await fetcher(timeout=0.5).fetch(allowed.url("/slow"))
    assert time.monotonic() - started < 2


async def test_image_is_the_wrong_content_type(allowed):
    with pytest.raises(FetchFailed, match="image/png, not a web page"):
        await fetcher().fetch(allowed.url("/image"))


async def test_missing_page_reports_the_status(allowed):
    with pytest.raises(FetchFailed, match="HTTP 404"):
        await fetcher().fetch(allowed.url("/pages/" + quote("no-such-page")))


async def test_plain_text_is_read_as_is(allowed):
    page = await fetcher().fetch(allowed.url("/text"))
    assert page.title == "Plain notes"
    assert page.text == "Plain notes\n\nThe moon pulls the sea."


async def test_text_is_cut_to_max_chars(allowed):
    page = await fetcher(max_chars=40).fetch(allowed.page_url("trees"))
    assert len(page.text) == 40


# -- https: the pinned address, the real name ---------------------------------------------------


def tls_contexts(tmp_path, name: str) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A server context holding a certificate for `name` from a throwaway CA, and a client context
    that trusts only that CA."""
    x509 = pytest.importorskip("cryptography.x509")
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)

    def issue(subject_cn, issuer_cn, key, signing_key, *, ca, san=None):
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject_cn)]))
            .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer_cn)]))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if san:
            builder = builder.add_extension(x509.SubjectAlternativeName([x509.DNSName(san)]), critical=False)
        return builder.sign(signing_key, hashes.SHA256())

    ca_key, leaf_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = issue("Agora test CA", "Agora test CA", ca_key, ca_key, ca=True)
    leaf = issue(name, "Agora test CA", leaf_key, ca_key, ca=False, san=name)
    cert_file, key_file = tmp_path / "leaf.pem", tmp_path / "leaf.key"
    cert_file.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        leaf_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(cert_file, key_file)
    client_ctx = ssl.create_default_context(cadata=ca.public_bytes(serialization.Encoding.PEM).decode())
    return server_ctx, client_ctx


async def test_https_sends_the_name_in_sni_and_checks_the_certificate_against_it(tmp_path, monkeypatch):
    server_ctx, client_ctx = tls_contexts(tmp_path, "pages.test")
    names: list[str | None] = []
    server_ctx.sni_callback = lambda sock, name, ctx: names.append(name)
    loop = asyncio.get_running_loop()

    async def getaddrinfo(host, port, **kwargs):
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.2", port))]

    monkeypatch.setattr(loop, "getaddrinfo", getaddrinfo)
    with FakeSearchServer(host="127.0.0.2", ssl_context=server_ctx) as tls:
        tls.add_page("trees", "How street trees cool a city", ARTICLE)
        pages = PageFetcher(ALLOWED, ssl_context=client_ctx)
        page = await pages.fetch(f"https://pages.test:{tls.port}/pages/trees")
        assert "Shade from street trees" in page.text
        assert names == ["pages.test"]  # SNI carried the name, though the socket went to 127.0.0.2
        assert tls.requests[0].headers["host"] == f"pages.test:{tls.port}"
        # Same address, another name: the certificate (for pages.test) must not pass for it.
        with pytest.raises(FetchFailed, match="could not be reached.*certificate"):
            await pages.fetch(f"https://other.test:{tls.port}/pages/trees")
        assert len(tls.requests) == 1

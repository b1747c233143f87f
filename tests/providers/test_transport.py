"""The HTTP client under the streaming SDK clients (debates/providers/transport.py): a streamed
reply is read without a cancel scope per chunk (our own silence limit bounds each read), over plain
HTTP and over TLS. That the silence limit still holds mid-stream is test_openai_compat's
`test_hang_mid_stream_keeps_partial_text_and_does_not_retry`."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import ssl

import anyio
import httpcore2
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from debates.providers.transport import Backend
from testkit.fake_openai import Reply

from .test_openai_compat import MESSAGES, collect


@pytest.fixture
def scopes(monkeypatch):
    """How many times anyio's `fail_after` (the per-read scope httpcore takes) was entered."""
    entered = []
    fail_after = anyio.fail_after

    def counting(*args, **kwargs):
        entered.append(args)
        return fail_after(*args, **kwargs)

    monkeypatch.setattr(anyio, "fail_after", counting)
    return entered


async def test_a_streamed_reply_is_read_without_a_scope_per_chunk(server, make_client, scopes):
    text = "Each token its own chunk: " + " ".join(f"w{i}" for i in range(200))
    server.enqueue(Reply(text))
    stream = make_client().stream(MESSAGES, max_tokens=400)
    deltas = await collect(stream)
    assert "".join(deltas) == text and len(deltas) > 150
    # The connection and the request's writes keep their limits (a handful of scopes); the reads,
    # one per chunk, take none. httpcore's own backend enters one per read: more than 150 here.
    assert 1 <= len(scopes) <= 5, len(scopes)


def _certificate() -> tuple[bytes, bytes]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .sign(key, hashes.SHA256())
    )
    pem = cert.public_bytes(serialization.Encoding.PEM)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return pem, private


async def test_over_tls_the_reads_take_no_scope_either(server, tmp_path, scopes):
    """A TLS terminator on loopback in front of the fake server: the backend's TLS stream reads
    a whole streamed reply without a scope per chunk."""
    pem, private = _certificate()
    (tmp_path / "cert.pem").write_bytes(pem)
    (tmp_path / "key.pem").write_bytes(private)
    serving = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    serving.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")

    async def relay(reader, writer):
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", server.port)

        async def pipe(source, sink):
            while data := await source.read(65536):
                sink.write(data)
                await sink.drain()
            sink.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer), return_exceptions=True)

    terminator = await asyncio.start_server(relay, "127.0.0.1", 0, ssl=serving)
    port = terminator.sockets[0].getsockname()[1]
    text = "Over TLS, token by token: " + " ".join(f"t{i}" for i in range(120))
    server.enqueue(Reply(text))
    trusting = ssl.create_default_context(cadata=pem.decode())
    body = b'{"model": "fake-model", "stream": true, "messages": [{"role": "user", "content": "hi"}]}'
    try:
        async with httpcore2.AsyncConnectionPool(ssl_context=trusting, network_backend=Backend()) as pool:
            async with pool.stream(
                "POST",
                f"https://127.0.0.1:{port}/v1/chat/completions",
                headers={"content-type": "application/json", "authorization": "Bearer sk-test"},
                content=body,
            ) as response:
                assert response.status == 200
                raw = b"".join([chunk async for chunk in response.aiter_stream()])
    finally:
        terminator.close()
    streamed = raw.decode()
    assert streamed.count("data: ") > 100 and "[DONE]" in streamed
    assert "t119" in streamed
    assert len(scopes) <= 5, len(scopes)  # connecting and TLS's handshake; httpcore's own: over 100

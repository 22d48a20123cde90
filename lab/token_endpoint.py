"""The secured lab's OAuth identity provider: a token endpoint and a JWKS on loopback.

Brokers validate OAUTHBEARER tokens the way they would against any OIDC provider (RS256 signatures checked
against ``/jwks``, issuer, audience, expiry), and clients fetch tokens with the client-credentials grant
(``POST /token``, client id and secret in HTTP basic auth or the form), so librdkafka's and Java's own OIDC
clients run unmodified. A token's ``sub`` is the client id, which is the principal brokers see.

It runs as its own process (``python -m mm2ctl.lab.token_endpoint --dir LAB --port P``), started and stopped
with the lab like the JVMs. Client secrets are read from the lab's ``secrets/`` folder. Every token it issues
is appended to ``oauth/issued-tokens`` in the lab folder (0600), so tests can prove none leaked.
"""

from __future__ import annotations

import argparse
import base64
import hmac
import json
import secrets
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from mm2ctl.lab.secured import AUDIENCE, MM2CTL, OAUTH_CLIENT_SECRET, LabSecurity

TOKEN_LIFETIME_S = 3600
KEY_ID = "mm2ctl-lab"


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _int_b64(n: int) -> str:
    return _b64url(n.to_bytes((n.bit_length() + 7) // 8, "big"))


def issuer_of(port: int) -> str:
    return f"http://127.0.0.1:{port}"


class IdentityProvider:
    """Signs access tokens for the lab's clients; the HTTP layer is :class:`_Handler`."""

    def __init__(self, security: LabSecurity, issuer: str) -> None:
        key = serialization.load_pem_private_key(security.signing_key.read_bytes(), password=None)
        assert isinstance(key, rsa.RSAPrivateKey)
        self.key = key
        self.issuer = issuer
        self.security = security
        self.lock = threading.Lock()

    def clients(self) -> dict[str, str]:
        return {MM2CTL: (self.security.secrets_dir / OAUTH_CLIENT_SECRET / "client-secret").read_text()}

    def jwks(self) -> dict[str, Any]:
        numbers = self.key.public_key().public_numbers()
        return {
            "keys": [
                {
                    "kty": "RSA",
                    "use": "sig",
                    "alg": "RS256",
                    "kid": KEY_ID,
                    "n": _int_b64(numbers.n),
                    "e": _int_b64(numbers.e),
                }
            ]
        }

    def token(self, client_id: str, scope: str) -> str:
        now = int(time.time())
        header = {"alg": "RS256", "typ": "JWT", "kid": KEY_ID}
        claims = {
            "iss": self.issuer,
            "aud": AUDIENCE,
            "sub": client_id,
            "iat": now,
            "nbf": now,
            "exp": now + TOKEN_LIFETIME_S,
            "jti": secrets.token_hex(8),
            "scope": scope or "kafka",
        }
        signing_input = f"{_b64url(json.dumps(header).encode())}.{_b64url(json.dumps(claims).encode())}"
        signature = self.key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
        token = f"{signing_input}.{_b64url(signature)}"
        with self.lock, self.security.issued_tokens.open("a") as fh:
            fh.write(token + "\n")
        return token

    def authenticate(self, client_id: str, secret: str) -> bool:
        expected = self.clients().get(client_id)
        return expected is not None and hmac.compare_digest(expected, secret)


class _Handler(BaseHTTPRequestHandler):
    server: _TokenServer

    def log_message(self, format: str, *args: Any) -> None:
        pass  # requests carry credentials; the lab logs nothing of them

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.split("?")[0] == "/jwks":
            self._send(200, self.server.idp.jwks())
        else:
            self._send(404, {"error": "not_found"})

    def do_POST(self) -> None:
        if self.path.split("?")[0] != "/token":
            self._send(404, {"error": "not_found"})
            return
        length = int(self.headers.get("Content-Length") or 0)
        form = urllib.parse.parse_qs(self.rfile.read(length).decode())
        client_id = (form.get("client_id") or [""])[0]
        secret = (form.get("client_secret") or [""])[0]
        auth = self.headers.get("Authorization", "")
        if auth.lower().startswith("basic "):
            decoded = base64.b64decode(auth[6:]).decode()
            user, _, password = decoded.partition(":")
            client_id, secret = urllib.parse.unquote(user), urllib.parse.unquote(password)
        if (form.get("grant_type") or [""])[0] != "client_credentials":
            self._send(400, {"error": "unsupported_grant_type"})
            return
        if not self.server.idp.authenticate(client_id, secret):
            self._send(401, {"error": "invalid_client"})
            return
        scope = (form.get("scope") or [""])[0]
        token = self.server.idp.token(client_id, scope)
        self._send(200, {"access_token": token, "token_type": "Bearer", "expires_in": TOKEN_LIFETIME_S})


class _TokenServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], idp: IdentityProvider) -> None:
        super().__init__(address, _Handler)
        self.idp = idp


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mm2ctl.lab.token_endpoint", description=__doc__)
    parser.add_argument("--dir", required=True, help="the lab folder")
    parser.add_argument("--port", required=True, type=int)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    idp = IdentityProvider(LabSecurity(args.dir), issuer_of(args.port))
    with _TokenServer(("127.0.0.1", args.port), idp) as server:
        server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())

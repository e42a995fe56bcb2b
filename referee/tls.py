"""What to change when a gRPC connection could not be made over TLS, or for want of it.

gRPC says only ``Socket closed`` when a plaintext client meets a TLS port, and an OpenSSL code when a TLS
client meets a plaintext port, a certificate of another CA, an expired one or one made out to another
name. :func:`tls_hint` turns those into one hint for the person who runs the client (a bot's author, a
competitor); ``sdk.run`` (referee and lobby) and ``arena submit`` append it to their last line.
"""

from __future__ import annotations

#: (texts of gRPC's message, any of which means the case; the hint with ``{address}`` and ``{trusted}``),
#: for a client that dialled over TLS, in order (an expired certificate also says CERTIFICATE_VERIFY_FAILED).
_TLS_CASES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("WRONG_VERSION_NUMBER", "wrong version number"), "{address} does not speak TLS: leave out --tls-ca"),
    (("certificate has expired",), "the certificate {address} serves has expired: ask its host to renew it"),
    (("Hostname Verification Check failed", "is not in peer certificate"),
     "the certificate {address} serves is not made out to this address: dial a name or address it names "
     "(ask its host)"),
    (("CERTIFICATE_VERIFY_FAILED", "certificate verify failed"),
     "the certificate of {address} is not the one of {trusted}: ask the host for theirs"),
)


def tls_hint(details: str, address: str, trusted: str | None) -> str:
    """The hint for gRPC's message ``details`` of a connection to ``address`` that never came up, with a
    leading space and in parentheses, or ``""`` when the message says nothing about TLS. ``trusted`` says
    how the client was given the certificate it trusts (e.g. ``"--tls-ca ca.pem"``), ``None`` for a
    plaintext client."""
    if trusted is None:
        if "Socket closed" in details:
            return f" (does {address} serve TLS? then pass --tls-ca with the certificate the host gives out)"
        return ""
    for texts, hint in _TLS_CASES:
        if any(t in details for t in texts):
            return " (" + hint.format(address=address, trusted=trusted) + ")"
    return ""

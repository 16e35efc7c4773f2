"""The server as an OAuth protected resource (RFC 9728): its metadata document, where it
is published, and the challenge a 401 carries (pure).

The document names the resource (the public `/mcp` URL), the authorization server
that issues its tokens, and the scopes a client should ask for (`scopes_supported`,
`[server] oauth_scopes`: `openid` by default; a client told none asks for every scope the
authorization server has). It is published at
`/.well-known/oauth-protected-resource` with the resource's path after it (`…/mcp`,
where the `WWW-Authenticate` challenge points MCP clients) and without (the root form
clients fall back to).
"""

from __future__ import annotations

from dataclasses import dataclass

from mcp.server.auth.routes import build_resource_metadata_url
from mcp.shared.auth import ProtectedResourceMetadata
from pydantic import AnyHttpUrl

WELL_KNOWN = "/.well-known/oauth-protected-resource"


@dataclass(frozen=True)
class ProtectedResource:
    """The resource (its public `/mcp` URL), the authorization server of its tokens, and
    the scopes clients ask for."""

    resource: str
    issuer: str
    scopes: tuple[str, ...] = ()

    @property
    def metadata_url(self) -> str:
        """Where the metadata is published for this resource (RFC 9728 section 3.1)."""
        return str(build_resource_metadata_url(AnyHttpUrl(self.resource)))

    def document(self) -> bytes:
        """The metadata document, JSON."""
        # Validated from strings: the model keeps an issuer's empty path as it is, and
        # clients compare issuers as strings.
        metadata = ProtectedResourceMetadata.model_validate(
            {"resource": self.resource, "authorization_servers": [self.issuer],
             "scopes_supported": list(self.scopes), "resource_name": "freshline"})
        return metadata.model_dump_json(exclude_none=True).encode()

    def challenge(self, error: str | None = None) -> bytes:
        """The `WWW-Authenticate` value of a 401: where the metadata is, and the RFC 6750
        error when a token was presented."""
        value = f'Bearer resource_metadata="{self.metadata_url}"'
        if error is not None:
            value += f', error="{error}"'
        return value.encode()


def is_metadata_path(path: str) -> bool:
    """Whether a request's path asks for the metadata (either form)."""
    return path == WELL_KNOWN or path.startswith(WELL_KNOWN + "/")

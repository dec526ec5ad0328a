"""HTTP/1.1 on the socket layer (thesis 5.7): a server stage, requests, responses, WSGI and
ASGI."""

from . import response as responses
from .answers import ReadyAnswer
from .asgi import AsgiHandler, is_asgi, mount_asgi
from .asgi2 import from_asgi2, is_asgi2
from .body import BodyError, BodyReader
from .forwarded import Proxies
from .lifespan import LifespanFailed
from .limits import Limits
from .protocol import Logged, ServerProtocol
from .request import ClientDisconnected, HttpRequest
from .response import FileBody, Prepared, Response, StreamBody, prepare_head
from .server import Dispatch, serve
from .wsgi import WsgiHandler, mount

__all__ = [
    "AsgiHandler",
    "BodyError",
    "BodyReader",
    "ClientDisconnected",
    "Dispatch",
    "FileBody",
    "HttpRequest",
    "LifespanFailed",
    "Limits",
    "Logged",
    "Prepared",
    "Proxies",
    "ReadyAnswer",
    "Response",
    "ServerProtocol",
    "StreamBody",
    "WsgiHandler",
    "from_asgi2",
    "is_asgi",
    "is_asgi2",
    "mount",
    "mount_asgi",
    "prepare_head",
    "responses",
    "serve",
]

"""HTTP/1.1 on the socket layer (thesis 5.7): a server stage, requests, responses, WSGI."""

from . import response as responses
from .answers import ReadyAnswer
from .body import BodyError, BodyReader
from .limits import Limits
from .protocol import Logged, ServerProtocol
from .request import HttpRequest
from .response import FileBody, Prepared, Response, StreamBody, prepare_head
from .server import serve
from .wsgi import WsgiHandler, mount

__all__ = [
    "BodyError",
    "BodyReader",
    "FileBody",
    "HttpRequest",
    "Limits",
    "Logged",
    "Prepared",
    "ReadyAnswer",
    "Response",
    "ServerProtocol",
    "StreamBody",
    "WsgiHandler",
    "mount",
    "prepare_head",
    "responses",
    "serve",
]

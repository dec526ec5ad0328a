"""HTTP/1.1 on the socket layer (thesis 5.7): a server stage, requests, responses."""

from . import response as responses
from .request import HttpRequest
from .response import FileBody, Response, StreamBody, date_line, status_line
from .server import HttpConnection, HttpServer, Limits, serve
from .wsgi import WsgiHandler, mount

__all__ = [
    "FileBody",
    "HttpConnection",
    "HttpRequest",
    "HttpServer",
    "Limits",
    "Response",
    "StreamBody",
    "WsgiHandler",
    "date_line",
    "mount",
    "responses",
    "serve",
    "status_line",
]

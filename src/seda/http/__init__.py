"""HTTP/1.1 on the socket layer (thesis 5.7): a server stage, requests, responses."""

from . import response as responses
from .answers import ReadyAnswer
from .request import HttpRequest
from .response import FileBody, Prepared, Response, StreamBody, date_line, prepare_head, status_line
from .server import HttpConnection, HttpServer, Limits, Logged, serve
from .wsgi import WsgiHandler, mount

__all__ = [
    "FileBody",
    "HttpConnection",
    "HttpRequest",
    "HttpServer",
    "Limits",
    "Logged",
    "Prepared",
    "ReadyAnswer",
    "Response",
    "StreamBody",
    "WsgiHandler",
    "date_line",
    "mount",
    "prepare_head",
    "responses",
    "serve",
    "status_line",
]

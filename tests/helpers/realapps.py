"""Small Flask, Django and Falcon applications doing what real ones do with bodies, files and
streams, for Haboob's end-to-end tests. Each endpoint answers with what it saw. The Django
project serves through its ASGI handler too (``django_asgi``), with async views of its own."""

from __future__ import annotations

import hashlib
import json
import threading

import django
import falcon
import flask
from django.conf import settings

WAIT = 10.0
# Streaming endpoints send one piece, then wait for the test to say it has received it.
gates: dict[str, threading.Event] = {}
released: dict[str, bool] = {}


def digest(data: bytes) -> dict:
    return {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def _waiting_stream(name: str, first: bytes, second: bytes):
    gate = gates.setdefault(name, threading.Event())
    yield first
    released[name] = gate.wait(WAIT)
    yield second


# -- Flask ----------------------------------------------------------------------------------------

flask_app = flask.Flask("realapps")


@flask_app.post("/json")
def flask_json():
    return {"items": len(flask.request.get_json())}


@flask_app.post("/data")
def flask_data():
    return digest(flask.request.get_data())


@flask_app.post("/lines")
def flask_lines():
    lines = sum(1 for _ in flask.request.stream)
    return {"lines": lines}


@flask_app.post("/partial")
def flask_partial():
    return {"read": len(flask.request.stream.read(1000))}


@flask_app.get("/big")
def flask_big():
    return flask.Response(bytes(range(256)) * (5 * 2**20 // 256),
                          mimetype="application/octet-stream")


@flask_app.get("/stream")
def flask_stream():
    return flask.Response(_waiting_stream("flask", b"data: 1\n\n", b"data: 2\n\n"),
                          mimetype="text/event-stream")


@flask_app.get("/sendfile")
def flask_sendfile():
    return flask.send_file(flask.request.args["path"], mimetype="application/octet-stream")


@flask_app.get("/secure")
def flask_secure():
    return {"secure": flask.request.is_secure,
            "url": flask.url_for("flask_secure", _external=True)}


@flask_app.get("/reason")
def flask_reason():
    return flask.Response(b"custom", status="299 Custom Thing")


@flask_app.get("/headers")
def flask_headers():
    return dict(flask.request.headers)


# -- Django ---------------------------------------------------------------------------------------

if not settings.configured:
    settings.configure(
        DEBUG=False, SECRET_KEY="test only", ALLOWED_HOSTS=["*"], ROOT_URLCONF=__name__,
        MIDDLEWARE=["django.middleware.common.CommonMiddleware"],
        DATA_UPLOAD_MAX_MEMORY_SIZE=None, USE_TZ=True)
    django.setup()

from django.core.asgi import get_asgi_application  # noqa: E402  (after settings)
from django.core.wsgi import get_wsgi_application  # noqa: E402
from django.http import (  # noqa: E402
    FileResponse,
    HttpResponse,
    JsonResponse,
    StreamingHttpResponse,
)
from django.urls import path  # noqa: E402
from django.views.decorators.csrf import csrf_exempt  # noqa: E402


@csrf_exempt
def django_body(request):
    return JsonResponse(digest(request.body))


@csrf_exempt
def django_form(request):
    return JsonResponse({"fields": {k: len(v) for k, v in request.POST.items()},
                         "files": {k: f.size for k, f in request.FILES.items()}})


def django_big(request):
    return HttpResponse(b"d" * (5 * 2**20), content_type="application/octet-stream")


def django_stream(request):
    return StreamingHttpResponse(_waiting_stream("django", b"data: 1\n\n", b"data: 2\n\n"),
                                 content_type="text/event-stream")


def django_file(request):
    return FileResponse(open(request.GET["path"], "rb"))


async def django_where(request):
    return JsonResponse({"path": request.path, "script_name": request.META["SCRIPT_NAME"],
                         "path_info": request.path_info, "query": request.GET.get("q")})


async def django_async_body(request):
    return JsonResponse(digest(request.body))


async def django_async_stream(request):
    async def pieces():
        for i in range(3):
            yield f"piece {i}\n"
    return StreamingHttpResponse(pieces(), content_type="text/plain")


urlpatterns = [path("body", django_body), path("form", django_form), path("big", django_big),
               path("stream", django_stream), path("file", django_file),
               path("async/where", django_where), path("async/body", django_async_body),
               path("async/stream", django_async_stream)]
django_app = get_wsgi_application()


def django_asgi():
    """The same project through Django's ASGI handler (a new one per call)."""
    return get_asgi_application()


# -- Falcon ---------------------------------------------------------------------------------------

class _Bounded:
    def on_post(self, req, resp):
        resp.text = json.dumps(digest(req.bounded_stream.read()))


falcon_app = falcon.App()
falcon_app.add_route("/bounded", _Bounded())

APPS = [("/flask", flask_app), ("/django", django_app), ("/falcon", falcon_app)]

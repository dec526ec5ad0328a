"""A small WSGI application for ``make run``: greets, and shows what it received."""


def app(environ, start_response):
    name = environ.get("PATH_INFO", "/").strip("/") or "world"
    body = f"Hello, {name}! ({environ['REQUEST_METHOD']} via Haboob's WSGI stage)\n".encode()
    start_response("200 OK", [("Content-Type", "text/plain; charset=utf-8"),
                              ("Content-Length", str(len(body)))])
    return [body]

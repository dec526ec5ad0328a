"""Baseline web servers for the web-server study (thesis 6.1.3-6.1.4): the designs Haboob was
measured against, small enough to read in one sitting, all giving the same answers.

- ``thread_per_conn``: a new thread for every connection, no bound.
- ``bounded_pool``: 150 workers that each take one connection at a time (Apache 1.3's model);
  when all are busy nobody accepts and new connections wait in the kernel's backlog.
- ``sped``: one process, one event loop, blocking file reads inline (Flash without helpers).
- ``amped``: the event loop plus helper processes that bring files into memory (Flash).
- ``apps``: a static-file ASGI and WSGI application for uvicorn, gunicorn and waitress.

Each of the first four runs as ``python -m benchmarks.baselines.NAME --root DIR --bind
HOST:PORT`` and prints ``ready http://HOST:PORT/`` once it accepts connections.
"""

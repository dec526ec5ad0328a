"""What the tests share besides fixtures, imported by name (``from tests.helpers.recorder import
Recorder``); conftest.py files hold only fixtures, so no test imports a conftest."""

WAIT = 10.0   # generous upper bound for anything a test waits on; normally milliseconds
